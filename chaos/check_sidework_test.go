package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bareChecker is a checker with nothing loaded, for one check at a time.
func bareChecker(t *testing.T) *checker {
	c := &checker{dir: t.TempDir(), logicals: map[string]*logical{}, byWF: map[string][]*logical{},
		history: map[string][]histRow{}, instances: map[string]instRow{}, checked: map[string]int{}}
	c.rep = &report{}
	return c
}

func anomaliesOf(c *checker, prop string) []string {
	var out []string
	for _, a := range c.anomalies {
		if a.Property == prop {
			out = append(out, a.Detail)
		}
	}
	return out
}

// mustFind fails unless, for each of words, some anomaly found says it.
func mustFind(t *testing.T, found []string, words ...string) {
	t.Helper()
	for _, w := range words {
		said := false
		for _, f := range found {
			said = said || strings.Contains(f, w)
		}
		if !said {
			t.Errorf("no anomaly says %q; found %q", w, found)
		}
	}
}

// -- signal-with-start --------------------------------------------------------------

func swsLogical(id, wf string, created bool, rev int64) *logical {
	a := &Op{ID: id, Kind: "sws", WF: wf, Outcome: outcomeOK, Accepted: true, Created: created, Rev: rev, Call: t0, Ret: t0 + 1e6}
	return &logical{id: id, kind: "sws", wf: wf, attempts: []*Op{a}, acked: true, ackRev: rev, ackRet: a.Ret, applied: []at{{wf, rev}}}
}

func TestOneInstanceFlagsTwoCreatorsOfOneID(t *testing.T) {
	c := bareChecker(t)
	c.byWF["acct-0-1"] = []*logical{swsLogical("op-c0-1", "acct-0-1", true, 1), swsLogical("op-c1-1", "acct-0-1", true, 1)}
	c.checkOneInstance()
	mustFind(t, anomaliesOf(c, propOneInstance), "2 operations were told they created this instance")
}

func TestOneInstanceFlagsACreatorToldAnotherRevision(t *testing.T) {
	c := bareChecker(t)
	c.byWF["acct-0-1"] = []*logical{swsLogical("op-c0-1", "acct-0-1", true, 3)}
	c.checkOneInstance()
	mustFind(t, anomaliesOf(c, propOneInstance), "told it created the instance, at revision 3")
}

func TestOneInstanceAcceptsOneCreatorAndSignals(t *testing.T) {
	c := bareChecker(t)
	c.byWF["acct-0-1"] = []*logical{swsLogical("op-c0-1", "acct-0-1", true, 1), swsLogical("op-c1-1", "acct-0-1", false, 2)}
	c.checkOneInstance()
	if len(c.anomalies) != 0 {
		t.Fatal(c.anomalies)
	}
	if s := c.rep.Side.SignalWithStart; s.Sent != 2 || s.Started != 1 || s.Applied != 2 {
		t.Fatal(s)
	}
}

// A signal-with-start acknowledged but in no history is lost, as any write would be.
func TestAnAcknowledgedSignalWithStartThatIsLostIsFlagged(t *testing.T) {
	f := account()
	lost := okOp("op-c0-9", "sws", "acct-0-0", t0+80, t0+90, 4)
	lost.Accepted, lost.Event = true, "note"
	f.ops = append(f.ops, lost)
	rep := f.check(t)
	expectAnomaly(t, rep, propAckedOnce, "sws acknowledged at revision 4 is in no history")
	expectAnomaly(t, rep, propSignalsOnce, "never applied")
}

