package conformance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/statewright/statewright/clients/go/statewright"
	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const (
	// untilInterval is how often RunWorker reads the instance while its worker runs.
	untilInterval = 100 * time.Millisecond
	// workerConcurrency is small: a scenario's instance has one task at a time.
	workerConcurrency = 4
	// runnerFailureType is error.type of a task whose handler the scenario got wrong (a
	// ${input.KEY} the task's input lacks); non-retryable, so that the instance ends soon.
	runnerFailureType = "CONFORMANCE_RUNNER"
)

// handlerLog records what RunWorker's handlers did: how many tasks each queue's handler
// ran, and the first problem one of them had with the scenario.
type handlerLog struct {
	mu      sync.Mutex
	counts  map[string]int
	problem error
}

func (l *handlerLog) ran(queue string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[queue]++
}

func (l *handlerLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.problem == nil {
		l.problem = err
	}
}

func (l *handlerLog) snapshot() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	queues := make([]string, 0, len(l.counts))
	for q := range l.counts {
		queues = append(queues, q)
	}
	sort.Strings(queues)
	parts := make([]string, len(queues))
	for i, q := range queues {
		parts[i] = fmt.Sprintf("%s %d", q, l.counts[q])
	}
	if len(parts) == 0 {
		return "none", l.problem
	}
	return strings.Join(parts, ", "), l.problem
}

// runWorker runs the client's own Worker with the step's handlers until the instance
// until.name is terminal, shuts the worker down, and checks the final instance and its
// tasks.
func (r *Runner) runWorker(ctx context.Context, step Step, e *expectation) (string, error) {
	if r.Tasks == nil {
		return "", errors.New("RunWorker needs a TaskService client (Runner.Tasks)")
	}
	timeout, err := step.timeout()
	if err != nil {
		return "", err
	}
	name, err := r.expandString(step.Until.Name)
	if err != nil {
		return "", fmt.Errorf("until.name: %w", err)
	}

	log := &handlerLog{counts: map[string]int{}}
	worker := statewright.NewWorker(r.Tasks, statewright.WorkerOptions{
		Concurrency: workerConcurrency,
		Identity:    "conformance-go-" + r.RunID,
		Logger:      r.workerLog(),
	})
	queues := make([]string, 0, len(step.Handlers))
	for queue := range step.Handlers {
		queues = append(queues, queue)
	}
	sort.Strings(queues)
	for _, queue := range queues {
		h, err := r.handler(queue, step.Handlers[queue], log)
		if err != nil {
			return "", fmt.Errorf("handler %s: %w", queue, err)
		}
		if err := register(worker, queue, h); err != nil {
			return "", err
		}
	}

	workerCtx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	stopped := make(chan error, 1)
	go func() { stopped <- worker.Run(workerCtx) }()
	waitErr := r.awaitTerminal(ctx, name, timeout, stopped)
	stopWorker()
	if !errors.Is(waitErr, errWorkerStopped) {
		// Run returns once its handlers have reported, or its grace period is over.
		if err := <-stopped; err != nil && waitErr == nil {
			waitErr = fmt.Errorf("worker: %w", err)
		}
	}
	handled, problem := log.snapshot()
	if problem != nil {
		return "", problem
	}
	if waitErr != nil {
		return "", waitErr
	}

	resp, err := r.Client.GetWorkflow(ctx, &statewrightv1.GetWorkflowRequest{Name: name})
	if err != nil {
		return "", fmt.Errorf("GetWorkflow %s after the worker stopped: %w", name, describeError(err))
	}
	summary := checkWorkflow(e, resp.GetWorkflow())
	if _, want := e.m["tasks"]; want {
		tasks, err := r.listTasks(ctx, name)
		if err != nil {
			return "", err
		}
		checkTasks(e, "tasks", tasks)
		summary += fmt.Sprintf("; tasks %s", describeTasks(tasks))
	}
	return summary + "; handled " + handled, nil
}

func (r *Runner) workerLog() *slog.Logger {
	if r.WorkerLog != nil {
		return r.WorkerLog
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// register turns Register's panic on a queue name the server would refuse into an error.
func register(w *statewright.Worker, queue string, h statewright.Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("handler %s: %v", queue, v)
		}
	}()
	w.Register(queue, h)
	return nil
}

// expandString expands a scenario string that must stay a string.
func (r *Runner) expandString(str string) (string, error) {
	v, err := r.scope.expand(str)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%q: expected a string, found %v", str, v)
	}
	return s, nil
}

