package main

import (
	"sort"
	"strings"
	"time"
)

type taskKey struct {
	wf   string
	task int64
}

// checkDuplicates: the completions of one lease (the same task, the same lease token)
// are one completion sent more than once: again with its request id (after an unknown
// outcome, or at once through both replicas), or again with another request id or none.
// At most one of them is applied; every attempt of the applied one is answered as it was
// applied; every other one is refused, or answered as the first one was.
func (c *checker) checkDuplicates() {
	type group struct {
		logicals []*logical
		attempts int
	}
	groups := map[string]*group{}
	var keys []string
	for _, l := range c.logicals {
		if l.kind != "complete" {
			continue
		}
		lease := l.attempts[0].Lease
		if lease == "" {
			continue // an older history: no lease recorded
		}
		k := l.wf + "/" + lease
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			keys = append(keys, k)
		}
		g.logicals = append(g.logicals, l)
		g.attempts += len(l.attempts)
	}
	sort.Strings(keys)
	for _, k := range keys {
		g := groups[k]
		if g.attempts < 2 {
			continue
		}
		c.checked[propDuplicates]++
		var first *logical
		for _, l := range g.logicals {
			if len(l.applied) == 0 {
				continue
			}
			if first != nil {
				c.flag(propDuplicates, l.wf, l.id, "task %d's lease was completed twice: by %s at revision %d and by this completion at revision %d",
					l.attempts[0].Task, first.id, first.applied[0].rev, l.applied[0].rev)
				continue
			}
			first = l
		}
		if first != nil {
			c.answeredAsApplied(propDuplicates, first)
		}
		for _, l := range g.logicals {
			if l == first || len(l.applied) > 0 {
				continue
			}
			for _, a := range l.attempts {
				if a.Outcome != outcomeOK {
					continue // refused: as it must be, unless it is the first one's retry
				}
				switch {
				case first == nil:
					c.flag(propDuplicates, l.wf, l.id, "a completion of task %d was answered as applied (revision %d), but no completion of that lease is in history", a.Task, a.Rev)
				case a.Rev != first.applied[0].rev:
					c.flag(propDuplicates, l.wf, l.id, "a duplicate completion of task %d was answered with revision %d, but the first one (%s) was applied at revision %d",
						a.Task, a.Rev, first.id, first.applied[0].rev)
				}
			}
		}
	}
}

// leaseTolerance allows for the moments between a server's reading of the clock and the
// worker's: a lease is taken to overlap another only by more than this.
const leaseTolerance = 50 * time.Millisecond

