package main

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// One instance's revision, as a compare-and-swap register. Every step is a write that
// moves the register from r-1 to r (and its caller was told r); a resume or cancel with an
// expected revision is a compare-and-swap; reads see the register; a refusal for a
// revision mismatch saw a register other than the one expected (and names the one it saw).
const (
	regWrite   = iota // a step: the register goes from rev-1 to rev
	regCAS            // a step that expected exp: the register was exp, is now exp+1 = rev
	regCASFail        // expected exp, refused: the register was not exp (it was actual, if known)
	regRead           // the register was rev
	regExists         // the instance existed: the register was at least 1
)

type regIn struct {
	kind int
	exp  int64
	op   string // the operation, for reports
}

type regOut struct {
	rev    int64
	actual int64
}

var registerModel = porcupine.Model{
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s := state.(int64)
		in, out := input.(regIn), output.(regOut)
		switch in.kind {
		case regWrite:
			if out.rev == s+1 {
				return true, out.rev
			}
		case regCAS:
			if s == in.exp && out.rev == in.exp+1 {
				return true, out.rev
			}
		case regCASFail:
			return s != in.exp && (out.actual == 0 || s == out.actual), s
		case regRead:
			return s == out.rev, s
		case regExists:
			return s >= 1, s
		}
		return false, s
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regIn), output.(regOut)
		switch in.kind {
		case regWrite:
			return fmt.Sprintf("%s: step -> %d", in.op, out.rev)
		case regCAS:
			return fmt.Sprintf("%s: cas(%d) -> %d", in.op, in.exp, out.rev)
		case regCASFail:
			return fmt.Sprintf("%s: cas(%d) refused, at %d", in.op, in.exp, out.actual)
		case regRead:
			return fmt.Sprintf("%s: read %d", in.op, out.rev)
		default:
			return fmt.Sprintf("%s: exists", in.op)
		}
	},
}

// forever stands for "no answer was seen": the operation may take effect any time after
// its call.
const forever = int64(math.MaxInt64 / 2)

// linearOps builds the register history of one instance: the client-visible steps with
// their invocation intervals and answers (as the callers saw them), the steps the server
// took on its own (timers, tasks given up) from the time their step began, and the reads.
func linearOps(wf string, logicals []*logical, rows []histRow) []porcupine.Operation {
	var ops []porcupine.Operation
	covered := map[int64]bool{}
	for _, l := range logicals {
		switch {
		case l.acked:
			in := regIn{kind: regWrite, op: l.id}
			if l.cas {
				in = regIn{kind: regCAS, exp: l.exp, op: l.id}
			}
			ops = append(ops, porcupine.Operation{ClientId: 0, Input: in, Call: l.call, Output: regOut{rev: l.ackRev}, Return: l.ackRet})
			covered[l.ackRev] = true
		case len(l.applied) == 1:
			// Unknown to its caller, but the database has it: it took effect once, some time
			// after it was asked.
			rev := l.applied[0].rev
			in := regIn{kind: regWrite, op: l.id}
			if l.cas {
				in = regIn{kind: regCAS, exp: l.exp, op: l.id}
			}
			ops = append(ops, porcupine.Operation{Input: in, Call: l.call, Output: regOut{rev: rev}, Return: forever})
			covered[rev] = true
		}
		for _, a := range l.attempts {
			if in, out, ok := readOf(a); ok {
				ops = append(ops, porcupine.Operation{Input: in, Call: a.Call, Output: out, Return: a.Ret})
			}
		}
	}
	for _, row := range rows {
		if !covered[row.Revision] {
			ops = append(ops, porcupine.Operation{
				Input: regIn{kind: regWrite, op: fmt.Sprintf("server step %s@%d (%s)", wf, row.Revision, row.eventName())},
				Call:  row.TimeUS * 1000, Output: regOut{rev: row.Revision}, Return: forever,
			})
		}
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
		return regIn{kind: regRead, op: a.ID}, regOut{rev: a.Rev}, true
	case a.Outcome == outcomeOK && a.Kind == "signal" && !a.Accepted && a.Rejection == "SIGNAL_REJECTION_NOT_RUNNING":
		// Refused on a fresh read of the store: it saw the instance as it was.
		return regIn{kind: regRead, op: a.ID}, regOut{rev: a.Rev}, true
	case a.Outcome == outcomeOK && a.Kind == "start" && a.Existing && !a.Created:
		return regIn{kind: regRead, op: a.ID}, regOut{rev: a.Rev}, true
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
