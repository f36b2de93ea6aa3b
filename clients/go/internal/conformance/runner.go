package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

// maxPages bounds ListWorkflows paging, so that a server whose page tokens never end
// fails the step instead of looping forever.
const maxPages = 10000

// Runner executes a scenario. Set Client, Tasks (for RunWorker steps), Out and RunID;
// WatchTimeout bounds how long a watch step waits for a stream's first message and
// AwaitWatch for the stream's end. WorkerLog receives the log of RunWorker's workers; nil
// means warnings and errors on standard error.
type Runner struct {
	Client       statewrightv1.WorkflowServiceClient
	Tasks        statewrightv1.TaskServiceClient
	Out          io.Writer
	RunID        string
	WatchTimeout time.Duration
	WorkerLog    *slog.Logger

	scope   scope
	watches map[string]*watchStream
}

// Result counts the steps: they run in order and stop at the first failure, so every
// step after it is counted as skipped.
type Result struct {
	Passed, Failed, Skipped int
}

// Run executes every step in order, printing one line per step and a summary line.
// It returns an error describing the first failed step, if any.
func (r *Runner) Run(ctx context.Context, sc *Scenario) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends watch streams still open
	if r.WatchTimeout == 0 {
		r.WatchTimeout = 30 * time.Second
	}
	r.scope = scope{vars: map[string]any{"run": r.RunID}, saved: map[string]any{}}
	r.watches = map[string]*watchStream{}

	var res Result
	var failure error
	for _, step := range sc.Steps {
		if failure != nil {
			res.Skipped++
			fmt.Fprintf(r.Out, "SKIP %s\n", step.ID)
			continue
		}
		summary, err := r.runStep(ctx, step)
		if err != nil {
			res.Failed++
			failure = fmt.Errorf("step %s (%s): %w", step.ID, step.Op, err)
			fmt.Fprintf(r.Out, "FAIL %s (%s): %v\n", step.ID, step.Op, err)
			continue
		}
		res.Passed++
		fmt.Fprintf(r.Out, "PASS %s (%s): %s\n", step.ID, step.Op, summary)
	}
	line := fmt.Sprintf("conformance: %d passed, %d failed", res.Passed, res.Failed)
	if res.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", res.Skipped)
	}
	fmt.Fprintln(r.Out, line)
	return res, failure
}

func (r *Runner) runStep(ctx context.Context, step Step) (string, error) {
	repeat := max(step.Repeat, 1)
	var summaries []string
	for i := range repeat {
		if step.Repeat > 0 {
			r.scope.vars["i"] = i
		}
		summary, err := r.runOnce(ctx, step)
		delete(r.scope.vars, "i")
		if err != nil {
			if step.Repeat > 0 {
				return "", fmt.Errorf("repeat %d: %w", i, err)
			}
			return "", err
		}
		summaries = append(summaries, summary)
	}
	return strings.Join(summaries, " | "), nil
}

func (r *Runner) runOnce(ctx context.Context, step Step) (string, error) {
	expanded, err := r.scope.expand(step.Expect)
	if err != nil {
		return "", err
	}
	expectMap, _ := expanded.(map[string]any)
	e := newExpectation(expectMap)
	c := r.Client
	var summary string
	var resp proto.Message
	switch step.Op {
	case "StartWorkflow":
		resp, summary, err = unary(ctx, r, step, e, &statewrightv1.StartWorkflowRequest{}, c.StartWorkflow,
			func(e *expectation, resp *statewrightv1.StartWorkflowResponse) string {
				return checkWorkflow(e, resp.GetWorkflow())
			})
	case "ResumeWorkflow":
		resp, summary, err = unary(ctx, r, step, e, &statewrightv1.ResumeWorkflowRequest{}, c.ResumeWorkflow,
			func(e *expectation, resp *statewrightv1.ResumeWorkflowResponse) string {
				return checkWorkflow(e, resp.GetWorkflow())
			})
	case "SignalWorkflow":
		resp, summary, err = unary(ctx, r, step, e, &statewrightv1.SignalWorkflowRequest{}, c.SignalWorkflow, checkSignal)
	case "GetWorkflow":
		resp, summary, err = unary(ctx, r, step, e, &statewrightv1.GetWorkflowRequest{}, c.GetWorkflow,
			func(e *expectation, resp *statewrightv1.GetWorkflowResponse) string {
				return checkWorkflow(e, resp.GetWorkflow())
			})
	case "CancelWorkflow":
		resp, summary, err = unary(ctx, r, step, e, &statewrightv1.CancelWorkflowRequest{}, c.CancelWorkflow,
			func(e *expectation, resp *statewrightv1.CancelWorkflowResponse) string {
				return checkWorkflow(e, resp.GetWorkflow())
			})
	case "GetDiagnostics":
		resp, summary, err = unary(ctx, r, step, e, &statewrightv1.GetDiagnosticsRequest{}, c.GetDiagnostics, checkDiagnostics)
	case "ListWorkflows":
		summary, err = r.listWorkflows(ctx, step, e)
	case "WatchWorkflow":
		summary, err = r.openWatch(ctx, step, e)
	case "AwaitWatch":
		summary, err = r.awaitWatch(step, e)
	case "RunWorker":
		summary, err = r.runWorker(ctx, step, e)
	default:
		return "", fmt.Errorf("unsupported op %q", step.Op)
	}
	if err != nil {
		return "", err
	}
	if err := e.err(); err != nil {
		return "", err
	}
	if step.Save != "" {
		if resp == nil {
			return "", fmt.Errorf("save is not supported for op %s", step.Op)
		}
		saved, err := toJSONTree(resp)
		if err != nil {
			return "", err
		}
		r.scope.saved[step.Save] = saved
	}
	return summary, nil
}

