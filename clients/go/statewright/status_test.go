package statewright

import (
	"strings"
	"testing"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

func TestParseWorkflowStatusTakesEitherSpelling(t *testing.T) {
	for _, text := range []string{"WAITING", "waiting", " Waiting ", "WORKFLOW_STATUS_WAITING", "workflow_status_waiting"} {
		got, err := ParseWorkflowStatus(text)
		if err != nil || got != statewrightv1.WorkflowStatus_WORKFLOW_STATUS_WAITING {
			t.Errorf("ParseWorkflowStatus(%q) = %v, %v", text, got, err)
		}
	}
	_, err := ParseWorkflowStatus("sleeping")
	if err == nil || !strings.Contains(err.Error(), "one of RUNNING, WAITING, COMPLETED, FAILED, CANCELLED") {
		t.Errorf("an unknown status: %v", err)
	}
	if _, err := ParseWorkflowStatus("WORKFLOW_STATUS_WORKFLOW_STATUS_WAITING"); err == nil {
		t.Error("a doubled prefix is not a status")
	}
	if name := StatusName(statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED); name != "COMPLETED" {
		t.Errorf("StatusName = %q", name)
	}
}

func TestParseTaskStatusTakesEitherSpelling(t *testing.T) {
	for _, text := range []string{"TIMED_OUT", "timed_out", "TASK_STATUS_TIMED_OUT"} {
		got, err := ParseTaskStatus(text)
		if err != nil || got != statewrightv1.TaskStatus_TASK_STATUS_TIMED_OUT {
			t.Errorf("ParseTaskStatus(%q) = %v, %v", text, got, err)
		}
	}
	if _, err := ParseTaskStatus("DONE"); err == nil || !strings.Contains(err.Error(), "task status") {
		t.Errorf("an unknown task status: %v", err)
	}
}
