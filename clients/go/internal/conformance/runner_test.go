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

func dialFake(t *testing.T, srv *fakeServer) statewrightv1.WorkflowServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	statewrightv1.RegisterWorkflowServiceServer(gs, srv)
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return statewrightv1.NewWorkflowServiceClient(conn)
}

// runScenario runs a scenario against srv and returns the result, the error and the output.
func runScenario(t *testing.T, srv *fakeServer, sc *Scenario) (Result, error, string) {
	t.Helper()
	var out bytes.Buffer
	r := &Runner{Client: dialFake(t, srv), Out: &out, RunID: "abc123", WatchTimeout: 5 * time.Second}
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
		"conformance: 13 passed, 0 failed\n",
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
