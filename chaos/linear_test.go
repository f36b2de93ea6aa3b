package main

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

func write(id string, call, ret, rev int64) porcupine.Operation {
	return porcupine.Operation{Input: regIn{kind: regWrite, op: id}, Call: call, Output: regOut{rev: rev}, Return: ret}
}

func read(id string, call, ret, rev int64) porcupine.Operation {
	return porcupine.Operation{Input: regIn{kind: regRead, op: id}, Call: call, Output: regOut{rev: rev}, Return: ret}
}

func check(t *testing.T, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	res, _ := linearizable(ops, 0)
	return res
}

func TestTheRegisterAcceptsOverlappingStepsInEitherOrder(t *testing.T) {
	ops := []porcupine.Operation{
		write("start", 0, 10, 1),
		write("a", 20, 50, 3), // overlaps b, and took effect after it
		write("b", 25, 40, 2),
		read("r", 60, 70, 3),
	}
	if got := check(t, ops); got != porcupine.Ok {
		t.Fatalf("got %v, want Ok", got)
	}
}

func TestTheRegisterRejectsAStaleRead(t *testing.T) {
	ops := []porcupine.Operation{
		write("start", 0, 10, 1),
		write("a", 20, 30, 2),
		read("stale", 40, 50, 1), // began after revision 2 was acknowledged
	}
	if got := check(t, ops); got != porcupine.Illegal {
		t.Fatalf("got %v, want Illegal", got)
	}
}

func TestTheRegisterRejectsTwoStepsToldTheSameRevision(t *testing.T) {
	ops := []porcupine.Operation{
		write("start", 0, 10, 1),
		write("a", 20, 30, 2),
		write("b", 25, 35, 2),
	}
	if got := check(t, ops); got != porcupine.Illegal {
		t.Fatalf("got %v, want Illegal", got)
	}
}

func TestACompareAndSwapMustFindTheRevisionItExpected(t *testing.T) {
	cas := func(exp, rev int64) porcupine.Operation {
		return porcupine.Operation{Input: regIn{kind: regCAS, exp: exp, op: "cas"}, Call: 20, Output: regOut{rev: rev}, Return: 30}
	}
	ok := []porcupine.Operation{write("start", 0, 10, 1), cas(1, 2)}
	if got := check(t, ok); got != porcupine.Ok {
		t.Fatalf("cas(1) -> 2 after revision 1: got %v, want Ok", got)
	}
	// A resume that expected revision 1 but was applied on top of revision 2.
	bad := []porcupine.Operation{write("start", 0, 10, 1), write("a", 11, 15, 2), cas(1, 3)}
	if got := check(t, bad); got != porcupine.Illegal {
		t.Fatalf("cas(1) -> 3 after revision 2: got %v, want Illegal", got)
	}
	refused := []porcupine.Operation{write("start", 0, 10, 1), write("a", 11, 15, 2),
		{Input: regIn{kind: regCASFail, exp: 1}, Call: 20, Output: regOut{actual: 2}, Return: 30}}
	if got := check(t, refused); got != porcupine.Ok {
		t.Fatalf("cas(1) refused at 2: got %v, want Ok", got)
	}
}

func TestAStepWithoutAnAnswerMayTakeEffectAnyTimeAfterItsCall(t *testing.T) {
	ops := []porcupine.Operation{
		write("start", 0, 10, 1),
		write("unknown", 20, forever, 2),
		read("before", 30, 40, 1),
		read("after", 50, 60, 2),
	}
	if got := check(t, ops); got != porcupine.Ok {
		t.Fatalf("got %v, want Ok", got)
	}
}
