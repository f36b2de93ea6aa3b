package main

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// One instance as a register whose value is (revision, state, context). Every step is a
// write that moves the register from revision r-1 to r (and its caller was told r): to a
// state the definition lets the step's cause reach from the state the register was in
// (guards aside), and, where the definition keeps the chain, computed from the register's
// context (its `prev` is the register's `last`, its `at` is r). A resume or cancel with an
// expected revision is a compare-and-swap; a read sees the whole value; a refusal for a
// revision mismatch saw another revision than the one expected (and names the one it saw).
const (
	regWrite   = iota // a step: the register goes from rev-1 to rev
	regCAS            // a step that expected exp: the register was exp, is now exp+1 = rev
	regCASFail        // expected exp, refused: the register was not exp (it was actual, if known)
	regRead           // the register was (rev, state, context)
	regExists         // the instance existed: the register was at least 1
)

// regValue is the register's value: what a read sees. last is the context's `last`,
// which the next step's `prev` must be.
type regValue struct {
	rev   int64
	state string
	last  string
	ctx   string // the context's digest
}

type regIn struct {
	kind  int
	exp   int64
	op    string      // the operation, for reports
	def   *definition // the instance's definition (nil: states and contexts unchecked)
	cause string      // what the step was: start, cancel, a history event (after, task_completed, ...)
}

type regOut struct {
	rev    int64
	state  string // "": not known (an older history); only the revision is checked
	status string
	last   string
	prev   string
	at     int64
	ctx    string
	actual int64
}

func (o regOut) value() regValue { return regValue{o.rev, o.state, o.last, o.ctx} }

// follows says whether a step (in, out) may be taken from the register's value s.
func follows(s regValue, in regIn, out regOut) bool {
	if out.rev != s.rev+1 {
		return false
	}
	if in.def == nil || out.state == "" || in.cause == "start" || out.status == "FAILED" {
		return true
	}
	if s.state == "" && s.rev > 0 {
		return true // the value before came from an answer that did not show it
	}
	if in.cause == "cancel" {
		return out.state == s.state && (s.ctx == "" || out.ctx == s.ctx)
	}
	if !in.def.reaches(s.state, out.state, in.cause) {
		return false
	}
	if in.def.chained() && (out.prev != s.last || out.at != out.rev) {
		return false
	}
	return true
}

var registerModel = porcupine.Model{
	Init: func() any { return regValue{} },
	Step: func(state, input, output any) (bool, any) {
		s := state.(regValue)
		in, out := input.(regIn), output.(regOut)
		switch in.kind {
		case regWrite:
			if follows(s, in, out) {
				return true, out.value()
			}
		case regCAS:
			if s.rev == in.exp && follows(s, in, out) {
				return true, out.value()
			}
		case regCASFail:
			return s.rev != in.exp && (out.actual == 0 || s.rev == out.actual), s
		case regRead:
			if out.state == "" || out.rev == 0 {
				return s.rev == out.rev, s
			}
			return s == out.value(), s
		case regExists:
			return s.rev >= 1, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regIn), output.(regOut)
		switch in.kind {
		case regWrite:
			return fmt.Sprintf("%s: %s -> %d %s (last %s, prev %s)", in.op, in.cause, out.rev, out.state, out.last, out.prev)
		case regCAS:
			return fmt.Sprintf("%s: cas(%d) %s -> %d %s (last %s, prev %s)", in.op, in.exp, in.cause, out.rev, out.state, out.last, out.prev)
		case regCASFail:
			return fmt.Sprintf("%s: cas(%d) refused, at %d", in.op, in.exp, out.actual)
		case regRead:
			return fmt.Sprintf("%s: read %d %s (last %s)", in.op, out.rev, out.state, out.last)
		default:
			return fmt.Sprintf("%s: exists", in.op)
		}
	},
	DescribeState: func(state any) string {
		s := state.(regValue)
		return fmt.Sprintf("%d %s (last %s)", s.rev, s.state, s.last)
	},
}

// forever stands for "no answer was seen": the operation may take effect any time after
// its call.
const forever = int64(math.MaxInt64 / 2)

// causeOfOp is what a logical operation's step is, as the register model reads it.
func causeOfOp(l *logical) string {
	switch l.kind {
	case "start", "cancel":
		return l.kind
	case "complete":
		return "task_completed"
	case "fail":
		return "task_failed"
	case "sws":
		// A signal-with-start that created the instance is its start (revision 1 carries
		// the event too); otherwise it is its event.
		if (l.acked && l.ackRev == 1) || (len(l.applied) == 1 && l.applied[0].rev == 1) {
			return "start"
		}
	}
	return l.event
}

// outOfAnswer is what an answer said of the register.
func outOfAnswer(a *Op) regOut {
	return regOut{rev: a.Rev, state: a.State, status: a.Status, last: a.Last, prev: a.Prev, at: a.At, ctx: a.Ctx}
}