// buildRequest expands the step's request and decodes it into req through protojson, so
// that an unknown field or a wrongly typed value in the scenario fails loudly.
func (r *Runner) buildRequest(step Step, req proto.Message) error {
	expanded, err := r.scope.expand(step.Request)
	if err != nil {
		return err
	}
	if expanded == nil {
		expanded = map[string]any{}
	}
	data, err := json.Marshal(expanded)
	if err != nil {
		return fmt.Errorf("encoding request: %w", err)
	}
	if err := protojson.Unmarshal(data, req); err != nil {
		return fmt.Errorf("request does not fit %s: %w", req.ProtoReflect().Descriptor().FullName(), err)
	}
	return nil
}

// unary builds the request, makes the call, and checks either the expected error or the
// response.
func unary[Req, Resp proto.Message](
	ctx context.Context, r *Runner, step Step, e *expectation, req Req,
	call func(context.Context, Req, ...grpc.CallOption) (Resp, error),
	check func(*expectation, Resp) string,
) (proto.Message, string, error) {
	if err := r.buildRequest(step, req); err != nil {
		return nil, "", err
	}
	resp, err := call(ctx, req)
	if wantErr := e.sub("error"); wantErr != nil {
		if err == nil {
			return nil, "", fmt.Errorf("expected the call to fail, but it succeeded")
		}
		summary := checkError(wantErr, err)
		e.merge("error", wantErr)
		return nil, summary, nil
	}
	if err != nil {
		return nil, "", describeError(err)
	}
	return resp, check(e, resp), nil
}

// describeError renders an unexpected call failure with its code and ErrorInfo.
func describeError(err error) error {
	st := status.Convert(err)
	msg := fmt.Sprintf("call failed: %s: %s", codeName(st.Code()), st.Message())
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			msg += fmt.Sprintf(" (reason %s, metadata %v)", info.GetReason(), info.GetMetadata())
		}
	}
	return errors.New(msg)
}

// checkError checks the code and the single ErrorInfo of a failed call.
func checkError(e *expectation, err error) string {
	st := status.Convert(err)
	e.checkString("code", codeName(st.Code()))
	var infos []*errdetails.ErrorInfo
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			infos = append(infos, info)
		}
	}
	if len(infos) != 1 {
		e.failf("expected exactly one google.rpc.ErrorInfo in the status details, found %d (status %s: %s)",
			len(infos), codeName(st.Code()), st.Message())
		info := &errdetails.ErrorInfo{}
		infos = []*errdetails.ErrorInfo{info}
	}
	info := infos[0]
	e.checkString("reason", info.GetReason())
	e.checkString("domain", info.GetDomain())
	if want, ok := e.take("metadata"); ok {
		wantMap, isMap := want.(map[string]any)
		if !isMap {
			e.failf("metadata: expected a map in the scenario, found %v", want)
		}
		for k, v := range wantMap {
			got, present := info.GetMetadata()[k]
			if !present || fmt.Sprint(v) != got {
				e.failf("metadata[%s]: expected %q, got %q (present: %v)", k, fmt.Sprint(v), got, present)
			}
		}
	}
	return fmt.Sprintf("failed as expected with %s, reason %s, metadata %v",
		codeName(st.Code()), info.GetReason(), info.GetMetadata())
}