// Two signal-with-starts race on a new id: one creates it (its note in revision 1), the
// other's note is revision 2; the whole checker, porcupine's register too, accepts it.
func TestARaceOfSignalWithStartsIsAccepted(t *testing.T) {
	wf := "acct-0-5"
	f := &runFixture{rows: chain([]histRow{
		row(wf, 1, "note", "active", "RUNNING", "op-c0-1", t0+5),
		row(wf, 2, "note", "active", "RUNNING", "op-c1-1", t0+8),
	})}
	first, second := okOp("op-c0-1", "sws", wf, t0, t0+10, 1), okOp("op-c1-1", "sws", wf, t0+1, t0+12, 2)
	first.Accepted, first.Created, first.Event = true, true, "note"
	second.Accepted, second.Event, second.Proc = true, "note", "c1"
	f.ops = []Op{answered(first, f.rows), answered(second, f.rows)}
	f.watch = []WatchRec{{Proc: "v0", WF: wf, What: "open"},
		{Proc: "v0", WF: wf, What: "msg", Rev: 1, State: "active", Status: "RUNNING", Last: "op-c0-1"},
		{Proc: "v0", WF: wf, What: "msg", Rev: 2, State: "active", Status: "RUNNING", Last: "op-c1-1"}}
	rep := f.check(t)
	if rep.Anomalies != 0 {
		t.Fatal(rep.List)
	}
	if rep.Side.SignalWithStart.Started != 1 || rep.Linear.Ok != 1 {
		t.Fatal(rep.Side.SignalWithStart, rep.Linear)
	}
}

// -- flow control ---------------------------------------------------------------------

func span(op, key string, start, end int64) leaseSpan {
	return leaseSpan{op: op, wf: "limit-0-" + op, key: key, start: t0 + start*1e6, end: t0 + end*1e6}
}

func TestOverLimitFlagsMoreLeasesThanTheLimit(t *testing.T) {
	spans := []leaseSpan{span("a", "k1", 0, 100), span("b", "k2", 10, 100), span("c", "k3", 20, 100), span("d", "k4", 30, 40)}
	excess, most := overLimit(spans, 3, false)
	if most != 4 || len(excess) != 1 || !strings.Contains(excess[0], "4 leases held at once") {
		t.Fatal(most, excess)
	}
	// Per key: two of one key at once.
	spans[3].key = "k1"
	excess, most = overLimit(spans, 1, true)
	if most != 2 || len(excess) != 1 || !strings.Contains(excess[0], "for key k1") {
		t.Fatal(most, excess)
	}
}

func TestOverLimitAcceptsLeasesThatFollowEachOther(t *testing.T) {
	// b begins as a ends: never two at once.
	spans := []leaseSpan{span("a", "k1", 0, 50), span("b", "k1", 50, 90), span("c", "k1", 90, 120)}
	if excess, most := overLimit(spans, 1, true); len(excess) != 0 || most != 1 {
		t.Fatal(most, excess)
	}
}

// leaseOp is a worker's lease of a limited task, answered at ret, running out at exp (ms
// after t0).
func leaseOp(id, wf, key, token string, ret, exp int64) Op {
	return Op{Proc: "w0", ID: id, Kind: "lease", WF: wf, Task: 1, Def: defLimited, Key: key, Lease: token,
		Call: t0 + (ret-5)*1e6, Ret: t0 + ret*1e6, LeaseExp: t0 + exp*1e6, Outcome: outcomeOK}
}

func flowChecker(t *testing.T, leases []Op, calls []Op) *checker {
	c := bareChecker(t)
	c.meta.Config.Side = sideConfig{MaxLeased: 2, KeyMaxLeased: 1}
	c.ops = append(c.ops, calls...)
	for i := range leases {
		c.taskCalls = append(c.taskCalls, &leases[i])
	}
	c.checkFlow()
	return c
}

func TestFlowFlagsALeaseOverTheQueueLimit(t *testing.T) {
	c := flowChecker(t, []Op{
		leaseOp("l1", "limit-0-1", "cust-1", "t1", 0, 2000),
		leaseOp("l2", "limit-0-2", "cust-2", "t2", 100, 2100),
		leaseOp("l3", "limit-0-3", "cust-3", "t3", 200, 2200),
	}, nil)
	mustFind(t, anomaliesOf(c, propFlow), "3 leases held at once")
}

func TestFlowFlagsTwoLeasesOfOneKey(t *testing.T) {
	c := flowChecker(t, []Op{
		leaseOp("l1", "limit-0-1", "cust-1", "t1", 0, 2000),
		leaseOp("l2", "limit-0-2", "cust-1", "t2", 500, 2500),
	}, nil)
	mustFind(t, anomaliesOf(c, propFlow), "for key cust-1")
}

