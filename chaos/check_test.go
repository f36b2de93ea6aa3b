package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runFixture is a run directory made by hand: the checker reads it as it reads a real one.
type runFixture struct {
	ops    []Op
	rows   []histRow
	watch  []WatchRec
	timers []timerRow
	tasks  []taskRow
	faults []FaultRec
	config *runConfig
	final  final
}

const t0 = int64(1_800_000_000_000_000_000)

func ev(s string) *string { return &s }

func row(wf string, rev int64, event, state, status, last string, at int64) histRow {
	r := histRow{WorkflowID: wf, Revision: rev, State: state, Status: status,
		Context: map[string]any{"last": last}, TimeUS: at / 1000}
	if event != "" {
		r.Event = ev(event)
		r.Transitions = []transition{{From: state, To: state, Event: ev(event)}}
	}
	return r
}

// chain fills in what every step of the suite's definitions records: the revision it was
// computed for (`at`) and the `last` of the revision before (`prev`).
func chain(rows []histRow) []histRow {
	for i := range rows {
		ctx := map[string]any{}
		for k, v := range rows[i].Context {
			ctx[k] = v
		}
		if i > 0 && rows[i].WorkflowID == rows[i-1].WorkflowID {
			ctx["prev"] = rows[i-1].last()
			ctx["at"] = float64(rows[i].Revision)
		}
		rows[i].Context = ctx
	}
	return rows
}

// answered fills in an answer from the history row at its revision, as a server that
// keeps its promises answers.
func answered(op Op, rows []histRow) Op {
	for i := range rows {
		r := &rows[i]
		if r.WorkflowID == op.WF && r.Revision == op.Rev {
			op.State, op.Status, op.Last, op.Prev, op.Ctx = r.State, r.Status, r.last(), r.str("prev"), r.digest()
			op.At, _ = r.num("at")
		}
	}
	return op
}

func okOp(id, kind, wf string, call, ret, rev int64) Op {
	op := Op{Proc: "c0", ID: id, Kind: kind, WF: wf, Call: call, Ret: ret, Outcome: outcomeOK, Rev: rev, Status: "RUNNING"}
	switch kind {
	case "start":
		op.Created = true
	case "signal":
		op.Accepted, op.Event = true, "note"
	}
	return op
}

// account: a clean history of one account, started and noted twice.
func account() *runFixture {
	wf := "acct-0-0"
	f := &runFixture{
		ops: []Op{
			okOp("op-c0-1", "start", wf, t0, t0+10, 1),
			okOp("op-c0-2", "signal", wf, t0+20, t0+30, 2),
			okOp("op-c0-3", "signal", wf, t0+40, t0+50, 3),
			okOp("op-c0-4", "get", wf, t0+60, t0+70, 3),
		},
		rows: chain([]histRow{
			row(wf, 1, "", "active", "RUNNING", "op-c0-1", t0+5),
			row(wf, 2, "note", "active", "RUNNING", "op-c0-2", t0+25),
			row(wf, 3, "note", "active", "RUNNING", "op-c0-3", t0+45),
		}),
		watch: []WatchRec{
			{Proc: "v0", WF: wf, What: "open"},
			{Proc: "v0", WF: wf, What: "msg", Rev: 1, State: "active", Status: "RUNNING", Last: "op-c0-1"},
			{Proc: "v0", WF: wf, What: "msg", Rev: 2, State: "active", Status: "RUNNING", Last: "op-c0-2"},
			{Proc: "v0", WF: wf, What: "error", Code: "closed"},
			{Proc: "v0", WF: wf, Session: 1, What: "open", After: 2},
			{Proc: "v0", WF: wf, Session: 1, What: "msg", Rev: 3, State: "active", Status: "RUNNING", Last: "op-c0-3"},
		},
	}
	for i := range f.ops {
		f.ops[i] = answered(f.ops[i], f.rows)
	}
	return f
}

