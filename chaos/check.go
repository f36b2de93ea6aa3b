package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// What the database says, as dumped at the end of a run (postgres.go dumpTables).

type transition struct {
	From  string  `json:"from"`
	To    string  `json:"to"`
	Event *string `json:"event"`
}

// transitionList reads a history row's transitions in either of the forms the store
// writes: a list of {from, to, event} maps, or the compact "from>to@event from>to" string
// (state and event names cannot hold its separators).
type transitionList []transition

func (l *transitionList) UnmarshalJSON(data []byte) error {
	var compact string
	if err := json.Unmarshal(data, &compact); err != nil {
		var list []transition
		if err := json.Unmarshal(data, &list); err != nil {
			return err
		}
		*l = list
		return nil
	}
	out := transitionList{}
	for _, part := range strings.Fields(compact) {
		move, event, hasEvent := strings.Cut(part, "@")
		from, to, _ := strings.Cut(move, ">")
		t := transition{From: from, To: to}
		if hasEvent && event != "" {
			e := event
			t.Event = &e
		}
		out = append(out, t)
	}
	*l = out
	return nil
}

type stepError struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type armedTimer struct {
	TimerID string `json:"timer_id"`
	Target  string `json:"target"`
	DueTime string `json:"due_time"`
}

type histRow struct {
	WorkflowID  string         `json:"workflow_id"`
	Revision    int64          `json:"revision"`
	Event       *string        `json:"event"`
	Transitions transitionList `json:"transitions"`
	State       string         `json:"state"`
	Status      string         `json:"status"`
	Context     map[string]any `json:"context"`
	Error       *stepError     `json:"error"`
	Timers      []armedTimer   `json:"timers"`
	Actor       string         `json:"actor"`
	Input       map[string]any `json:"input"` // what the step took (a map item's: its task_id and item)
	TimeUS      int64          `json:"time_us"`
}

func (r *histRow) eventName() string {
	if r.Event == nil {
		return ""
	}
	return *r.Event
}

func (r *histRow) last() string { return r.str("last") }

func (r *histRow) str(field string) string {
	s, _ := r.Context[field].(string)
	return s
}

// num is a context field that is a number, if it is one.
func (r *histRow) num(field string) (int64, bool) {
	f, ok := r.Context[field].(float64)
	return int64(f), ok
}

func (r *histRow) digest() string { return digest(r.Context) }

func terminal(status string) bool {
	return status == "COMPLETED" || status == "FAILED" || status == "CANCELLED"
}

type instRow struct {
	WorkflowID string         `json:"workflow_id"`
	Definition string         `json:"definition"`
	State      string         `json:"state"`
	Status     string         `json:"status"`
	Context    map[string]any `json:"context"`
	Revision   int64          `json:"revision"`
}

type taskRow struct {
	WorkflowID string         `json:"workflow_id"`
	TaskID     string         `json:"task_id"`
	Revision   int64          `json:"revision"`
	State      string         `json:"state"`
	Status     string         `json:"status"`
	Attempt    int            `json:"attempt"`
	ItemIndex  *int           `json:"item_index"` // a map item's place
	Result     map[string]any `json:"result"`     // a map item's result, kept on its task
	LastError  *taskError     `json:"last_error"`
}

type taskError struct {
	Message string `json:"message"` // a worker's FailTask sends its operation's id
}

type timerRow struct {
	WorkflowID string `json:"workflow_id"`
	TimerID    string `json:"timer_id"`
	Revision   int64  `json:"revision"`
	Target     string `json:"target"`
	DueUS      int64  `json:"due_us"`
}

// anomaly is one way the run broke a promise, with the operation and instance concerned.
type anomaly struct {
	Property string `json:"property"`
	WF       string `json:"wf,omitempty"`
	Op       string `json:"op,omitempty"`
	Detail   string `json:"detail"`
}