// checkLeases: the leases workers got (each granted between its poll's call and answer),
// their heartbeats and the completions and failures that ended them. No lease of a task
// is granted while an earlier one of it still runs (as its heartbeats extended it) and was
// not ended; no heartbeat is accepted for a lease another has superseded, or for a
// finished task; none is refused within a lease that nothing superseded; a task finished
// by a completion is never leased again.
func (c *checker) checkLeases() {
	type lease struct {
		rec        *Op
		validUntil int64   // as the poll's answer and accepted heartbeats said
		endCall    int64   // the earliest call that may have ended it (a completion applied, a failure not refused), 0: none
		beats      []*Op   // heartbeats of this lease
		calls      []*Op   // completions and failures presenting it
		_          [0]bool // not comparable
	}
	byTask := map[taskKey][]*lease{}
	byToken := map[string]*lease{}
	for _, a := range c.taskCalls {
		if a.Kind != "lease" {
			continue
		}
		k := taskKey{a.WF, a.Task}
		if prior := byToken[a.Lease]; prior != nil {
			c.flag(propLeases, a.WF, a.ID, "lease %s of task %d was handed out twice (attempts %d and %d)", short(a.Lease), a.Task, prior.rec.Attempt, a.Attempt)
			continue
		}
		l := &lease{rec: a, validUntil: a.LeaseExp}
		byToken[a.Lease] = l
		byTask[k] = append(byTask[k], l)
	}
	for _, a := range c.taskCalls {
		if a.Kind == "heartbeat" {
			if l := byToken[a.Lease]; l != nil {
				l.beats = append(l.beats, a)
				if a.Outcome == outcomeOK && a.LeaseExp > l.validUntil {
					l.validUntil = a.LeaseExp
				}
			}
		}
	}
	// When a task was finished by a completion (the earliest moment it may have been).
	finished := map[taskKey]int64{}
	for _, l := range c.logicals {
		if l.kind != "complete" && l.kind != "fail" {
			continue
		}
		for _, a := range l.attempts {
			if t := byToken[a.Lease]; t != nil {
				t.calls = append(t.calls, a)
				// A failure that was not refused may have ended the lease (a retry to come is
				// no step, so history cannot tell): it gets the benefit of the doubt.
				ends := len(l.applied) > 0 || (a.Kind == "fail" && a.Outcome != outcomeFail)
				if ends && (t.endCall == 0 || a.Call < t.endCall) {
					t.endCall = a.Call
				}
			}
		}
		if l.kind == "complete" && len(l.applied) > 0 {
			k := taskKey{l.wf, l.attempts[0].Task}
			for _, a := range l.attempts {
				if a.Outcome == outcomeOK && (finished[k] == 0 || a.Ret < finished[k]) {
					finished[k] = a.Ret // surely finished by then
				}
			}
		}
	}
	var keys []taskKey
	for k := range byTask {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].wf != keys[j].wf {
			return keys[i].wf < keys[j].wf
		}
		return keys[i].task < keys[j].task
	})
	tol := int64(leaseTolerance)
	for _, k := range keys {
		leases := byTask[k]
		c.checked[propLeases]++
		sort.Slice(leases, func(i, j int) bool {
			if leases[i].rec.Attempt != leases[j].rec.Attempt {
				return leases[i].rec.Attempt < leases[j].rec.Attempt
			}
			return leases[i].rec.Ret < leases[j].rec.Ret
		})
		for i, b := range leases {
			if done := finished[k]; done != 0 && b.rec.Call > done {
				c.flag(propLeases, k.wf, b.rec.ID, "task %d was leased again (attempt %d, to %s) after a completion of it had been acknowledged", k.task, b.rec.Attempt, b.rec.Proc)
			}
			for _, a := range leases[:i] {
				if a.rec.Attempt == b.rec.Attempt {
					c.flag(propLeases, k.wf, b.rec.ID, "attempt %d of task %d was leased twice, to %s and to %s", a.rec.Attempt, k.task, a.rec.Proc, b.rec.Proc)
					continue
				}
				ended := a.endCall != 0 && a.endCall < b.rec.Ret
				if b.rec.Ret < a.validUntil-tol && !ended {
					c.flag(propLeases, k.wf, b.rec.ID, "attempt %d of task %d was leased to %s %.3fs before attempt %d's lease (held by %s) ran out: two workers held it at once",
						b.rec.Attempt, k.task, b.rec.Proc, float64(a.validUntil-b.rec.Ret)/1e9, a.rec.Attempt, a.rec.Proc)
				}
			}
		}
		for _, a := range leases {
			for _, h := range a.beats {
				superseded := false
				for _, b := range leases {
					if b.rec.Attempt > a.rec.Attempt && b.rec.Ret < h.Call {
						superseded = true
					}
				}
				done := finished[k] != 0 && finished[k] < h.Call
				switch {
				case h.Outcome == outcomeOK && superseded:
					c.flag(propLeases, k.wf, h.ID, "a heartbeat of attempt %d of task %d was accepted after a later attempt had been leased", a.rec.Attempt, k.task)
				case h.Outcome == outcomeOK && done:
					c.flag(propLeases, k.wf, h.ID, "a heartbeat of task %d was accepted after its completion had been acknowledged", k.task)
				case h.Outcome == outcomeFail && h.Reason == "LEASE_SUPERSEDED" && !superseded && !done:
					// Refused as superseded: fine once its lease ran out or it ended.
					until := a.rec.LeaseExp
					for _, e := range a.beats {
						if e.Outcome == outcomeOK && e.Ret < h.Call && e.LeaseExp > until {
							until = e.LeaseExp
						}
					}
					ended := a.endCall != 0 && a.endCall < h.Ret
					if h.Ret < until-tol && !ended && !c.leftTaskState(k, h.Ret) {
						c.flag(propLeases, k.wf, h.ID, "a heartbeat of attempt %d of task %d was refused as superseded %.3fs before its lease ran out, with no later lease",
							a.rec.Attempt, k.task, float64(until-h.Ret)/1e9)
					}
				}
			}
		}
	}
}

// leftTaskState says whether, by t, the instance had left the entry of its task state
// that scheduled task (the task cancelled or finished by another step).
func (c *checker) leftTaskState(k taskKey, t int64) bool {
	rows := c.history[k.wf]
	if int(k.task) >= len(rows) {
		return false
	}
	return rows[k.task].TimeUS*1000 <= t+int64(leaseTolerance)
}

func short(token string) string {
	if len(token) > 8 {
		return token[:8] + "…"
	}
	return token
}

var _ = strings.TrimSpace