// A lease ends at its first completion's call, or when it runs out: the next lease of the
// key after either is no violation, even when the first worker completes late.
func TestFlowAcceptsALeaseAfterTheOneBeforeEndedOrRanOut(t *testing.T) {
	complete := Op{ID: "op-w0-9", Kind: "complete", WF: "limit-0-1", Lease: "t1", Call: t0 + 300*1e6, Ret: t0 + 320*1e6, Outcome: outcomeOK}
	late := Op{ID: "op-w0-10", Kind: "complete", WF: "limit-0-2", Lease: "t2", Call: t0 + 3000*1e6, Ret: t0 + 3020*1e6, Outcome: outcomeFail}
	c := flowChecker(t, []Op{
		leaseOp("l1", "limit-0-1", "cust-1", "t1", 0, 2000),
		leaseOp("l2", "limit-0-2", "cust-1", "t2", 320, 2320),   // after l1's completion was sent
		leaseOp("l3", "limit-0-3", "cust-1", "t3", 2400, 4400),  // after l2 ran out (its worker completes later)
		leaseOp("l4", "limit-0-4", "cust-2", "t4", 5000, 4000),  // answered after it ran out: held for no sure moment
		leaseOp("l5", "limit-0-5", "cust-2", "t5", 4100, 6100),  // so l4 does not overlap it
		leaseOp("l6", "limit-0-6", "cust-3", "t6", 2500, 3000),  // with l3: two of the queue at once, its limit
		leaseOp("l7", "limit-0-7", "cust-4", "t7", 4395, 5000),  // l3 is cut by the tolerance: not three at once
		leaseOp("l8", "limit-0-8", "cust-4", "t8", 5000, 5500)}, // follows l7
		[]Op{complete, late})
	if found := anomaliesOf(c, propFlow); len(found) != 0 {
		t.Fatal(found)
	}
	if c.rep.Side.Flow.MaxLeased != 2 || c.rep.Side.Flow.MaxKey != 1 {
		t.Fatal(c.rep.Side.Flow)
	}
}

// A heartbeat accepted extends the lease: a lease of its key before the new expiry is a
// violation.
func TestFlowCountsAHeartbeatsExtension(t *testing.T) {
	beat := Op{ID: "op-w0-3", Kind: "heartbeat", WF: "limit-0-1", Lease: "t1", Call: t0 + 1500*1e6, Ret: t0 + 1510*1e6,
		LeaseExp: t0 + 3500*1e6, Outcome: outcomeOK}
	leases := []Op{leaseOp("l1", "limit-0-1", "cust-1", "t1", 0, 2000), leaseOp("l2", "limit-0-2", "cust-1", "t2", 2500, 4500)}
	c := bareChecker(t)
	c.meta.Config.Side = sideConfig{KeyMaxLeased: 1}
	for i := range leases {
		c.taskCalls = append(c.taskCalls, &leases[i])
	}
	c.taskCalls = append(c.taskCalls, &beat)
	c.checkFlow()
	mustFind(t, anomaliesOf(c, propFlow), "for key cust-1")
}

// -- schedules ------------------------------------------------------------------------

// fired adds an instance of the schedule for the nominal time n (seconds after base),
// started `late` milliseconds after it (negative: early).
func fired(c *checker, base time.Time, n int, late int64) string {
	nominal := base.Add(time.Duration(n) * time.Second)
	wf := scheduleID + "-" + nominal.UTC().Format(time.RFC3339)
	c.instances[wf] = instRow{WorkflowID: wf, Definition: defFire, State: "fired", Status: "COMPLETED"}
	c.history[wf] = []histRow{{WorkflowID: wf, Revision: 1, State: "fired", Status: "COMPLETED",
		Context: map[string]any{"nominal": nominal.UTC().Format(time.RFC3339)}, TimeUS: (nominal.UnixNano() + late*1e6) / 1000}}
	return wf
}

func scheduleChecker(t *testing.T, base time.Time) *checker {
	c := bareChecker(t)
	c.meta.Config.Side = sideConfig{Interval: 2 * time.Second}
	c.meta.Side = sideTimes{ScheduleCreated: base.UnixNano() - 1e9, SchedulePaused: base.Add(time.Minute).UnixNano()}
	return c
}

