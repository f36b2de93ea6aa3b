package statewright

import (
	"fmt"
	"sort"
	"strings"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const (
	workflowStatusPrefix = "WORKFLOW_STATUS_"
	taskStatusPrefix     = "TASK_STATUS_"
)

// ParseWorkflowStatus returns the status text names, in either spelling and any case: the
// short form the CLI and the Python and TypeScript clients print ("WAITING") or the
// proto's name ("WORKFLOW_STATUS_WAITING"), as the HTTP API's ?status= accepts both.
func ParseWorkflowStatus(text string) (statewrightv1.WorkflowStatus, error) {
	number, err := parseEnum(text, workflowStatusPrefix, statewrightv1.WorkflowStatus_value, "workflow status")
	return statewrightv1.WorkflowStatus(number), err
}

// ParseTaskStatus is ParseWorkflowStatus for task statuses ("LEASED" or
// "TASK_STATUS_LEASED").
func ParseTaskStatus(text string) (statewrightv1.TaskStatus, error) {
	number, err := parseEnum(text, taskStatusPrefix, statewrightv1.TaskStatus_value, "task status")
	return statewrightv1.TaskStatus(number), err
}

// StatusName is a workflow status in its short form, "WAITING" for
// WORKFLOW_STATUS_WAITING: what the other clients and the CLI print.
func StatusName(status statewrightv1.WorkflowStatus) string {
	return strings.TrimPrefix(status.String(), workflowStatusPrefix)
}

func parseEnum(text, prefix string, values map[string]int32, what string) (int32, error) {
	name := strings.ToUpper(strings.TrimSpace(text))
	if number, ok := values[name]; ok {
		return number, nil
	}
	if number, ok := values[prefix+name]; ok && !strings.HasPrefix(name, prefix) {
		return number, nil
	}
	var choices []string
	for known, number := range values {
		if number != 0 {
			choices = append(choices, strings.TrimPrefix(known, prefix))
		}
	}
	sort.Slice(choices, func(i, j int) bool { return values[prefix+choices[i]] < values[prefix+choices[j]] })
	return 0, fmt.Errorf("statewright: %q is not a %s: one of %s (any case, with or without the %s prefix)",
		text, what, strings.Join(choices, ", "), prefix)
}