// outOfRow is what history says a step left in the register.
func outOfRow(r *histRow) regOut {
	at, _ := r.num("at")
	return regOut{rev: r.Revision, state: r.State, status: r.Status, last: r.last(), prev: r.str("prev"), at: at, ctx: r.digest()}
}

// linearOps builds the register history of one instance: the client-visible steps with
// their invocation intervals and answers (as the callers saw them), the steps the server
// took on its own (timers, tasks given up) from the time their step began, and the reads.
func linearOps(wf string, def *definition, logicals []*logical, rows []histRow) []porcupine.Operation {
	var ops []porcupine.Operation
	covered := map[int64]bool{}
	for _, l := range logicals {
		in := regIn{kind: regWrite, op: l.id, def: def, cause: causeOfOp(l)}
		if l.cas {
			in.kind, in.exp = regCAS, l.exp
		}
		switch {
		case l.acked:
			out := regOut{rev: l.ackRev}
			for _, a := range l.attempts {
				if writes(a) && a.Rev == l.ackRev && a.Ret == l.ackRet {
					out = outOfAnswer(a)
				}
			}
			ops = append(ops, porcupine.Operation{Input: in, Call: l.call, Output: out, Return: l.ackRet})
			covered[l.ackRev] = true
		case len(l.applied) == 1 && int(l.applied[0].rev) <= len(rows):
			// Unknown to its caller, but the database has it: it took effect once, some time
			// after it was asked, as history has it.
			rev := l.applied[0].rev
			ops = append(ops, porcupine.Operation{Input: in, Call: l.call, Output: outOfRow(&rows[rev-1]), Return: forever})
			covered[rev] = true
		}
		for _, a := range l.attempts {
			if in, out, ok := readOf(a); ok {
				ops = append(ops, porcupine.Operation{Input: in, Call: a.Call, Output: out, Return: a.Ret})
			}
		}
	}
	for i := range rows {
		row := &rows[i]
		if covered[row.Revision] {
			continue
		}
		cause := row.eventName()
		if row.Status == "CANCELLED" {
			cause = "cancel"
		} else if row.Revision == 1 {
			cause = "start"
		}
		ops = append(ops, porcupine.Operation{
			Input:  regIn{kind: regWrite, op: fmt.Sprintf("server step %s@%d (%s)", wf, row.Revision, cause), def: def, cause: cause},
			Call:   row.TimeUS * 1000,
			Output: outOfRow(row), Return: forever,
		})
	}
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	for i := range ops {
		ops[i].ClientId = i
	}
	return ops
}

// readOf is what an attempt observed of the register, if it was a linearizable read.
func readOf(a *Op) (regIn, regOut, bool) {
	switch {
	case a.Outcome == outcomeOK && a.Kind == "get":
		return regIn{kind: regRead, op: a.ID}, outOfAnswer(a), true
	case a.Outcome == outcomeOK && (a.Kind == "signal" || a.Kind == "sws") && !a.Accepted && a.Rejection == "SIGNAL_REJECTION_NOT_RUNNING":
		// Refused on a fresh read of the store: it saw the instance as it was.
		return regIn{kind: regRead, op: a.ID}, outOfAnswer(a), true
	case a.Outcome == outcomeOK && a.Kind == "start" && a.Existing && !a.Created:
		return regIn{kind: regRead, op: a.ID}, outOfAnswer(a), true
	case a.Outcome == outcomeFail && a.Reason == "REVISION_MISMATCH" && a.Exp > 0:
		return regIn{kind: regCASFail, exp: a.Exp, op: a.ID}, regOut{actual: a.Actual}, true
	case a.Outcome == outcomeFail && a.Reason == "WORKFLOW_ALREADY_EXISTS":
		return regIn{kind: regExists, op: a.ID}, regOut{}, true
	case a.Outcome == outcomeFail && a.Reason == "WORKFLOW_NOT_FOUND":
		return regIn{kind: regRead, op: a.ID}, regOut{rev: 0}, true
	}
	return regIn{}, regOut{}, false
}

// linearizable checks one instance's register history with porcupine; when it is not
// linearizable it says which operations could not be placed.
func linearizable(ops []porcupine.Operation, timeout time.Duration) (porcupine.CheckResult, string) {
	res, info := porcupine.CheckOperationsVerbose(registerModel, ops, timeout)
	if res != porcupine.Illegal {
		return res, ""
	}
	// The longest prefix porcupine could linearize, and what came next.
	partial := info.PartialLinearizations()
	best := []int{}
	for _, part := range partial {
		for _, lin := range part {
			if len(lin) > len(best) {
				best = lin
			}
		}
	}
	placed := map[int]bool{}
	desc := ""
	for _, i := range best {
		placed[i] = true
	}
	for i, op := range ops {
		if !placed[i] {
			desc = registerModel.DescribeOperation(op.Input, op.Output)
			break
		}
	}
	return res, fmt.Sprintf("%d of %d operations linearize; the first that cannot: %s", len(best), len(ops), desc)
}
