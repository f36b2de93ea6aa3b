package main

import (
	"fmt"
	"testing"
	"time"
)

// A lost update: revision 3 was computed on revision 1 (a stale copy), after another
// replica had saved revision 2. The state did not change, but the chain shows it.
func TestAStepComputedOnAStaleCopyIsReported(t *testing.T) {
	f := account()
	f.rows[2].Context["prev"] = "op-c0-1"
	f.ops[2] = answered(f.ops[2], f.rows)
	rep := f.check(t)
	expectAnomaly(t, rep, propSteps, "stale copy")
	expectAnomaly(t, rep, propLinearizable, "cannot")
}

// A step taken from a state its event does not leave: the held account was noted.
func TestAStepFromTheWrongStateIsReported(t *testing.T) {
	wf := "acct-0-0"
	rows := chain([]histRow{
		row(wf, 1, "", "active", "RUNNING", "op-c0-1", t0+5),
		row(wf, 2, "hold", "held", "WAITING", "op-c0-2", t0+25),
		row(wf, 3, "note", "active", "RUNNING", "op-c0-3", t0+45),
	})
	rows[1].Transitions = []transition{{From: "active", To: "held", Event: ev("hold")}}
	rows[2].Transitions = []transition{{From: "active", To: "active", Event: ev("note")}}
	hold := okOp("op-c0-2", "signal", wf, t0+20, t0+30, 2)
	hold.Event = "hold"
	f := &runFixture{ops: []Op{okOp("op-c0-1", "start", wf, t0, t0+10, 1), hold, okOp("op-c0-3", "signal", wf, t0+40, t0+50, 3)}, rows: rows}
	expectAnomaly(t, f.check(t), propSteps, "revision before rests in held")
}

func TestAnAnswerThatDisagreesWithHistoryIsReported(t *testing.T) {
	f := account()
	get := answered(f.ops[3], f.rows)
	get.Ctx, get.Last = "0000000000000000", "op-c0-2" // revision 3 shown with revision 2's context
	f.ops[3] = get
	rep := f.check(t)
	expectAnomaly(t, rep, propAnswers, "get was answered with revision 3")
	expectAnomaly(t, rep, propLinearizable, "cannot")
}

func TestARetryAnsweredOtherwiseThanAppliedIsReported(t *testing.T) {
	f := account()
	f.ops[1].RID = "rid-op-c0-2"
	retry := Op{Proc: "c0", ID: "op-c0-2", Try: 1, Kind: "signal", Event: "note", WF: "acct-0-0", RID: "rid-op-c0-2",
		Call: t0 + 60, Ret: t0 + 65, Outcome: outcomeFail, Code: "FailedPrecondition", Reason: "EVENT_NOT_ALLOWED"}
	f.ops = append(f.ops, retry)
	expectAnomaly(t, f.check(t), propRetries, "answered FailedPrecondition EVENT_NOT_ALLOWED, after an answer that it was applied at revision 2")
	// A refusal of the attempt alone says nothing of the request.
	g := account()
	g.ops[1].RID = "rid-op-c0-2"
	retry.Code, retry.Reason = "Unavailable", "SHUTTING_DOWN"
	g.ops = append(g.ops, retry)
	if rep := g.check(t); rep.Anomalies != 0 {
		t.Fatalf("a retry refused as unavailable:\n%s", rep.text())
	}
}

// An order whose task (scheduled at revision 1) was completed at revision 2, with its
// duplicates.
func order() *runFixture {
	wf := "order-0-0"
	r1 := row(wf, 1, "", "work", "RUNNING", "op-c0-1", t0+5)
	r2 := row(wf, 2, "task_completed", "work", "RUNNING", "op-w0-1", t0+50)
	r2.Transitions = []transition{{From: "work", To: "work"}}
	rows := chain([]histRow{r1, r2})
	complete := func(id string, try int, rid string, call, ret int64) Op {
		op := okOp(id, "complete", wf, call, ret, 2)
		op.Proc, op.Try, op.RID, op.Task, op.Attempt, op.Lease, op.TaskStatus = "w0", try, rid, 1, 1, "token-1", "COMPLETED"
		return answered(op, rows)
	}
	return &runFixture{
		ops: []Op{
			answered(okOp("op-c0-1", "start", wf, t0, t0+10, 1), rows),
			{Proc: "w0", ID: "lease-w0-1", Kind: "lease", WF: wf, Task: 1, Attempt: 1, Lease: "token-1",
				LeaseExp: t0 + int64(2*time.Second), Call: t0 + 15, Ret: t0 + 20, Outcome: outcomeOK},
			complete("op-w0-1", 0, "rid-op-w0-1", t0+40, t0+60),
			complete("op-w0-1", 1, "rid-op-w0-1", t0+41, t0+61), // the same at once, the other replica
		},
		rows:  rows,
		tasks: []taskRow{{WorkflowID: wf, TaskID: "1", Revision: 1, State: "work", Status: "COMPLETED", Attempt: 1}, {WorkflowID: wf, TaskID: "2", Revision: 2, State: "work", Status: "SCHEDULED"}},
	}
}