func checkWorkflow(e *expectation, wf *statewrightv1.Workflow) string {
	e.checkEnum("status", "WORKFLOW_STATUS_", wf.GetStatus().String())
	e.checkString("state", wf.GetState())
	e.checkInt("revision", wf.GetRevision())
	e.checkInt("run", int64(wf.GetRun()))
	e.checkStrings("accepted_events", wf.GetAcceptedEvents())
	e.checkSubset("context", wf.GetContext().AsMap())
	if pt := e.sub("pending_task"); pt != nil {
		if wf.GetPendingTask() == nil {
			pt.failf("the instance has no pending task")
			pt.discard()
		} else {
			checkTask(pt, wf.GetPendingTask())
		}
		e.merge("pending_task", pt)
	}
	return fmt.Sprintf("%s %s in %s at revision %d", wf.GetWorkflowId(),
		strings.TrimPrefix(wf.GetStatus().String(), "WORKFLOW_STATUS_"), wf.GetState(), wf.GetRevision())
}

func checkSignal(e *expectation, resp *statewrightv1.SignalWorkflowResponse) string {
	e.checkBool("accepted", resp.GetAccepted())
	e.checkEnum("reason", "SIGNAL_REJECTION_", resp.GetReason().String())
	summary := checkWorkflow(e, resp.GetWorkflow())
	if !resp.GetAccepted() {
		summary = fmt.Sprintf("not accepted (%s); %s",
			strings.TrimPrefix(resp.GetReason().String(), "SIGNAL_REJECTION_"), summary)
	}
	return summary
}

func checkDiagnostics(e *expectation, resp *statewrightv1.GetDiagnosticsResponse) string {
	e.checkBool("build_version_set", resp.GetBuild().GetVersion() != "")
	e.checkContains("definitions_contain", resp.GetDefinitions())
	return fmt.Sprintf("build %q, %d definitions", resp.GetBuild().GetVersion(), len(resp.GetDefinitions()))
}

func (r *Runner) listWorkflows(ctx context.Context, step Step, e *expectation) (string, error) {
	req := &statewrightv1.ListWorkflowsRequest{}
	if err := r.buildRequest(step, req); err != nil {
		return "", err
	}
	var pageSizes []int
	var ids []string
	seen := map[string]int{}
	var duplicates []string
	for {
		if len(pageSizes) == maxPages {
			return "", fmt.Errorf("still paging after %d pages", maxPages)
		}
		resp, err := r.Client.ListWorkflows(ctx, req)
		if err != nil {
			return "", fmt.Errorf("page %d: %w", len(pageSizes)+1, describeError(err))
		}
		pageSizes = append(pageSizes, len(resp.GetWorkflows()))
		for _, wf := range resp.GetWorkflows() {
			id := wf.GetWorkflowId()
			if seen[id]++; seen[id] == 2 {
				duplicates = append(duplicates, id)
			}
			ids = append(ids, id)
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if want, ok := e.take("min_pages"); ok {
		if n, err := toInt(want); err != nil || int64(len(pageSizes)) < n {
			e.failf("min_pages: expected at least %v pages, got %d", want, len(pageSizes))
		}
	}
	if want, ok := e.take("page_size_at_most"); ok {
		n, err := toInt(want)
		for i, size := range pageSizes {
			if err != nil || int64(size) > n {
				e.failf("page_size_at_most: page %d has %d workflows, expected at most %v", i+1, size, want)
			}
		}
	}
	if want, ok := e.take("no_duplicates"); ok {
		if want != true && want != false {
			e.failf("no_duplicates: expected a boolean in the scenario, found %v", want)
		} else if want == true && len(duplicates) > 0 {
			e.failf("no_duplicates: listed more than once: %v", duplicates)
		}
	}
	e.checkContains("contains", ids)
	return fmt.Sprintf("%d workflows over %d pages", len(ids), len(pageSizes)), nil
}

// watchStream collects a WatchWorkflow stream's messages in the background.
type watchStream struct {
	first chan struct{} // closed at the first message or at the end, whichever is first
	done  chan struct{} // closed when the stream has ended
	once  sync.Once

	mu   sync.Mutex
	msgs []*statewrightv1.WatchWorkflowResponse
	err  error // the stream's final error; nil when it ended OK
}

func (w *watchStream) snapshot() ([]*statewrightv1.WatchWorkflowResponse, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*statewrightv1.WatchWorkflowResponse(nil), w.msgs...), w.err
}

func (r *Runner) openWatch(ctx context.Context, step Step, e *expectation) (string, error) {
	req := &statewrightv1.WatchWorkflowRequest{}
	if err := r.buildRequest(step, req); err != nil {
		return "", err
	}
	stream, err := r.Client.WatchWorkflow(ctx, req)
	if err != nil {
		return "", describeError(err)
	}
	w := &watchStream{first: make(chan struct{}), done: make(chan struct{})}
	r.watches[step.ID] = w
	go func() {
		defer close(w.done)
		defer w.once.Do(func() { close(w.first) })
		for {
			msg, err := stream.Recv()
			w.mu.Lock()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					w.err = err
				}
				w.mu.Unlock()
				return
			}
			w.msgs = append(w.msgs, msg)
			w.mu.Unlock()
			w.once.Do(func() { close(w.first) })
		}
	}()

	select {
	case <-w.first:
	case <-time.After(r.WatchTimeout):
		return "", fmt.Errorf("no message on the stream within %s", r.WatchTimeout)
	}
	msgs, streamErr := w.snapshot()
	if len(msgs) == 0 {
		if streamErr != nil {
			return "", fmt.Errorf("stream ended before its first message: %w", describeError(streamErr))
		}
		return "", fmt.Errorf("stream ended OK without any message")
	}
	if firstExp := e.sub("first"); firstExp != nil {
		checkWatchMessage(firstExp, msgs[0])
		e.merge("first", firstExp)
	}
	return "stream open; first " + describeWatchMessage(msgs[0]), nil
}