// The properties, in the order the report lists them.
const (
	propAckedOnce      = "every acknowledged operation is in its instance's history exactly once, at the revision it was told"
	propFailedAbsent   = "no operation that definitely failed appears in a history"
	propUnknownOnce    = "every operation with an unknown outcome appears at most once"
	propNoPhantom      = "every step in history was asked for by an operation (or is the server's own: a timer, a task giving up)"
	propDense          = "revisions are dense from 1, and the instance row is its last revision"
	propSteps          = "every step is a transition its definition allows from the revision before it (state, event, reachability) and begins from that revision's context"
	propAnswers        = "every answer (a read or a write) shows the state and context history holds at the revision it names"
	propRetries        = "a request retried with its request id is answered as it was applied"
	propSignalsOnce    = "every accepted signal is applied exactly once"
	propTimers         = "every armed timer that was not disarmed fired exactly once, never early"
	propTasks          = "every task is finished at most once, and every acknowledged completion exactly once, by its own task"
	propDuplicates     = "a duplicate task completion is answered as the first one was, or refused, and never applied again"
	propLeases         = "a task lease is exclusive: no two workers hold one task at once, a heartbeat extends only the current lease, a finished task is never leased again"
	propWatch          = "every instance is followed by a watch stream that sees each revision in order, as history has it, with no gap or duplicate, through reconnects, and soon"
	propStates         = "every instance rests in a state its definition allows"
	propRecovered      = "no instance stays in recovery_required, and the work settles, after the faults stop"
	propRecoveryBound  = "after every fault, every replica serves a write again within the recovery bound"
	propPlan           = "the run did what it promised: its operations, and every fault of its schedule, with effect"
	propLinearizable   = "each instance is a linearizable compare-and-swap register of (revision, state, context) (porcupine), none inconclusive"
	propServerHealthy  = "no replica logs a traceback or a step that failed unexpectedly"
	recoveryBound      = 20 * time.Second                // from a fault's end (healed) to a write served by every replica
	watchDelayBound    = 20 * time.Second                // from a step to its arrival on a stream open before it was made, the database's outages left out
	retryableFailCodes = "Unavailable ResourceExhausted" // a refusal of this attempt alone: nothing said of the request
	busyReason         = "WORKFLOW_BUSY"                 // ABORTED: the instance was executing another request; this attempt alone
)

// linearTimeout is porcupine's time for one instance; past it, the instance is
// inconclusive, which fails the run.
var linearTimeout = 20 * time.Second

var propertyOrder = []string{propAckedOnce, propFailedAbsent, propUnknownOnce, propNoPhantom, propDense,
	propSteps, propAnswers, propRetries, propSignalsOnce, propOneInstance, propTimers, propTasks, propDuplicates, propLeases, propBeats,
	propFlow, propSchedule, propMapOnce, propChildOnce, propBulkOnce, propBulkPrefix, propReset, propWatch, propStates, propRecovered, propRecoveryBound, propPlan, propLinearizable, propServerHealthy}

// logical is one logical operation: all the attempts of one id.
type logical struct {
	id       string
	kind, wf string
	event    string // a signal's or resume's
	rid      string
	attempts []*Op
	acked    bool  // an attempt was answered with a step written
	ackRev   int64 // the revision that answer named
	ackRet   int64 // when the first such answer came
	unknown  bool  // no such answer, and some attempt's outcome is unknown
	call     int64 // the first attempt's call
	cas      bool
	exp      int64
	applied  []at // where the database has it
}

type at struct {
	wf  string
	rev int64
}

func isOpID(s string) bool { return strings.HasPrefix(s, "op-") }

// writes says whether an attempt's answer means that it wrote a step.
func writes(a *Op) bool {
	if a.Outcome != outcomeOK {
		return false
	}
	switch a.Kind {
	case "start":
		return a.Created
	case "signal", "sws":
		return a.Accepted
	case "resume", "cancel", "complete":
		return true
	case "fail":
		return a.TaskStatus == "FAILED" || a.TaskStatus == "TIMED_OUT"
	}
	return false
}

