package main

// The tasks scenario: one worker process of bench/task_bench.py, in Go. It does what the
// Python worker there does (`work`), so that the task benchmark can tell the service's
// figures from the Python worker's:
//
//	goload --scenario tasks --target A[,B...] --task-window BEGIN,END,STOP --pollers 4 \
//	    [--task-queue bench.steps] [--task-definition four-tasks]
//
// Each poller polls one target (poller p the target p mod the targets) for up to 16 tasks,
// completes every task it gets at once with a request id, and, when a completion ends its
// instance, starts a new one through the same target until STOP (a closed loop of
// instances in flight). With --task-fail-first, each task's first attempt is failed
// instead (retried at once, then completed): the FailTask path under the same load.
// Completions in [BEGIN, END) (Unix seconds) are counted; the report is task_bench.py's
// worker report: steps, failures, completed_workflows, errors, and samples of
// schedule-to-start and end-to-end latency in seconds.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const taskSample = 20_000 // latencies kept, as the Python worker keeps

type taskWindow struct{ begin, end, stop time.Time }

func parseTaskWindow(s string) (taskWindow, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return taskWindow{}, fmt.Errorf("--task-window needs BEGIN,END,STOP (Unix seconds); got %q", s)
	}
	var at [3]time.Time
	for i, part := range parts {
		v, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return taskWindow{}, fmt.Errorf("--task-window: %v", err)
		}
		at[i] = time.Unix(0, int64(v*1e9))
	}
	if !at[0].Before(at[1]) || at[2].Before(at[1]) {
		return taskWindow{}, fmt.Errorf("--task-window needs BEGIN < END <= STOP; got %q", s)
	}
	return taskWindow{at[0], at[1], at[2]}, nil
}

type taskReport struct {
	Steps              int       `json:"steps"`
	Failures           int       `json:"failures"`
	CompletedWorkflows int       `json:"completed_workflows"`
	Errors             int       `json:"errors"`
	ToStart            []float64 `json:"to_start"`
	EndToEnd           []float64 `json:"end_to_end"`
}

type taskRun struct {
	p      plan
	window taskWindow
	tasks  []statewrightv1.TaskServiceClient
	flows  []statewrightv1.WorkflowServiceClient
	mu     sync.Mutex
	rep    taskReport
}

func (r *taskRun) in(t time.Time) bool { return !t.Before(r.window.begin) && t.Before(r.window.end) }

func (r *taskRun) fail(ctx context.Context, n int, task *statewrightv1.Task) {
	received := time.Now()
	call, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := r.tasks[n].FailTask(call, &statewrightv1.FailTaskRequest{
		Name: task.GetName(), LeaseToken: task.GetLeaseToken(), RequestId: task.GetName() + "#f",
		Error:      &statewrightv1.TaskError{Type: "BENCH", Message: "the first attempt fails"},
		RetryDelay: durationpb.New(0),
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && r.in(received) {
		r.rep.Errors++
	} else if err == nil && r.in(time.Now()) {
		r.rep.Failures++
	}
}

func (r *taskRun) complete(ctx context.Context, n int, task *statewrightv1.Task) {
	if r.p.taskFailFirst && task.GetAttempt() == 1 {
		r.fail(ctx, n, task)
		return
	}
	received := time.Now()
	call, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	answer, err := r.tasks[n].CompleteTask(call, &statewrightv1.CompleteTaskRequest{
		Name: task.GetName(), LeaseToken: task.GetLeaseToken(), RequestId: task.GetName() + "#c",
	})
	now := time.Now()
	r.mu.Lock()
	if err != nil {
		if r.in(received) {
			r.rep.Errors++
		}
		r.mu.Unlock()
		return
	}
	if r.in(now) {
		r.rep.Steps++
		if len(r.rep.ToStart) < taskSample {
			r.rep.ToStart = append(r.rep.ToStart, received.Sub(task.GetScheduleTime().AsTime()).Seconds())
		}
	}
	workflow := answer.GetWorkflow()
	ended := workflow.GetStatus() == statewrightv1.WorkflowStatus_WORKFLOW_STATUS_COMPLETED
	if ended && r.in(now) {
		r.rep.CompletedWorkflows++
		if len(r.rep.EndToEnd) < taskSample {
			r.rep.EndToEnd = append(r.rep.EndToEnd, now.Sub(workflow.GetCreateTime().AsTime()).Seconds())
		}
	}
	r.mu.Unlock()
	if ended && now.Before(r.window.stop) {
		start, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		// A start that fails leaves one instance fewer in flight, as in the Python worker.
		_, _ = r.flows[n].StartWorkflow(start, &statewrightv1.StartWorkflowRequest{Definition: r.p.taskDefinition, Version: 1})
	}
}

func (r *taskRun) poller(ctx context.Context, index int) {
	n := index % len(r.tasks)
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(index)))
	request := &statewrightv1.PollTasksRequest{
		Queue:    r.p.taskQueue,
		Identity: fmt.Sprintf("bench-go-%d-%d", os.Getpid(), index),
		MaxTasks: 16,
		Wait:     durationpb.New(time.Second),
	}
	for time.Now().Before(r.window.stop) {
		call, cancel := context.WithTimeout(ctx, 10*time.Second)
		polled, err := r.tasks[n].PollTasks(call, request)
		cancel()
		if err != nil {
			time.Sleep(time.Duration(50+rng.IntN(50)) * time.Millisecond)
			continue
		}
		var batch sync.WaitGroup
		for _, task := range polled.GetTasks() {
			batch.Add(1)
			go func() {
				defer batch.Done()
				r.complete(ctx, n, task)
			}()
		}
		batch.Wait()
	}
}

func runTasks(p plan) (*taskReport, error) {
	window, err := parseTaskWindow(p.taskWindow)
	if err != nil {
		return nil, err
	}
	// One connection per target: the pollers of a target share it, as the Python
	// worker's share its one channel per target.
	p.channels = len(p.targets)
	conns, err := connect(p)
	if err != nil {
		return nil, err
	}
	defer closeAll(conns)
	r := &taskRun{p: p, window: window}
	for _, conn := range conns {
		r.tasks = append(r.tasks, statewrightv1.NewTaskServiceClient(conn))
		r.flows = append(r.flows, statewrightv1.NewWorkflowServiceClient(conn))
	}
	var pollers sync.WaitGroup
	for i := 0; i < p.pollers; i++ {
		pollers.Add(1)
		go func() {
			defer pollers.Done()
			r.poller(context.Background(), i)
		}()
	}
	pollers.Wait()
	if r.rep.ToStart == nil {
		r.rep.ToStart = []float64{}
	}
	if r.rep.EndToEnd == nil {
		r.rep.EndToEnd = []float64{}
	}
	return &r.rep, nil
}