func (f *runFixture) check(t *testing.T) *report {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"history", "watch", "db"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	put := func(path string, items ...any) {
		j, err := createJSONL(filepath.Join(dir, path))
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			j.write(it)
		}
		if err := j.close(); err != nil {
			t.Fatal(err)
		}
	}
	var ops, rows, watch, timers, insts []any
	for _, o := range f.ops {
		ops = append(ops, o)
	}
	last := map[string]histRow{}
	for _, r := range f.rows {
		rows = append(rows, r)
		last[r.WorkflowID] = r
	}
	for wf, r := range last {
		insts = append(insts, instRow{WorkflowID: wf, Definition: prefixDef[strings.Split(wf, "-")[0]],
			State: r.State, Status: r.Status, Context: r.Context, Revision: r.Revision})
	}
	for _, w := range f.watch {
		watch = append(watch, w)
	}
	for _, tm := range f.timers {
		timers = append(timers, tm)
	}
	put("history/c0.jsonl", ops...)
	put("watch/v0.jsonl", watch...)
	put("db/history.jsonl", rows...)
	put("db/instances.jsonl", insts...)
	var tasks []any
	for _, tk := range f.tasks {
		tasks = append(tasks, tk)
	}
	put("db/tasks.jsonl", tasks...)
	put("db/timers.jsonl", timers...)
	var faults []any
	for _, f := range f.faults {
		faults = append(faults, f)
	}
	put("faults.jsonl", faults...)
	if err := copyDefinitions("definitions", filepath.Join(dir, "definitions")); err != nil {
		t.Fatal(err)
	}
	meta := runMeta{Config: runConfig{Size: "test"}, Started: t0, Settled: t0 + 1e9, Dumped: t0 + 2e9, Ended: t0 + 3e9, Final: f.final}
	if f.config != nil {
		meta.Config = *f.config
	}
	if err := writeJSON(filepath.Join(dir, "run.json"), meta); err != nil {
		t.Fatal(err)
	}
	rep, err := checkDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func expectAnomaly(t *testing.T, rep *report, prop, words string) {
	t.Helper()
	for _, a := range rep.List {
		if a.Property == prop && strings.Contains(a.Detail, words) {
			return
		}
	}
	t.Fatalf("no anomaly of %q saying %q; got:\n%s", prop, words, rep.text())
}

func TestACleanHistoryHasNoAnomaly(t *testing.T) {
	if rep := account().check(t); rep.Anomalies != 0 {
		t.Fatalf("a clean history has anomalies:\n%s", rep.text())
	}
}

func TestAnAcknowledgedSignalMissingFromHistoryIsReported(t *testing.T) {
	f := account()
	f.ops = append(f.ops, okOp("op-c0-9", "signal", "acct-0-0", t0+52, t0+55, 4))
	rep := f.check(t)
	expectAnomaly(t, rep, propAckedOnce, "is in no history")
	expectAnomaly(t, rep, propSignalsOnce, "never applied")
	expectAnomaly(t, rep, propLinearizable, "cannot")
}

func TestAnOperationThatFailedButIsInHistoryIsReported(t *testing.T) {
	f := account()
	f.ops[2] = Op{Proc: "c0", ID: "op-c0-3", Kind: "signal", WF: "acct-0-0", Call: t0 + 40, Ret: t0 + 50,
		Outcome: outcomeFail, Code: "FailedPrecondition", Reason: "NOT_RUNNING"}
	expectAnomaly(t, f.check(t), propFailedAbsent, "is in history at revision 3")
}

func TestAnUnknownOperationAppliedTwiceIsReported(t *testing.T) {
	f := account()
	f.ops[2] = Op{Proc: "c0", ID: "op-c0-3", Kind: "signal", WF: "acct-0-0", Call: t0 + 40, Ret: t0 + 50, Outcome: outcomeUnknown, Code: "DeadlineExceeded"}
	f.rows = append(f.rows, row("acct-0-0", 4, "note", "active", "RUNNING", "op-c0-3", t0+80))
	f.watch = f.watch[:3] // this watcher stopped early: not the point here
	rep := f.check(t)
	expectAnomaly(t, rep, propUnknownOnce, "applied 2 times")
}

func TestAStepNobodyAskedForIsReported(t *testing.T) {
	f := account()
	f.rows = append(f.rows, row("acct-0-0", 4, "note", "active", "RUNNING", "op-c9-1", t0+80))
	expectAnomaly(t, f.check(t), propNoPhantom, "nobody asked for")
}

func TestAGapInRevisionsIsReported(t *testing.T) {
	f := account()
	f.rows[2].Revision = 4
	expectAnomaly(t, f.check(t), propDense, "revision 4 where 3 belongs")
}

func TestAWatchStreamThatRepeatsOrSkipsARevisionIsReported(t *testing.T) {
	f := account()
	f.watch[4].After = 1
	f.watch = append(f.watch[:5], WatchRec{Proc: "v0", WF: "acct-0-0", Session: 1, What: "msg", Rev: 2, State: "active", Status: "RUNNING", Last: "op-c0-2"}, f.watch[5])
	expectAnomaly(t, f.check(t), propWatch, "arrived again")
	g := account()
	g.watch = append(g.watch[:2], g.watch[3:]...) // revision 2 never arrived
	expectAnomaly(t, g.check(t), propWatch, "missing")
}