func writeActions(t *testing.T, c *checker, actions ...ScheduleAction) {
	j, err := createJSONL(filepath.Join(c.dir, "schedule.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		j.write(a)
	}
	if err := j.close(); err != nil {
		t.Fatal(err)
	}
}

var scheduleBase = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func TestScheduleAcceptsOneInstancePerNominalTime(t *testing.T) {
	c := scheduleChecker(t, scheduleBase)
	for n := 0; n <= 10; n += 2 {
		fired(c, scheduleBase, n, 30)
	}
	// 12 s failed for a reason of its own (its definition gone), 14 s fired again.
	fired(c, scheduleBase, 14, 10)
	writeActions(t, c, ScheduleAction{Nominal: scheduleBase.Add(12 * time.Second).UnixNano(), Outcome: "SCHEDULE_ACTION_OUTCOME_FAILED", Reason: "DEFINITION_NOT_FOUND"})
	c.checkSchedule()
	if len(c.anomalies) != 0 {
		t.Fatal(c.anomalies)
	}
	if s := c.rep.Side.Schedule; s.Fires != 7 || s.Explained != 1 {
		t.Fatal(s)
	}
}

func TestScheduleFlagsAMissingFireTheRecordDoesNotExplain(t *testing.T) {
	c := scheduleChecker(t, scheduleBase)
	fired(c, scheduleBase, 0, 30)
	fired(c, scheduleBase, 4, 30) // 2 s is missing
	// A skip without a reason explains nothing.
	writeActions(t, c, ScheduleAction{Nominal: scheduleBase.Add(2 * time.Second).UnixNano(), Outcome: "SCHEDULE_ACTION_OUTCOME_SKIPPED"})
	c.checkSchedule()
	mustFind(t, anomaliesOf(c, propSchedule), "no instance for nominal time 2026-12-01T10:00:02Z")
}

// A fire refused for one attempt alone (a draining replica) and recorded failed is a fire
// dropped: it had to be tried again.
func TestScheduleFlagsAFireDroppedForATransientRefusal(t *testing.T) {
	c := scheduleChecker(t, scheduleBase)
	fired(c, scheduleBase, 0, 30)
	fired(c, scheduleBase, 4, 30)
	writeActions(t, c, ScheduleAction{Nominal: scheduleBase.Add(2 * time.Second).UnixNano(), Outcome: "SCHEDULE_ACTION_OUTCOME_FAILED", Reason: "SHUTTING_DOWN"})
	c.checkSchedule()
	mustFind(t, anomaliesOf(c, propSchedule), "recorded its fire FAILED for SHUTTING_DOWN")
}

func TestScheduleFlagsAnEarlyStartAndADoubleFire(t *testing.T) {
	c := scheduleChecker(t, scheduleBase)
	fired(c, scheduleBase, 0, -200)
	// The same nominal time under another spelling: a second instance of one fire.
	wf := fired(c, scheduleBase, 2, 10)
	twin := scheduleID + "-2026-12-01T10:00:02.000Z"
	c.instances[twin] = c.instances[wf]
	c.history[twin] = c.history[wf]
	// And one started twice (two steps).
	wf4 := fired(c, scheduleBase, 4, 10)
	c.history[wf4] = append(c.history[wf4], histRow{WorkflowID: wf4, Revision: 2, State: "fired", Status: "COMPLETED"})
	c.checkSchedule()
	mustFind(t, anomaliesOf(c, propSchedule), "started 0.200s before its nominal time", "2 instances for one nominal time", "has 2 steps")
}

func TestScheduleFlagsAFireOffTheGridWhilePausedOrRecordedButAbsent(t *testing.T) {
	c := scheduleChecker(t, scheduleBase)
	fired(c, scheduleBase, 0, 10)
	fired(c, scheduleBase, 3, 10)  // not a multiple of 2 s
	fired(c, scheduleBase, 70, 10) // after the pause (60 s)
	writeActions(t, c, ScheduleAction{Nominal: scheduleBase.Add(80 * time.Second).UnixNano(), WF: "workflows/x",
		Outcome: "SCHEDULE_ACTION_OUTCOME_STARTED"})
	c.checkSchedule()
	mustFind(t, anomaliesOf(c, propSchedule), "is not one of every 2s", "after the schedule was paused",
		"recorded its fire of 2026-12-01T10:01:20Z as started, but no instance exists")
}

func TestScheduleFlagsNoFireAtAll(t *testing.T) {
	c := scheduleChecker(t, scheduleBase)
	c.checkSchedule()
	mustFind(t, anomaliesOf(c, propSchedule), "started no instance")
}
