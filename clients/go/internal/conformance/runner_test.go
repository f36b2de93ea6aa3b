package conformance

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	statewrightv1 "github.com/statewright/statewright/clients/go/statewright/v1"
)

const sharedScenario = "../../../conformance/scenario.yaml"

func dialFake(t *testing.T, srv *fakeServer) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	statewrightv1.RegisterWorkflowServiceServer(gs, srv)
	statewrightv1.RegisterTaskServiceServer(gs, &fakeTaskServer{s: srv})
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// runScenario runs a scenario against srv and returns the result, the error and the output.
func runScenario(t *testing.T, srv *fakeServer, sc *Scenario) (Result, error, string) {
	t.Helper()
	var out bytes.Buffer
	conn := dialFake(t, srv)
	r := &Runner{
		Client: statewrightv1.NewWorkflowServiceClient(conn), Tasks: statewrightv1.NewTaskServiceClient(conn),
		Out: &out, RunID: "abc123", WatchTimeout: 5 * time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := r.Run(ctx, sc)
	return res, err, out.String()
}

func loadShared(t *testing.T) *Scenario {
	t.Helper()
	sc, err := LoadScenario(sharedScenario)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestSharedScenarioPassesAgainstConformingServer(t *testing.T) {
	sc := loadShared(t)
	res, err, out := runScenario(t, newFakeServer(), sc)
	if err != nil {
		t.Fatalf("run failed: %v\n%s", err, out)
	}
	if res.Passed != len(sc.Steps) || res.Failed != 0 || res.Skipped != 0 {
		t.Errorf("result %+v, want all %d steps passed", res, len(sc.Steps))
	}
	for _, want := range []string{
		"PASS stale_resume (ResumeWorkflow): failed as expected with ABORTED, reason REVISION_MISMATCH",
		"PASS watch_mail_completed (AwaitWatch): 2 messages, last STEP COMPLETED at revision 2, ended OK",
		"order-abc123-2 COMPLETED",
		"PASS list_pages (ListWorkflows): 3 workflows over 2 pages",
		"PASS start_order (StartWorkflow): ful-abc123 RUNNING in charging at revision 1",
		"PASS work_order (RunWorker): ful-abc123 COMPLETED in refunded at revision 4; tasks charging/payments COMPLETED attempt 1, " +
			"shipping/shipping FAILED attempt 1, refunding/payments COMPLETED attempt 1; handled payments 2, shipping 1",
		"conformance: 16 passed, 0 failed\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// expectFailure runs the shared scenario against a deviating server and checks that it
// fails at step with a message containing every one of wants.
func expectFailure(t *testing.T, srv *fakeServer, step string, wants ...string) {
	t.Helper()
	res, err, out := runScenario(t, srv, loadShared(t))
	if err == nil {
		t.Fatalf("run passed against a deviating server:\n%s", out)
	}
	if res.Failed != 1 {
		t.Errorf("failed = %d, want 1", res.Failed)
	}
	if !strings.Contains(out, "FAIL "+step+" ") {
		t.Errorf("expected step %s to fail:\n%s", step, out)
	}
	for _, want := range wants {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(out, "SKIP diagnostics") && step != "diagnostics" {
		t.Errorf("steps after the failure should be skipped:\n%s", out)
	}
}

func TestWrongErrorInfoReasonFails(t *testing.T) {
	srv := newFakeServer()
	srv.mismatchReason = "CONFLICT"
	expectFailure(t, srv, "stale_resume", `reason: expected REVISION_MISMATCH, got "CONFLICT"`)
}

func TestWatchEndingWithAnErrorFails(t *testing.T) {
	srv := newFakeServer()
	srv.watchEndErr = status.Error(codes.Internal, "boom")
	expectFailure(t, srv, "watch_mail_completed", "ends: expected OK, got INTERNAL")
}

func TestWatchSkippingARevisionFails(t *testing.T) {
	srv := newFakeServer()
	srv.skipRevision = true
	expectFailure(t, srv, "watch_mail_completed", "revision 3 follows revision 1", "last: revision: expected 2, got 3")
}

func TestDuplicateAcrossPagesFails(t *testing.T) {
	srv := newFakeServer()
	srv.duplicatePage = true
	expectFailure(t, srv, "list_pages", "no_duplicates: listed more than once: [order-abc123-0]")
}

func TestWrongStatusFails(t *testing.T) {
	srv := newFakeServer()
	failed := statewrightv1.WorkflowStatus_WORKFLOW_STATUS_FAILED
	srv.signalStatus = &failed
	expectFailure(t, srv, "signal_low_score", "status: expected RUNNING, got FAILED")
}

func TestUnsupportedExpectationAndOpFail(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown expect key": {
			yaml: `{version: 1, steps: [{id: d, op: GetDiagnostics, request: {}, expect: {build_version_set: true, bogus: 1}}]}`,
			want: "unsupported expectation key(s) bogus",
		},
		"unknown op": {
			yaml: `{version: 1, steps: [{id: d, op: Teleport}]}`,
			want: `unsupported op "Teleport"`,
		},
		"unknown request field": {
			yaml: `{version: 1, steps: [{id: d, op: GetWorkflow, request: {nam: x}}]}`,
			want: "request does not fit statewright.v1.GetWorkflowRequest",
		},
		"error expected, call succeeds": {
			yaml: `{version: 1, steps: [{id: d, op: GetDiagnostics, expect: {error: {code: NOT_FOUND}}}]}`,
			want: "expected the call to fail, but it succeeded",
		},
		"unknown reference": {
			yaml: `{version: 1, steps: [{id: d, op: GetWorkflow, request: {name: "workflows/${nobody.id}"}}]}`,
			want: `no earlier step saved "nobody"`,
		},
		"await without watch": {
			yaml: `{version: 1, steps: [{id: d, op: AwaitWatch, watch: w}]}`,
			want: `no WatchWorkflow step "w" ran before`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			sc, err := ParseScenario([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			_, err, out := runScenario(t, newFakeServer(), sc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q\n%s", err, tc.want, out)
			}
			if !strings.Contains(out, "conformance: 0 passed, 1 failed\n") {
				t.Errorf("summary missing:\n%s", out)
			}
		})
	}
}

func TestSavedValuesFeedLaterRequests(t *testing.T) {
	sc, err := ParseScenario([]byte(`
version: 1
steps:
  - {id: s, op: StartWorkflow, request: {definition: mail-approval, workflow_id: "m-${run}"}, save: mail}
  - id: r
    op: ResumeWorkflow
    request: {name: "${mail.name}", event: approve, expected_revision: "${mail.revision}"}
    expect: {status: COMPLETED, revision: 2}
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err, out := runScenario(t, newFakeServer(), sc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestParseScenarioIsStrict(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"unknown step key": {`{version: 1, steps: [{id: a, op: GetDiagnostics, expct: {}}]}`, "field expct not found"},
		"wrong version":    {`{version: 2, steps: [{id: a, op: GetDiagnostics}]}`, "unsupported scenario version 2"},
		"duplicate id":     {`{version: 1, steps: [{id: a, op: X}, {id: a, op: Y}]}`, `duplicate id "a"`},
		"missing op":       {`{version: 1, steps: [{id: a}]}`, "id and op are required"},
		"no steps":         {`{version: 1}`, "no steps"},
		"handlers elsewhere": {
			`{version: 1, steps: [{id: a, op: GetDiagnostics, handlers: {q: {result: {}}}}]}`, "belong to RunWorker steps only"},
		"result and fail": {
			`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}, fail: {type: X}}}, until: {name: w}, timeout: 1s}]}`,
			"handler q: exactly one of result and fail"},
		"neither result nor fail": {
			`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {}}, until: {name: w}, timeout: 1s}]}`,
			"handler q: exactly one of result and fail"},
		"unknown fail key": {
			`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {fail: {type: X, retry: no}}}, until: {name: w}, timeout: 1s}]}`,
			"field retry not found"},
		"no handlers": {
			`{version: 1, steps: [{id: a, op: RunWorker, until: {name: w}, timeout: 1s}]}`, "at least one handler"},
		"no until": {
			`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, timeout: 1s}]}`, "needs until.name"},
		"bad timeout": {
			`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, until: {name: w}, timeout: soon}]}`,
			`expected a positive duration such as 60s, found "soon"`},
		"no timeout": {
			`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, until: {name: w}}]}`,
			`expected a positive duration such as 60s, found ""`},
		"request on RunWorker": {
			`{version: 1, steps: [{id: a, op: RunWorker, request: {}, handlers: {q: {result: {}}}, until: {name: w}, timeout: 1s}]}`,
			"RunWorker takes no request"},
	} {
		if _, err := ParseScenario([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want %q", name, err, tc.want)
		}
	}
}

func TestExpand(t *testing.T) {
	s := &scope{
		vars:  map[string]any{"run": "r1", "i": 2},
		saved: map[string]any{"mail": map[string]any{"workflow": map[string]any{"revision": "1", "accepted_events": []any{"approve"}}, "created": true}},
	}
	got, err := s.expand(map[string]any{
		"id":      "order-${run}-${i}",
		"rev":     "${mail.revision}",
		"created": "${mail.created}",
		"event":   "${mail.accepted_events.0}",
		"list":    []any{"${i}", 3.5},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if m["id"] != "order-r1-2" || m["rev"] != "1" || m["created"] != true || m["event"] != "approve" {
		t.Errorf("expand = %v", m)
	}
	if list := m["list"].([]any); list[0] != 2 || list[1] != 3.5 {
		t.Errorf("list = %v", list)
	}
	for _, bad := range []string{"${nope}", "x-${mail.missing}", "${other.x}"} {
		if _, err := s.expand(bad); err == nil {
			t.Errorf("expand(%q): no error", bad)
		}
	}
}

func TestParseScenarioTakesAnEmptyResult(t *testing.T) {
	sc, err := ParseScenario([]byte(`{version: 1, steps: [{id: a, op: RunWorker, handlers: {q: {result: {}}}, until: {name: w}, timeout: 2m}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := sc.Steps[0].timeout(); err != nil || d != 2*time.Minute {
		t.Errorf("timeout = %v, %v", d, err)
	}
}

func TestInputReferencesWaitForTheTask(t *testing.T) {
	stage := &scope{
		vars:     map[string]any{"run": "r1"},
		saved:    map[string]any{},
		deferred: map[string]bool{"input": true},
	}
	staged, err := stage.expand(map[string]any{
		"id":     "ch-${input.order}",
		"run":    "${run}-${input.n}",
		"amount": "${input.amount}",
		"nested": []any{map[string]any{"item": "${input.items.1}"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := staged.(map[string]any); m["id"] != "ch-${input.order}" || m["run"] != "r1-${input.n}" || m["amount"] != "${input.amount}" {
		t.Errorf("staged = %v", m)
	}
	perTask := &scope{saved: map[string]any{"input": map[string]any{
		"order": "ful-r1", "n": 2.0, "amount": 25.0, "items": []any{"book", "pen"},
	}}}
	got, err := perTask.expand(staged)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if m["id"] != "ch-ful-r1" || m["run"] != "r1-2" || m["amount"] != 25.0 {
		t.Errorf("expanded = %v", m)
	}
	if item := m["nested"].([]any)[0].(map[string]any)["item"]; item != "pen" {
		t.Errorf("nested item = %v", item)
	}
	if _, err := perTask.expand("ch-${input.missing}"); err == nil || !strings.Contains(err.Error(), `"input" has no field missing`) {
		t.Errorf("missing input key: error = %v", err)
	}
	if _, err := stage.expand("${nobody.x}-${input.order}"); err == nil {
		t.Error("a reference that is not deferred must still be resolved")
	}
}

func TestSubsetMismatches(t *testing.T) {
	got := map[string]any{
		"charge_id": "ch-1",
		"total":     25.0,
		"items":     []any{"book", "pen"},
		"failure":   map[string]any{"type": "CARRIER_DOWN", "attempts": 1.0, "details": map[string]any{}},
		"flag":      false,
	}
	for name, tc := range map[string]struct {
		want  any
		wants []string // empty: a match
	}{
		"subset":                 {map[string]any{"charge_id": "ch-1", "failure": map[string]any{"attempts": 1}}, nil},
		"empty map":              {map[string]any{}, nil},
		"int and float":          {map[string]any{"total": 25}, nil},
		"whole list":             {map[string]any{"items": []any{"book", "pen"}}, nil},
		"bool":                   {map[string]any{"flag": false}, nil},
		"wrong string":           {map[string]any{"charge_id": "ch-2"}, []string{`ctx.charge_id: expected ch-2, got "ch-1"`}},
		"missing key":            {map[string]any{"refund_id": "x"}, []string{"ctx.refund_id: missing"}},
		"nested mismatch":        {map[string]any{"failure": map[string]any{"type": "X", "message": "m"}}, []string{`ctx.failure.message: missing`, `ctx.failure.type: expected X, got "CARRIER_DOWN"`}},
		"string is not a number": {map[string]any{"total": "25"}, []string{"ctx.total: expected 25, got 25"}},
		"number is not a string": {map[string]any{"charge_id": 1}, []string{`ctx.charge_id: expected 1, got "ch-1"`}},
		"list too short":         {map[string]any{"items": []any{"book"}}, []string{"ctx.items: expected [book], got [book pen]"}},
		"list element":           {map[string]any{"items": []any{"book", "ink"}}, []string{`ctx.items[1]: expected ink, got "pen"`}},
		"map is not a scalar":    {map[string]any{"failure": "CARRIER_DOWN"}, []string{"ctx.failure: expected CARRIER_DOWN, got map["}},
		"scalar is not a map":    {map[string]any{"charge_id": map[string]any{"id": "ch-1"}}, []string{`ctx.charge_id: expected a map, got "ch-1"`}},
		"null is not false":      {map[string]any{"flag": nil}, []string{"ctx.flag: expected <nil>, got false"}},
	} {
		t.Run(name, func(t *testing.T) {
			problems := subsetMismatches("ctx", tc.want, got)
			if len(problems) != len(tc.wants) {
				t.Fatalf("problems = %q, want %d matching %q", problems, len(tc.wants), tc.wants)
			}
			for i, want := range tc.wants {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], want)
				}
			}
		})
	}
}

func TestMissingPendingTaskFails(t *testing.T) {
	srv := newFakeServer()
	srv.noPendingTask = true
	expectFailure(t, srv, "start_order", "pending_task: the instance has no pending task")
}

func TestWrongContextAfterTheWorkerFails(t *testing.T) {
	srv := newFakeServer()
	srv.dropRefundID = true
	expectFailure(t, srv, "work_order", `context.refund_id: expected ch-ful-abc123, got ""`)
}

func TestAnExtraTaskFails(t *testing.T) {
	srv := newFakeServer()
	srv.extraTask = true
	expectFailure(t, srv, "work_order", "tasks: expected 3 tasks, got 4")
}

// workerScenario is a scenario that starts an order and works it with handlers.
func workerScenario(handlers, expect string) string {
	return `
version: 1
steps:
  - {id: start, op: StartWorkflow, request: {definition: order-fulfilment, workflow_id: "w-${run}", input: {items: [book], price: 2}}}
  - id: work
    op: RunWorker
    handlers: ` + handlers + `
    until: {name: "workflows/w-${run}"}
    timeout: 1s
    expect: ` + expect + `
`
}

func runWorkerScenario(t *testing.T, srv *fakeServer, yaml string) (Result, error, string) {
	t.Helper()
	sc, err := ParseScenario([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return runScenario(t, srv, sc)
}

func TestRunWorkerTimesOutWhileTheInstanceRuns(t *testing.T) {
	// Nobody works the shipping queue, so the instance stays in shipping.
	_, err, out := runWorkerScenario(t, newFakeServer(), workerScenario(`{payments: {result: {id: x}}}`, `{status: COMPLETED}`))
	if err == nil || !strings.Contains(err.Error(), "workflows/w-abc123 still RUNNING in shipping at revision 2 after 1s") {
		t.Errorf("error = %v\n%s", err, out)
	}
}

func TestRunWorkerReportsAMissingInputKey(t *testing.T) {
	_, err, out := runWorkerScenario(t, newFakeServer(), workerScenario(
		`{payments: {result: {id: "${input.nope}"}}}`, `{status: COMPLETED}`))
	if err == nil || !strings.Contains(err.Error(), `handler payments, task workflows/w-abc123/tasks/1: ${input.nope}: "input" has no field nope`) {
		t.Errorf("error = %v\n%s", err, out)
	}
}

func TestRunWorkerFailsTasksAsTold(t *testing.T) {
	// The charge fails for good: the instance ends declined, with the failure as given.
	res, err, out := runWorkerScenario(t, newFakeServer(), workerScenario(
		`{payments: {fail: {type: CARD_DECLINED, message: "no funds for ${input.order}", non_retryable: true}}}`,
		`{status: COMPLETED, state: declined, revision: 2, context: {failure: {type: CARD_DECLINED, message: no funds for w-abc123, attempts: 1}, charge_id: ""}, tasks: [{state: charging, queue: payments, status: FAILED, attempt: 1}]}`))
	if err != nil || res.Passed != 2 {
		t.Fatalf("result %+v, error %v\n%s", res, err, out)
	}
	if !strings.Contains(out, "; handled payments 1\n") {
		t.Errorf("output lacks the handler count:\n%s", out)
	}
}