func TestAWatchBoundLeavesOutTheDatabasesOutages(t *testing.T) {
	// Revision 3 is made at t0 and reaches a stream open since before it 25 s later.
	late := func(faults ...FaultRec) *runFixture {
		f := account()
		f.watch[4].T = t0 - int64(time.Millisecond)
		f.watch[5].T = t0 + int64(25*time.Second)
		f.faults = faults
		return f
	}
	down := func(kind string, from, to time.Duration) FaultRec {
		return FaultRec{Seq: 1, Kind: kind, Start: t0 + int64(from), End: t0 + int64(to), Recovered: t0 + int64(to)}
	}
	expectAnomaly(t, late().check(t), propWatch, "25.0s later, 25.0s of it with the database up")
	// A replica killed is no outage of the database: the bound still runs.
	expectAnomaly(t, late(down(faultKill, time.Second, 20*time.Second)).check(t), propWatch, "with the database up")
	// A short outage leaves 23 s: still late.
	expectAnomaly(t, late(down(faultWorkerRestart, time.Second, 3*time.Second)).check(t), propWatch, "23.0s of it with the database up")
	// A worker down for 19 s, overlapping a stall of 2 s: 25 - 20 = 5 s with it up.
	rep := late(down(faultWorkerRestart, time.Second, 20*time.Second), down(faultStall, 18*time.Second, 21*time.Second)).check(t)
	for _, a := range rep.List {
		if a.Property == propWatch {
			t.Fatalf("a revision 5 s late with the database up was reported: %s", a.Detail)
		}
	}
	if got := rep.Watch.MaxUpDelayS; got < 4.9 || got > 5.1 {
		t.Fatalf("the slowest revision with the database up: %.2fs, want 5", got)
	}
}

func TestATimerThatFiresTwiceIsReported(t *testing.T) {
	wf := "tick-0-0"
	armed := func(rev int64, at int64) []armedTimer {
		return []armedTimer{{TimerID: string(rune('0'+rev)) + ".0", Target: "counted",
			DueTime: time.Unix(0, at+int64(time.Second)).UTC().Format(time.RFC3339Nano)}}
	}
	tick := func(rev int64, at int64) histRow {
		r := row(wf, rev, "after", "ticking", "RUNNING", fmt.Sprintf("tick@%d", rev), at)
		r.Transitions = []transition{{From: "ticking", To: "counted", Event: ev("after")}, {From: "counted", To: "ticking"}}
		return r
	}
	r1 := row(wf, 1, "", "ticking", "RUNNING", "op-c0-1", t0)
	r1.Timers = armed(1, t0)
	r2 := tick(2, t0+int64(time.Second)+1000)
	r2.Timers = armed(2, t0+int64(time.Second)+1000)
	r3 := tick(3, t0+int64(time.Second)+5000000) // 5 ms later
	r3.Timers = armed(3, t0+int64(time.Second)+5000000)
	f := &runFixture{
		ops:    []Op{okOp("op-c0-1", "start", wf, t0-100, t0+100, 1)},
		rows:   chain([]histRow{r1, r2, r3}),
		timers: []timerRow{{WorkflowID: wf, TimerID: "3.0", Revision: 3}},
	}
	expectAnomaly(t, f.check(t), propTimers, "fired twice")
}

func TestHistoryTransitionsReadInEitherStoredForm(t *testing.T) {
	var compact, listed histRow
	if err := json.Unmarshal([]byte(`{"transitions": "a>b@go b>c"}`), &compact); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"transitions": [{"from": "a", "to": "b", "event": "go"}, {"from": "b", "to": "c", "event": null}]}`), &listed); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]transitionList{"compact": compact.Transitions, "listed": listed.Transitions} {
		if len(got) != 2 || got[0].From != "a" || got[0].To != "b" || got[0].Event == nil || *got[0].Event != "go" ||
			got[1].From != "b" || got[1].To != "c" || got[1].Event != nil {
			t.Fatalf("%s: %+v", name, got)
		}
	}
	var empty histRow
	if err := json.Unmarshal([]byte(`{"transitions": ""}`), &empty); err != nil || len(empty.Transitions) != 0 {
		t.Fatalf("empty: %v %+v", err, empty.Transitions)
	}
}
