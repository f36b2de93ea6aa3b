package main

import (
	"fmt"
	"strings"
)

// checkSteps checks each step of one instance's history against its definition: the
// transitions it took leave the state the revision before rests in, are ones the
// definition declares for what caused the step (guards aside), and end where the step
// rests; a cancel changes nothing but the status; and, where the definition keeps the
// chain (`at`, `prev`), the step was computed for its own revision from the context of
// the revision before it. A step computed on a stale copy of the instance (a lost update:
// the state or the context another replica had moved on from) fails one of these.
func (c *checker) checkSteps(wf string, def *definition, rows []histRow) {
	for i := range rows {
		row := &rows[i]
		c.checked[propSteps]++
		if i == 0 {
			if len(row.Transitions) > 0 && row.Transitions[0].From != def.Initial {
				c.flag(propSteps, wf, "", "revision 1 leaves %s, not the initial state %s", row.Transitions[0].From, def.Initial)
			} else if !terminal(row.Status) && !def.settlesIn(def.Initial, row.State) {
				c.flag(propSteps, wf, "", "revision 1 rests in %s, which entering %s cannot reach", row.State, def.Initial)
			}
			continue
		}
		prev := &rows[i-1]
		if terminal(prev.Status) {
			c.flag(propSteps, wf, "", "revision %d follows revision %d, which ended the instance (%s)", row.Revision, prev.Revision, prev.Status)
			continue
		}
		if row.Status == "CANCELLED" || (row.Status == "FAILED" && len(row.Transitions) == 0) {
			// Ended where it was, with the context it had.
			switch {
			case len(row.Transitions) > 0:
				c.flag(propSteps, wf, "", "revision %d cancels, but takes transitions %v", row.Revision, row.Transitions)
			case row.State != prev.State:
				c.flag(propSteps, wf, "", "revision %d ends the instance in %s, but it was in %s", row.Revision, row.State, prev.State)
			case row.digest() != prev.digest():
				c.flag(propSteps, wf, "", "revision %d ends the instance with another context than revision %d's: %v, was %v", row.Revision, prev.Revision, row.Context, prev.Context)
			}
			continue
		}
		event := row.eventName()
		if msg := def.checkTransitions(prev.State, row.State, event, row.Transitions); msg != "" {
			c.flag(propSteps, wf, "", "revision %d (%s, from %s at revision %d): %s", row.Revision, eventLabel(event), prev.State, prev.Revision, msg)
			continue
		}
		if event == "release" && prev.Status != "WAITING" {
			c.flag(propSteps, wf, "", "revision %d resumes (%s) an instance that was %s, not WAITING", row.Revision, event, prev.Status)
		}
		if !def.chained() {
			continue
		}
		at, _ := row.num("at")
		switch {
		case at != row.Revision:
			c.flag(propSteps, wf, "", "revision %d (%s) was computed for revision %d (a step saved at another revision than it was computed for)", row.Revision, eventLabel(event), at)
		case row.str("prev") != prev.last():
			c.flag(propSteps, wf, "", "revision %d (%s) began from a context whose last step was %q, but revision %d's is %q: it was computed on a stale copy of the instance (a lost update)",
				row.Revision, eventLabel(event), row.str("prev"), prev.Revision, prev.last())
		}
	}
}

func eventLabel(event string) string {
	if event == "" {
		return "no event"
	}
	return "event " + event
}

// checkAppliedAs checks that the step an operation is found at is the step it asked for.
func (c *checker) checkAppliedAs(l *logical, rev int64) {
	rows := c.history[l.wf]
	if rev < 1 || int(rev) > len(rows) {
		return
	}
	row := &rows[rev-1]
	want, got := "", row.eventName()
	switch l.kind {
	case "start":
		if rev != 1 {
			c.flag(propSteps, l.wf, l.id, "a start is at revision %d", rev)
		}
		return
	case "cancel":
		if row.Status != "CANCELLED" {
			c.flag(propSteps, l.wf, l.id, "a cancel is at revision %d, which is %s %s", rev, row.State, row.Status)
		}
		return
	case "sws":
		if rev == 1 {
			return // it started the instance, with its event in the same step
		}
		want = l.event
	case "signal", "resume":
		want = l.event
	case "complete":
		want = "task_completed"
	case "fail":
		want = "task_failed"
	default:
		return
	}
	if got != want {
		c.flag(propSteps, l.wf, l.id, "this %s asked for %q, but revision %d applied it as %q", l.kind, want, rev, got)
	}
}

