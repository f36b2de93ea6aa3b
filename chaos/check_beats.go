package main

import (
	"sort"
	"strings"
)

// A completion answers the task as it finished it, its heartbeat details included: those
// of the last heartbeat applied to the task, whichever replica took it. (A server that
// completes from its own memory of a lease must notice a heartbeat another replica took.)
const propBeats = "a completion's answer shows the task's heartbeat details as its last heartbeat left them"

type beatKey struct{ wf, task string }

// checkBeats: every acknowledged completion names, in its task's heartbeat details, a
// heartbeat that may have been the task's last one applied when the completion was made,
// or none if no heartbeat had been acknowledged before it was sent. A heartbeat may have
// been the last unless another, acknowledged, began after it returned and returned before
// the completion was sent; one with an open outcome, or one that ran alongside the
// completion, may have been applied or not.
func (c *checker) checkBeats() {
	beats := map[beatKey][]*Op{}
	var completions []*Op
	for i := range c.ops {
		a := &c.ops[i]
		k := beatKey{a.WF, a.TaskID}
		switch {
		case a.Kind == "heartbeat" && a.Beat != "" && !beatRefused(a):
			beats[k] = append(beats[k], a)
		case a.Kind == "complete" && a.Outcome == outcomeOK && a.TaskStatus != "":
			completions = append(completions, a)
		}
	}
	for _, done := range completions {
		allowed := lastBeats(beats[beatKey{done.WF, done.TaskID}], done)
		c.checked[propBeats]++
		if !allowed[done.Beat] {
			c.flag(propBeats, done.WF, done.ID, "the completion of task %s answered the heartbeat details of %s, where the task's last heartbeat was one of %s",
				done.TaskID, beatName(done.Beat), beatNames(allowed))
		}
	}
}

// beatRefused: a heartbeat that was surely not applied. An UNAVAILABLE answer is not taken
// for one: it may come from the transport, or a dropped connection, after the write went.
func beatRefused(a *Op) bool {
	return a.TaskStatus == "CANCEL_REQUESTED" || (a.Outcome == outcomeFail && a.Code != "Unavailable")
}

// lastBeats: the heartbeats (by id; "" for none) that may have been the last applied to a
// task when completion done was made.
func lastBeats(beats []*Op, done *Op) map[string]bool {
	allowed := map[string]bool{}
	acknowledgedBefore := false
	for _, h := range beats {
		if h.Outcome == outcomeOK && h.Ret < done.Call {
			acknowledgedBefore = true
		}
	}
	if !acknowledgedBefore {
		allowed[""] = true
	}
	for _, h := range beats {
		if h.Call >= done.Ret {
			continue // sent after the answer came
		}
		superseded := false
		for _, later := range beats {
			if later.Outcome == outcomeOK && later.Call > h.Ret && later.Ret < done.Call {
				superseded = true
				break
			}
		}
		if !superseded {
			allowed[h.Beat] = true
		}
	}
	return allowed
}

func beatName(beat string) string {
	if beat == "" {
		return "no heartbeat"
	}
	return "heartbeat " + beat
}

func beatNames(allowed map[string]bool) string {
	names := make([]string, 0, len(allowed))
	for beat := range allowed {
		names = append(names, beatName(beat))
	}
	sort.Strings(names)
	return "[" + strings.Join(names, ", ") + "]"
}