func TestADuplicateCompletionAnsweredAsTheFirstIsClean(t *testing.T) {
	if rep := order().check(t); rep.Anomalies != 0 {
		t.Fatalf("a clean order has anomalies:\n%s", rep.text())
	}
}

func TestADuplicateCompletionAnsweredOtherwiseIsReported(t *testing.T) {
	f := order()
	f.ops[3].Outcome, f.ops[3].Code, f.ops[3].Reason, f.ops[3].Rev = outcomeFail, "FailedPrecondition", "LEASE_SUPERSEDED", 0
	f.ops[3].Call = f.ops[2].Ret + 1 // sent again after the first answer
	expectAnomaly(t, f.check(t), propDuplicates, "answered FailedPrecondition LEASE_SUPERSEDED, after an answer that it was applied at revision 2")
	// Another completion of the same lease (another request id) answered with another
	// revision than the first's.
	g := order()
	dup := g.ops[3]
	dup.ID, dup.Try, dup.RID, dup.Rev = "op-w0-2", 0, "", 3
	g.ops[3] = dup
	expectAnomaly(t, g.check(t), propDuplicates, "was answered with revision 3, but the first one (op-w0-1) was applied at revision 2")
}

func TestAFailureAnsweredAsNotDoneThatIsTheTasksLastErrorIsReported(t *testing.T) {
	// A retried failure leaves no step: only the task's last error, the worker's message
	// (its operation's id), tells that it was written.
	f := order()
	f.ops = append(f.ops, Op{Proc: "w0", ID: "op-w0-7", Kind: "fail", WF: "order-0-0", Task: 2, Attempt: 1,
		Lease: "token-3", Call: t0 + 70, Ret: t0 + 80, Outcome: outcomeFail, Code: "Unavailable", Reason: "STORAGE_UNAVAILABLE"})
	if rep := f.check(t); rep.Anomalies != 0 {
		t.Fatalf("a failure not written has anomalies:\n%s", rep.text())
	}
	f.tasks[1].LastError = &taskError{Message: "op-w0-7"}
	f.tasks[1].Status, f.tasks[1].Attempt = "BACKOFF", 1
	expectAnomaly(t, f.check(t), propFailedAbsent, "fail answered Unavailable STORAGE_UNAVAILABLE (nothing done) is task 2's last error")
}

func TestTwoWorkersHoldingOneTaskAreReported(t *testing.T) {
	f := order()
	f.ops = append(f.ops, Op{Proc: "w1", ID: "lease-w1-1", Kind: "lease", WF: "order-0-0", Task: 1, Attempt: 2, Lease: "token-2",
		LeaseExp: t0 + int64(3*time.Second), Call: t0 + 25, Ret: t0 + 30, Outcome: outcomeOK})
	expectAnomaly(t, f.check(t), propLeases, "two workers held it at once")
}