// handler builds the worker handler of one queue. The scenario's references are expanded
// now; ${input.KEY} is expanded for each task, from its input.
func (r *Runner) handler(queue string, spec HandlerSpec, log *handlerLog) (statewright.Handler, error) {
	stage := &scope{vars: r.scope.vars, saved: r.scope.saved, deferred: map[string]bool{"input": true}}
	template := map[string]any{"result": spec.Result}
	if spec.Fail != nil {
		template = map[string]any{"type": spec.Fail.Type, "message": spec.Fail.Message}
	}
	staged, err := stage.expand(template)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, task *statewright.Task) (map[string]any, error) {
		log.ran(queue)
		perTask := &scope{saved: map[string]any{"input": task.Input}}
		v, err := perTask.expand(staged)
		if err != nil {
			err = fmt.Errorf("handler %s, task %s: %w", queue, task.Name, err)
			log.fail(err)
			return nil, statewright.TaskFailure{Type: runnerFailureType, Message: err.Error(), NonRetryable: true}
		}
		out := v.(map[string]any)
		if spec.Fail != nil {
			return nil, statewright.TaskFailure{
				Type:         fmt.Sprint(out["type"]),
				Message:      fmt.Sprint(out["message"]),
				NonRetryable: spec.Fail.NonRetryable,
			}
		}
		return out["result"].(map[string]any), nil
	}, nil
}

var errWorkerStopped = errors.New("the worker stopped on its own")

// awaitTerminal reads the instance every untilInterval until its status is terminal,
// timeout passes, or the worker stops (its error is taken from stopped).
func (r *Runner) awaitTerminal(ctx context.Context, name string, timeout time.Duration, stopped <-chan error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(untilInterval)
	defer tick.Stop()
	reads := 0
	for {
		resp, err := r.Client.GetWorkflow(ctx, &statewrightv1.GetWorkflowRequest{Name: name})
		if err != nil {
			return fmt.Errorf("GetWorkflow %s: %w", name, describeError(err))
		}
		reads++
		wf := resp.GetWorkflow()
		switch wf.GetStatus() {
		case statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED,
			statewrightv1.WorkflowStatus_WORKFLOW_STATUS_FAILED,
			statewrightv1.WorkflowStatus_WORKFLOW_STATUS_CANCELLED:
			return nil
		}
		select {
		case <-tick.C:
		case err := <-stopped:
			return fmt.Errorf("%w (%v) while %s was %s", errWorkerStopped, err, name, describeWorkflow(wf))
		case <-deadline.C:
			return fmt.Errorf("%s still %s after %s (%d reads)", name, describeWorkflow(wf), timeout, reads)
		case <-ctx.Done():
			return fmt.Errorf("%s still %s when the run's deadline came: %w", name, describeWorkflow(wf), ctx.Err())
		}
	}
}

func describeWorkflow(wf *statewrightv1.Workflow) string {
	return fmt.Sprintf("%s in %s at revision %d",
		strings.TrimPrefix(wf.GetStatus().String(), "WORKFLOW_STATUS_"), wf.GetState(), wf.GetRevision())
}

// listTasks reads every page of ListTasks(workflow=name).
func (r *Runner) listTasks(ctx context.Context, name string) ([]*statewrightv1.Task, error) {
	req := &statewrightv1.ListTasksRequest{Workflow: name}
	var tasks []*statewrightv1.Task
	for page := 1; ; page++ {
		if page > maxPages {
			return nil, fmt.Errorf("ListTasks still paging after %d pages", maxPages)
		}
		resp, err := r.Tasks.ListTasks(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("ListTasks page %d: %w", page, describeError(err))
		}
		tasks = append(tasks, resp.GetTasks()...)
		if resp.GetNextPageToken() == "" {
			return tasks, nil
		}
		req.PageToken = resp.GetNextPageToken()
	}
}

// checkTasks compares the tasks with the expected list under key, element by element,
// and their number exactly.
func checkTasks(e *expectation, key string, got []*statewrightv1.Task) {
	want, ok := e.take(key)
	if !ok {
		return
	}
	list, isList := want.([]any)
	if !isList {
		e.failf("%s: expected a list in the scenario, found %v", key, want)
		return
	}
	if len(list) != len(got) {
		e.failf("%s: expected %d tasks, got %d (%s)", key, len(list), len(got), describeTasks(got))
	}
	for i := range min(len(list), len(got)) {
		m, isMap := list[i].(map[string]any)
		if !isMap {
			e.failf("%s[%d]: expected a map in the scenario, found %v", key, i, list[i])
			continue
		}
		te := newExpectation(m)
		checkTask(te, got[i])
		e.merge(fmt.Sprintf("%s[%d]", key, i), te)
	}
}

func checkTask(e *expectation, t *statewrightv1.Task) {
	e.checkString("state", t.GetState())
	e.checkString("queue", t.GetQueue())
	e.checkEnum("status", "TASK_STATUS_", t.GetStatus().String())
	e.checkInt("attempt", int64(t.GetAttempt()))
}

func describeTasks(tasks []*statewrightv1.Task) string {
	if len(tasks) == 0 {
		return "none"
	}
	parts := make([]string, len(tasks))
	for i, t := range tasks {
		parts[i] = fmt.Sprintf("%s/%s %s attempt %d", t.GetState(), t.GetQueue(),
			strings.TrimPrefix(t.GetStatus().String(), "TASK_STATUS_"), t.GetAttempt())
	}
	return strings.Join(parts, ", ")
}