// stepOp is the operation a history row's step carries: the id recorded in `last` by
// every step a client asks for, or a cancel's reason; "" for the server's own steps.
func stepOp(prev, row *histRow) (id, kind string) {
	switch {
	case row.Revision == 1:
		return row.last(), "start"
	case row.Status == "CANCELLED" && (prev == nil || prev.Status != "CANCELLED"):
		if row.Error != nil {
			return row.Error.Message, "cancel"
		}
		return "", "cancel"
	}
	switch ev := row.eventName(); ev {
	case "after":
		return "", "timer"
	case "task_failed":
		if isOpID(row.last()) && (prev == nil || prev.last() != row.last()) {
			return row.last(), "fail"
		}
		return "", "task_failed"
	case "task_completed":
		return row.last(), "complete"
	default:
		return row.last(), ev
	}
}

type checker struct {
	dir       string
	meta      runMeta
	defs      map[string]*definition
	ops       []Op
	taskCalls []*Op // leases and heartbeats: what workers held, not steps
	familyOps []*Op // the workers' calls on chaos-batch's items and chaos-kid's tasks
	bulkOps   []*Op // the batch operations, the resets and the starts of chaos-tally
	logicals  map[string]*logical
	byWF      map[string][]*logical
	history   map[string][]histRow
	instances map[string]instRow
	tasks     map[string][]taskRow
	// A task by its last failure's message: a FailTask retried (no step) leaves only that.
	lastErrorOf map[string]taskRow
	timers      map[string][]timerRow
	watch       []WatchRec
	faults      []FaultRec
	anomalies   []anomaly
	checked     map[string]int
	rep         *report
}

func (c *checker) flag(prop, wf, op, format string, args ...any) {
	c.anomalies = append(c.anomalies, anomaly{Property: prop, WF: wf, Op: op, Detail: fmt.Sprintf(format, args...)})
}

// checkDir reads a run's directory and checks every property; the report says what was
// checked, what was found, and the run's figures.
func checkDir(dir string) (*report, error) {
	c := &checker{dir: dir, logicals: map[string]*logical{}, byWF: map[string][]*logical{},
		history: map[string][]histRow{}, instances: map[string]instRow{}, tasks: map[string][]taskRow{}, lastErrorOf: map[string]taskRow{},
		timers: map[string][]timerRow{}, checked: map[string]int{}}
	if err := c.load(); err != nil {
		return nil, err
	}
	c.rep = newReport(c)
	c.group()
	c.checkInstances()
	c.checkOperations()
	c.checkAnswers()
	c.checkRetries()
	c.checkDuplicates()
	c.checkLeases()
	c.checkBeats()
	c.checkSideWork()
	c.checkWatches()
	c.checkFinal()
	c.checkRun()
	c.checkLinearizable()
	c.rep.finish(c)
	return c.rep, nil
}