func TestAHeartbeatOfASupersededLeaseIsReported(t *testing.T) {
	f := order()
	late := t0 + int64(3*time.Second)
	f.ops[1].LeaseExp = t0 + int64(time.Second)
	f.ops = append(f.ops,
		Op{Proc: "w1", ID: "lease-w1-1", Kind: "lease", WF: "order-0-0", Task: 1, Attempt: 2, Lease: "token-2",
			LeaseExp: late + int64(2*time.Second), Call: late, Ret: late + 10, Outcome: outcomeOK},
		Op{Proc: "w0", ID: "op-w0-9", Kind: "heartbeat", WF: "order-0-0", Task: 1, Attempt: 1, Lease: "token-1",
			LeaseExp: late + int64(4*time.Second), Call: late + 100, Ret: late + 200, Outcome: outcomeOK})
	// The completion came first; make it the later lease's, so that only the leases matter.
	f.ops[2].Lease, f.ops[3].Lease = "token-2", "token-2"
	expectAnomaly(t, f.check(t), propLeases, "accepted after a later attempt had been leased")
}

func TestATracebackInAReplicaFailsTheRun(t *testing.T) {
	f := account()
	f.final = final{Tracebacks: map[string]int{"replica-0.log": 1}, Exceptions: map[string][]string{"replica-0.log": {"TypeError: boom"}}}
	expectAnomaly(t, f.check(t), propServerHealthy, "TypeError: boom")
}

func TestAnInconclusiveLinearizabilityCheckFailsTheRun(t *testing.T) {
	saved := linearTimeout
	linearTimeout = time.Nanosecond
	defer func() { linearTimeout = saved }()
	f := account()
	for i := 0; i < 40; i++ { // many overlapping reads: more than a nanosecond's work
		f.ops = append(f.ops, okOp(fmt.Sprintf("op-c1-%d", i), "get", "acct-0-0", t0+60, t0+70+int64(i), 3))
	}
	expectAnomaly(t, f.check(t), propLinearizable, "inconclusive")
}

func TestARunShortOfItsPromiseIsReported(t *testing.T) {
	f := account()
	f.config = &runConfig{Size: "test", Ops: 100, Faults: []string{faultKill, faultStall}, Rounds: 2}
	f.faults = []FaultRec{
		{Seq: 1, Kind: faultKill, Start: t0, End: t0 + 1e9, Recovered: t0 + 2e9},
		{Seq: 2, Kind: faultKill, Start: t0, End: t0 + 1e9, Recovered: t0 + 2e9, Err: "replica 0 exited before serving"},
		{Seq: 3, Kind: faultStall, Start: t0, End: t0 + 1e9, Recovered: t0 + 1e9 + int64(recoveryBound) + 1},
		{Seq: 4, Kind: faultStall, Start: t0, End: t0 + 1e9, Recovered: t0 + 2e9},
	}
	rep := f.check(t)
	expectAnomaly(t, rep, propPlan, "fewer than the 100 the run promised")
	expectAnomaly(t, rep, propPlan, "1 kill fault(s) took effect, fewer than the 2")
	expectAnomaly(t, rep, propRecoveryBound, "stall fault 3")
}

func TestAnInstanceNoWatchFollowedIsReported(t *testing.T) {
	f := account()
	f.watch = nil
	f.config = &runConfig{Size: "test", Watch: "all"}
	expectAnomaly(t, f.check(t), propWatch, "no watch stream followed")
}

// A signal refused (not accepted: saved nothing, recorded nothing) and then applied by a
// later attempt with the same request id is what the documentation promises: a step that
// saves nothing records nothing, so its retry is evaluated again.
func TestARetryAppliedAfterARefusalIsClean(t *testing.T) {
	f := account()
	f.ops[1].RID = "rid-op-c0-2"
	first := f.ops[1]
	first.Call, first.Ret = t0+12, t0+14
	first.Accepted, first.Rejection, first.Rev = false, "SIGNAL_REJECTION_NOT_RUNNING", 1
	first = answered(first, f.rows)
	first.Try = 0
	f.ops[1].Try = 1
	f.ops = append(f.ops, first)
	if rep := f.check(t); rep.Anomalies != 0 {
		t.Fatalf("a refusal, then the same request applied:\n%s", rep.text())
	}
	// But once an answer said it was applied, a later attempt must say so too.
	g := account()
	g.ops[1].RID = "rid-op-c0-2"
	late := g.ops[1]
	late.Try, late.Call, late.Ret = 1, t0+80, t0+90
	late.Accepted, late.Rejection, late.Rev = false, "SIGNAL_REJECTION_NOT_RUNNING", 3
	g.ops = append(g.ops, answered(late, g.rows))
	expectAnomaly(t, g.check(t), propRetries, "answered as not applied")
}