func (r *Runner) awaitWatch(step Step, e *expectation) (string, error) {
	w, ok := r.watches[step.Watch]
	if !ok {
		return "", fmt.Errorf("no WatchWorkflow step %q ran before", step.Watch)
	}
	select {
	case <-w.done:
	case <-time.After(r.WatchTimeout):
		msgs, _ := w.snapshot()
		return "", fmt.Errorf("stream did not end within %s (%d messages so far)", r.WatchTimeout, len(msgs))
	}
	msgs, streamErr := w.snapshot()
	// Contract: every revision in order, each message's workflow at its revision.
	for i, m := range msgs {
		if m.GetWorkflow().GetRevision() != m.GetRevision() {
			e.failf("message %d: revision %d but its workflow is at revision %d", i+1, m.GetRevision(), m.GetWorkflow().GetRevision())
		}
		if i > 0 && m.GetRevision() != msgs[i-1].GetRevision()+1 {
			e.failf("message %d: revision %d follows revision %d", i+1, m.GetRevision(), msgs[i-1].GetRevision())
		}
	}
	if lastExp := e.sub("last"); lastExp != nil {
		checkWatchMessage(lastExp, msgs[len(msgs)-1])
		e.merge("last", lastExp)
	}
	endCode := codeName(status.Code(streamErr))
	if want, ok := e.take("ends"); ok && want != endCode {
		e.failf("ends: expected %v, got %s (%v)", want, endCode, streamErr)
	}
	return fmt.Sprintf("%d messages, last %s, ended %s", len(msgs), describeWatchMessage(msgs[len(msgs)-1]), endCode), nil
}

func checkWatchMessage(e *expectation, m *statewrightv1.WatchWorkflowResponse) {
	e.checkEnum("type", "WATCH_EVENT_TYPE_", m.GetType().String())
	e.checkInt("revision", m.GetRevision())
	e.checkString("event", m.GetEvent())
	e.checkEnum("status", "WORKFLOW_STATUS_", m.GetWorkflow().GetStatus().String())
	e.checkString("state", m.GetWorkflow().GetState())
}

func describeWatchMessage(m *statewrightv1.WatchWorkflowResponse) string {
	return fmt.Sprintf("%s %s at revision %d",
		strings.TrimPrefix(m.GetType().String(), "WATCH_EVENT_TYPE_"),
		strings.TrimPrefix(m.GetWorkflow().GetStatus().String(), "WORKFLOW_STATUS_"), m.GetRevision())
}

// toJSONTree renders a response as the JSON tree ${...} references walk.
func toJSONTree(m proto.Message) (any, error) {
	data, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(data, &tree); err != nil {
		return nil, err
	}
	return tree, nil
}