// answerKinds are the calls whose answer shows the instance.
var answerKinds = map[string]bool{"get": true, "start": true, "signal": true, "sws": true, "resume": true, "cancel": true, "complete": true, "fail": true, "reset": true}

// checkAnswers compares what every answer showed of an instance (a read's, a write's, a
// refusal that came with the instance) with history at the revision the answer named.
func (c *checker) checkAnswers() {
	for i := range c.ops {
		a := &c.ops[i]
		if a.Outcome != outcomeOK || a.Rev == 0 || !answerKinds[a.Kind] || a.Ctx == "" {
			continue
		}
		c.checked[propAnswers]++
		rows := c.history[a.WF]
		if int(a.Rev) > len(rows) {
			c.flag(propAnswers, a.WF, a.ID, "%s was answered with revision %d, but history has %d revision(s)", a.Kind, a.Rev, len(rows))
			continue
		}
		r := &rows[a.Rev-1]
		if r.State != a.State || r.Status != a.Status || r.digest() != a.Ctx {
			c.flag(propAnswers, a.WF, a.ID, "%s was answered with revision %d as %s %s (last %q, prev %q, at %d), but history has %s %s (last %q, prev %q, context %v)",
				a.Kind, a.Rev, a.State, a.Status, a.Last, a.Prev, a.At, r.State, r.Status, r.last(), r.str("prev"), r.Context)
		}
	}
}

// checkRetries: every attempt of a request id, retried after an unknown outcome or sent
// again on purpose (after its answer, or at once through both replicas), is answered as
// the request was applied: the revision it is in history at, or a refusal of that attempt
// alone (the replica unavailable or overloaded). Task completions are checked with their
// duplicates (checkDuplicates).
func (c *checker) checkRetries() {
	for _, l := range c.logicals {
		if l.rid == "" || len(l.attempts) < 2 || l.kind == "get" || l.kind == "complete" {
			continue
		}
		c.checked[propRetries]++
		c.answeredAsApplied(propRetries, l)
	}
}

// answeredAsApplied flags each attempt of l whose answer is not what its request's fate
// was. Applied at one revision: every answer that says it was applied names that
// revision, and once one such answer has come back, every later attempt is answered so
// too (a replay), or refused for that attempt alone (the replica unavailable, or
// overloaded, or the instance busy with another request). An attempt that saved nothing records nothing, so an answer that it was
// not applied (a signal not accepted, a refusal) is right while no answer said otherwise.
func (c *checker) answeredAsApplied(prop string, l *logical) {
	if len(l.applied) != 1 {
		// Not applied: an answer that says it was is flagged as a lost acknowledgement;
		// applied twice: flagged as such.
		return
	}
	rev := l.applied[0].rev
	for _, a := range l.attempts {
		replayed := l.acked && l.ackRet < a.Call // sent after an answer said it was applied
		switch {
		case a.Outcome == outcomeOK && writes(a):
			if a.Rev != rev {
				c.flag(prop, l.wf, l.id, "attempt %d of this %s was answered as applied at revision %d, but the request was applied at revision %d", a.Try, l.kind, a.Rev, rev)
			}
		case !replayed:
		case a.Outcome == outcomeOK:
			c.flag(prop, l.wf, l.id, "attempt %d of this %s was answered as not applied (revision %d %s), after an answer that it was applied at revision %d",
				a.Try, l.kind, a.Rev, firstOf(a.Rejection, a.TaskStatus), rev)
		case a.Outcome == outcomeFail && !strings.Contains(retryableFailCodes, a.Code) && a.Reason != busyReason:
			c.flag(prop, l.wf, l.id, "attempt %d of this %s was answered %s %s, after an answer that it was applied at revision %d", a.Try, l.kind, a.Code, a.Reason, rev)
		}
	}
}

var _ = fmt.Sprint