func (c *checker) load() error {
	data, err := os.ReadFile(filepath.Join(c.dir, "run.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &c.meta); err != nil {
		return err
	}
	if c.ops, err = readAll[Op](filepath.Join(c.dir, "history"), "*.jsonl"); err != nil {
		return err
	}
	if c.watch, err = readAll[WatchRec](filepath.Join(c.dir, "watch"), "*.jsonl"); err != nil {
		return err
	}
	if c.faults, err = readJSONL[FaultRec](filepath.Join(c.dir, "faults.jsonl")); err != nil {
		return err
	}
	// The definitions the run served (a run copies them into its directory).
	defDir := filepath.Join(c.dir, "definitions")
	if _, err := os.Stat(defDir); err != nil {
		defDir = filepath.Join(c.meta.Config.Repo, "chaos", "definitions")
	}
	if c.defs, err = loadDefinitions(defDir); err != nil {
		return err
	}
	db := filepath.Join(c.dir, "db")
	rows, err := readJSONL[histRow](filepath.Join(db, "history.jsonl"))
	if err != nil {
		return err
	}
	for _, r := range rows {
		c.history[r.WorkflowID] = append(c.history[r.WorkflowID], r)
	}
	for _, list := range c.history {
		sort.Slice(list, func(i, j int) bool { return list[i].Revision < list[j].Revision })
	}
	insts, err := readJSONL[instRow](filepath.Join(db, "instances.jsonl"))
	if err != nil {
		return err
	}
	for _, r := range insts {
		c.instances[r.WorkflowID] = r
		// The store keeps a finished instance's last context only in its instance row (its
		// last history row holds none of its own), as the server reads it back.
		if rows := c.history[r.WorkflowID]; len(rows) > 0 {
			last := &rows[len(rows)-1]
			if last.Context == nil && last.Revision == r.Revision {
				last.Context = r.Context
			}
		}
	}
	tasks, err := readJSONL[taskRow](filepath.Join(db, "tasks.jsonl"))
	if err != nil {
		return err
	}
	for _, t := range tasks {
		c.tasks[t.WorkflowID] = append(c.tasks[t.WorkflowID], t)
		if t.LastError != nil && t.LastError.Message != "" {
			c.lastErrorOf[t.LastError.Message] = t
		}
	}
	timers, err := readJSONL[timerRow](filepath.Join(db, "timers.jsonl"))
	if err != nil {
		return err
	}
	for _, t := range timers {
		c.timers[t.WorkflowID] = append(c.timers[t.WorkflowID], t)
	}
	return nil
}

// group gathers attempts into logical operations and finds where the database applied
// each.
func (c *checker) group() {
	for i := range c.ops {
		a := &c.ops[i]
		if a.Def == defBatch || a.Def == defKid {
			if a.Kind != "start" && a.Kind != "cancel" {
				// The work of a map item or a child's task: checked whole by checkFamily.
				c.familyOps = append(c.familyOps, a)
				continue
			}
		}
		if a.Def == defTally {
			// Batch operations and resets, and the tallies' starts: checkBulk.
			c.bulkOps = append(c.bulkOps, a)
			continue
		}
		if a.Kind == "lease" || a.Kind == "heartbeat" {
			c.taskCalls = append(c.taskCalls, a)
			continue
		}
		l := c.logicals[a.ID]
		if l == nil {
			l = &logical{id: a.ID, kind: a.Kind, wf: a.WF, event: a.Event, rid: a.RID, call: a.Call,
				cas: (a.Kind == "resume" || a.Kind == "cancel") && a.Exp > 0, exp: a.Exp}
			c.logicals[a.ID] = l
			c.byWF[a.WF] = append(c.byWF[a.WF], l)
		}
		l.attempts = append(l.attempts, a)
		if a.Call < l.call {
			l.call = a.Call
		}
	}
	for _, l := range c.logicals {
		for _, a := range l.attempts {
			switch {
			case writes(a):
				if !l.acked || a.Ret < l.ackRet {
					l.ackRet = a.Ret
				}
				if !l.acked {
					l.ackRev = a.Rev
				}
				l.acked = true
			case a.Outcome == outcomeUnknown:
				l.unknown = true
			}
		}
		if l.acked {
			l.unknown = false
		}
	}
	for wf, rows := range c.history {
		for i := range rows {
			var prev *histRow
			if i > 0 {
				prev = &rows[i-1]
			}
			if c.instances[wf].Definition == defTally {
				break // batch signals and resets (checkBulk)
			}
			id, kind := stepOp(prev, &rows[i])
			c.checked[propNoPhantom]++
			if kind == "start" && c.instances[wf].Definition == defFire {
				continue // the schedule's start (checkSchedule)
			}
			if def := c.instances[wf].Definition; def == defKid || (def == defBatch && kind != "start" && kind != "cancel") {
				continue // a map item's step, a child's end delivered, a child's own (checkFamily)
			}
			if id == "" {
				if kind != "timer" && kind != "task_failed" {
					c.flag(propNoPhantom, wf, "", "revision %d (%s) carries no operation id", rows[i].Revision, kind)
				}
				continue
			}
			l := c.logicals[id]
			if l == nil {
				c.flag(propNoPhantom, wf, id, "revision %d (%s) applied an operation nobody asked for", rows[i].Revision, kind)
				continue
			}
			l.applied = append(l.applied, at{wf, rows[i].Revision})
		}
	}
}

// checkOperations: every logical operation against where the database has it.
func (c *checker) checkOperations() {
	for _, l := range c.logicals {
		if l.kind == "get" {
			continue
		}
		for _, a := range l.applied {
			if a.wf != l.wf {
				c.flag(propNoPhantom, a.wf, l.id, "applied to %s at revision %d but it was sent to %s", a.wf, a.rev, l.wf)
			} else {
				c.checkAppliedAs(l, a.rev)
			}
		}
		switch {
		case l.acked:
			c.checked[propAckedOnce]++
			if l.kind == "signal" || l.kind == "sws" {
				c.checked[propSignalsOnce]++
			}
			switch {
			case len(l.applied) == 0:
				c.flag(propAckedOnce, l.wf, l.id, "%s acknowledged at revision %d is in no history (lost)", l.kind, l.ackRev)
				if l.kind == "signal" || l.kind == "sws" {
					c.flag(propSignalsOnce, l.wf, l.id, "accepted signal at revision %d was never applied", l.ackRev)
				}
			case len(l.applied) > 1:
				c.flag(propAckedOnce, l.wf, l.id, "%s acknowledged at revision %d is applied %d times: %v", l.kind, l.ackRev, len(l.applied), l.applied)
				if l.kind == "signal" || l.kind == "sws" {
					c.flag(propSignalsOnce, l.wf, l.id, "accepted signal applied %d times", len(l.applied))
				}
			case l.applied[0].rev != l.ackRev:
				c.flag(propAckedOnce, l.wf, l.id, "%s acknowledged at revision %d is in history at revision %d", l.kind, l.ackRev, l.applied[0].rev)
			}
		case l.unknown:
			c.checked[propUnknownOnce]++
			c.rep.Unknown.Logical++
			if len(l.applied) > 0 {
				c.rep.Unknown.Applied++
			} else {
				c.rep.Unknown.NotApplied++
			}
			if len(l.applied) > 1 {
				c.flag(propUnknownOnce, l.wf, l.id, "%s with an unknown outcome is applied %d times: %v", l.kind, len(l.applied), l.applied)
			}
		default:
			c.checked[propFailedAbsent]++
			a := l.attempts[len(l.attempts)-1] // a logical is made by its first attempt
			if len(l.applied) > 0 {
				c.flag(propFailedAbsent, l.wf, l.id, "%s answered %s %s (nothing done) is in history at revision %d", l.kind, a.Code, firstOf(a.Reason, a.Rejection, a.TaskStatus), l.applied[0].rev)
			}
			if t, ok := c.lastErrorOf[l.id]; ok && l.kind == "fail" && refusedEveryTime(l) {
				c.flag(propFailedAbsent, l.wf, l.id, "fail answered %s %s (nothing done) is task %s's last error (attempt %d, %s)", a.Code, a.Reason, t.TaskID, t.Attempt, t.Status)
			}
		}
	}
}

// refusedEveryTime: every attempt was answered as not done (a FailTask that retried the
// task is answered OK without a step, so it is neither acknowledged nor unknown here).
func refusedEveryTime(l *logical) bool {
	for _, a := range l.attempts {
		if a.Outcome != outcomeFail {
			return false
		}
	}
	return len(l.attempts) > 0
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func (c *checker) checkInstances() {
	for wf, rows := range c.history {
		c.checked[propDense]++
		for i, r := range rows {
			if r.Revision != int64(i+1) {
				c.flag(propDense, wf, "", "history has revision %d where %d belongs", r.Revision, i+1)
				break
			}
		}
		inst, ok := c.instances[wf]
		last := rows[len(rows)-1]
		switch {
		case !ok:
			c.flag(propDense, wf, "", "history without an instance row")
		case inst.Revision != last.Revision || inst.State != last.State || inst.Status != last.Status || fmt.Sprint(inst.Context) != fmt.Sprint(last.Context):
			c.flag(propDense, wf, "", "instance row (revision %d, %s %s) is not its last history row (revision %d, %s %s)",
				inst.Revision, inst.State, inst.Status, last.Revision, last.State, last.Status)
		}
		def := c.defs[inst.Definition]
		if def == nil {
			c.flag(propStates, wf, "", "runs definition %q, which the run did not serve", inst.Definition)
			continue
		}
		for _, r := range rows {
			c.checked[propStates]++
			if !def.allows(r.State, r.Status) {
				c.flag(propStates, wf, "", "revision %d rests in %s with status %s, which %s does not allow", r.Revision, r.State, r.Status, def.Name)
			}
		}
		if inst.Definition != defTally { // its steps come from batches and resets: checkBulk
			c.checkSteps(wf, def, rows)
		}
		c.checkTimers(wf, rows)
		if inst.Definition == defOrder || inst.Definition == defLimited {
			c.checkTasks(wf, rows)
		}
	}
	for wf := range c.instances {
		if _, ok := c.history[wf]; !ok {
			c.flag(propDense, wf, "", "instance row without history")
		}
	}
}

func parseTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

func (c *checker) checkTimers(wf string, rows []histRow) {
	armedRows := map[string]bool{}
	for _, t := range c.timers[wf] {
		armedRows[t.TimerID] = true
	}
	for i := range rows {
		row := &rows[i]
		for _, t := range row.Timers {
			c.checked[propTimers]++
			due := parseTime(t.DueTime)
			if i+1 == len(rows) {
				if !armedRows[t.TimerID] {
					c.flag(propTimers, wf, "", "timer %s armed at revision %d is neither fired, disarmed nor armed", t.TimerID, row.Revision)
				} else if due < c.meta.Dumped-int64(5*time.Second) && c.meta.Settled != 0 {
					c.flag(propTimers, wf, "", "timer %s was due %.1fs before the end and never fired", t.TimerID, float64(c.meta.Dumped-due)/1e9)
				}
				continue
			}
			next := &rows[i+1]
			if next.eventName() == "after" {
				fired := next.TimeUS * 1000
				if fired < due {
					c.early(wf, rows, i+1, t, due)
				}
			}
		}
		if row.eventName() == "after" && (i == 0 || len(rows[i-1].Timers) == 0) {
			c.flag(propTimers, wf, "", "revision %d fired a timer, but the revision before armed none", row.Revision)
		}
	}
	last := rows[len(rows)-1]
	for _, t := range c.timers[wf] {
		found := false
		for _, a := range last.Timers {
			found = found || a.TimerID == t.TimerID
		}
		if !found {
			c.flag(propTimers, wf, "", "timer %s is still armed, but the instance (at revision %d, %s %s) did not arm it last", t.TimerID, last.Revision, last.State, last.Status)
		}
	}
}

// early reports a timer step (rows[s]) that came before the due time of the timer the
// step before it armed: a second firing of an earlier timer, or a firing ahead of time.
func (c *checker) early(wf string, rows []histRow, s int, t armedTimer, due int64) {
	fired := rows[s].TimeUS * 1000
	for j := s - 2; j >= 0; j-- {
		for _, old := range rows[j].Timers {
			if parseTime(old.DueTime) <= fired && rows[j+1].eventName() == "after" {
				c.flag(propTimers, wf, "", "timer %s (armed at revision %d) fired twice: at revisions %d and %d",
					old.TimerID, rows[j].Revision, rows[j+1].Revision, rows[s].Revision)
				return
			}
		}
	}
	c.flag(propTimers, wf, "", "revision %d fired timer %s %.3fs before it was due", rows[s].Revision, t.TimerID, float64(due-fired)/1e9)
}

// checkTasks: each entry of the task state schedules one task (its id: the entering
// revision); the next step finishes it (completed, given up) or cancels it.
func (c *checker) checkTasks(wf string, rows []histRow) {
	byID := map[string]taskRow{}
	for _, t := range c.tasks[wf] {
		byID[t.TaskID] = t
	}
	entered := map[int64]bool{}
	for i := range rows {
		row := &rows[i]
		if row.State != "work" || row.Status != "RUNNING" || (row.Revision != 1 && len(row.Transitions) == 0) {
			continue
		}
		c.checked[propTasks]++
		entered[row.Revision] = true
		id := fmt.Sprint(row.Revision)
		task, ok := byID[id]
		if !ok {
			c.flag(propTasks, wf, "", "revision %d entered the task state but scheduled no task", row.Revision)
			continue
		}
		want := "open"
		if i+1 < len(rows) {
			switch next := &rows[i+1]; next.eventName() {
			case "task_completed":
				want = "COMPLETED"
			case "task_failed":
				want = "FAILED|TIMED_OUT"
			default:
				want = "CANCELLED"
			}
		}
		got := task.Status
		if got == "SCHEDULED" || got == "LEASED" || got == "BACKOFF" {
			got = "open"
		}
		if !strings.Contains("|"+want+"|", "|"+got+"|") {
			c.flag(propTasks, wf, "", "task %s is %s, but history says it should be %s", id, task.Status, want)
		}
	}
	for id := range byID {
		var rev int64
		fmt.Sscan(id, &rev)
		if !entered[rev] {
			c.flag(propTasks, wf, "", "task %s has no step that scheduled it", id)
		}
	}
	// Each completion (or failure that gave up) applied must have finished its own task.
	for _, l := range c.byWF[wf] {
		if l.kind != "complete" && l.kind != "fail" {
			continue
		}
		task := l.attempts[0].Task
		for _, a := range l.applied {
			if a.rev-1 == task {
				continue
			}
			if int(task) < len(rows) && (rows[task].eventName() == "task_completed" || rows[task].eventName() == "task_failed") {
				c.flag(propTasks, wf, l.id, "task %d completed twice: finished at revision %d, and this %s applied again at revision %d (as if it were task %d's)",
					task, task+1, l.kind, a.rev, a.rev-1)
			} else {
				c.flag(propTasks, wf, l.id, "the %s of task %d was applied at revision %d, as the result of task %d", l.kind, task, a.rev, a.rev-1)
			}
		}
	}
}

func (c *checker) checkWatches() {
	type key struct{ proc, wf string }
	type follow struct {
		last     int64
		ended    bool
		sessions int
		opened   int64 // when the current stream was opened
	}
	follows := map[key]*follow{}
	var order []key
	down := outages(c.faults)
	for _, w := range c.watch {
		k := key{w.Proc, w.WF}
		f := follows[k]
		if f == nil {
			f = &follow{}
			follows[k] = f
			order = append(order, k)
		}
		switch w.What {
		case "open":
			f.sessions++
			f.opened = w.T
			c.rep.Watch.Sessions++
			if w.After > 0 {
				c.rep.Watch.Reconnects++
			}
		case "msg":
			c.rep.Watch.Messages++
			rows := c.history[w.WF]
			switch {
			case w.Rev == f.last+1:
			case w.Rev <= f.last:
				c.flag(propWatch, w.WF, "", "%s: revision %d arrived again (or out of order) after %d, in stream session %d", w.Proc, w.Rev, f.last, w.Session)
			default:
				c.flag(propWatch, w.WF, "", "%s: revision %d arrived after %d: %d revision(s) missing, in stream session %d", w.Proc, w.Rev, f.last, w.Rev-f.last-1, w.Session)
			}
			if w.Rev >= 1 && int(w.Rev) <= len(rows) {
				r := rows[w.Rev-1]
				// A revision made while the stream was open: how long it took to arrive.
				if made := r.TimeUS * 1000; f.opened != 0 && f.opened < made {
					delay := w.T - made
					// No server can read a revision from a database that is down: the
					// bound runs while it is up, as the recovery bound runs from a
					// fault's end.
					up := delay - down.within(made, w.T)
					c.rep.Watch.LiveMessages++
					c.rep.Watch.MaxDelayS = max(c.rep.Watch.MaxDelayS, float64(delay)/1e9)
					c.rep.Watch.MaxUpDelayS = max(c.rep.Watch.MaxUpDelayS, float64(up)/1e9)
					if up > int64(watchDelayBound) {
						c.flag(propWatch, w.WF, "", "%s: revision %d reached a stream open since before it was made only %.1fs later, %.1fs of it with the database up (bound %s)",
							w.Proc, w.Rev, float64(delay)/1e9, float64(up)/1e9, watchDelayBound)
					}
				}
				if r.State != w.State || r.Status != w.Status || r.last() != w.Last || (w.Ctx != "" && w.Ctx != r.digest()) {
					c.flag(propWatch, w.WF, "", "%s: revision %d streamed as %s %s %q (context %s), history has %s %s %q (context %s)",
						w.Proc, w.Rev, w.State, w.Status, w.Last, w.Ctx, r.State, r.Status, r.last(), r.digest())
				}
			} else {
				c.flag(propWatch, w.WF, "", "%s: revision %d streamed, but history has %d revisions", w.Proc, w.Rev, len(rows))
			}
			if w.Rev > f.last {
				f.last = w.Rev
			}
		case "end":
			f.ended = true
		}
	}
	followed := map[string]bool{}
	for _, k := range order {
		f := follows[k]
		inst, ok := c.instances[k.wf]
		if !ok {
			continue // never created: nothing to see
		}
		c.checked[propWatch]++
		if !followed[k.wf] {
			followed[k.wf] = true
			c.rep.Watch.Followed++
		}
		if f.last < inst.Revision {
			c.flag(propWatch, k.wf, "", "%s: the stream stopped at revision %d of %d", k.proc, f.last, inst.Revision)
		}
	}
	if c.meta.Config.Watch == "all" {
		// Every instance the run made is followed, from revision 0 to its last.
		for _, wf := range sortedKeys(c.instances) {
			if !followed[wf] {
				c.flag(propWatch, wf, "", "no watch stream followed this instance")
			}
		}
	}
}

func (c *checker) checkFinal() {
	f := c.meta.Final
	c.checked[propRecovered]++
	if c.meta.Settled == 0 {
		c.flag(propRecovered, "", "", "the work did not settle after the faults stopped: %d open tasks, %d armed timers, recovery_required %v %s",
			f.OpenTasks, f.ArmedTimers, f.Recovery, f.SettleError)
	}
	for replica, n := range f.Recovery {
		if n > 0 {
			c.flag(propRecovered, "", "", "%s still has %d instances in recovery_required after the faults stopped", replica, n)
		}
	}
}

func (c *checker) checkLinearizable() {
	var wfs []string
	for wf := range c.history {
		if c.instances[wf].Definition != defTally { // no register: batches and resets step it (checkBulk)
			wfs = append(wfs, wf)
		}
	}
	sort.Strings(wfs)
	drawn := 0
	for _, wf := range wfs {
		ops := linearOps(wf, c.defs[c.instances[wf].Definition], c.byWF[wf], c.history[wf])
		c.checked[propLinearizable]++
		res, why := linearizable(ops, linearTimeout)
		switch res {
		case porcupine.Ok:
			c.rep.Linear.Ok++
		case porcupine.Unknown:
			c.rep.Linear.TimedOut++
			c.flag(propLinearizable, wf, "", "inconclusive: porcupine did not decide within %s (%d operations)", linearTimeout, len(ops))
		case porcupine.Illegal:
			c.rep.Linear.Illegal++
			c.flag(propLinearizable, wf, "", "%s", why)
			if drawn < 5 {
				drawn++
				_, info := porcupine.CheckOperationsVerbose(registerModel, ops, linearTimeout)
				porcupine.VisualizePath(registerModel, info, filepath.Join(c.dir, "linear-"+wf+".html"))
			}
		}
		c.rep.Linear.Operations += len(ops)
	}
}

// downtime is the union of the windows in which the database was down or unreachable,
// in order and apart.
type downtime [][2]int64

// outages are the windows of the faults that take the database away (restarts of it or
// of one of its nodes, a stall of all its traffic), from the fault's start to its end.
func outages(faults []FaultRec) downtime {
	var spans [][2]int64
	for _, f := range faults {
		if faultGroup[f.Kind] == "db" && f.End > f.Start {
			spans = append(spans, [2]int64{f.Start, f.End})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i][0] < spans[j][0] })
	var out downtime
	for _, s := range spans {
		if n := len(out); n > 0 && s[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], s[1])
			continue
		}
		out = append(out, s)
	}
	return out
}

// within is how much of [from, to] the database was down.
func (d downtime) within(from, to int64) int64 {
	var sum int64
	for _, s := range d {
		if lo, hi := max(s[0], from), min(s[1], to); hi > lo {
			sum += hi - lo
		}
	}
	return sum
}
