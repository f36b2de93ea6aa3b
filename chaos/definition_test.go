package main

import "testing"

func suiteDefinitions(t *testing.T) map[string]*definition {
	t.Helper()
	defs, err := loadDefinitions("definitions")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{defAccount, defOrder, defTimer} {
		if defs[name] == nil {
			t.Fatalf("no definition %s", name)
		}
	}
	return defs
}

func TestTheDefinitionsSayWhereAnInstanceMayRest(t *testing.T) {
	defs := suiteDefinitions(t)
	for _, c := range []struct {
		def, state, status string
		ok                 bool
	}{
		{defAccount, "active", "RUNNING", true},
		{defAccount, "held", "WAITING", true},
		{defAccount, "held", "RUNNING", false},
		{defAccount, "closed", "COMPLETED", true},
		{defAccount, "active", "CANCELLED", true},
		{defOrder, "work", "RUNNING", true},
		{defOrder, "work", "COMPLETED", true}, // finished from it
		{defOrder, "gave_up", "COMPLETED", true},
		{defTimer, "counted", "RUNNING", false}, // passed through, never rested in
		{defTimer, "counted", "COMPLETED", true},
		{defTimer, "stopped", "COMPLETED", true},
		{defBatch, "kid", "RUNNING", true}, // a child workflow state waits as a task state
		{defBatch, "fan", "FAILED", false}, // its give-up is taken by task_failed
		{defKid, "work", "FAILED", true},   // no task_failed: a give-up fails it there
		{defOrder, "work", "FAILED", false},
	} {
		if got := defs[c.def].allows(c.state, c.status); got != c.ok {
			t.Errorf("%s: %s %s: allowed %v, want %v", c.def, c.state, c.status, got, c.ok)
		}
	}
}

func TestTheDefinitionsSayWhichStepsAreReachable(t *testing.T) {
	defs := suiteDefinitions(t)
	for _, c := range []struct {
		def, from, to, cause string
		ok                   bool
	}{
		{defAccount, "active", "active", "note", true},
		{defAccount, "held", "active", "note", false}, // a held account takes no note
		{defAccount, "active", "held", "hold", true},
		{defAccount, "held", "active", "release", true},
		{defAccount, "held", "active", "after", true},
		{defAccount, "active", "active", "after", false}, // no timer leaves active
		{defAccount, "held", "held", "cancel", true},
		{defAccount, "held", "active", "cancel", false},
		{defAccount, "", "active", "start", true},
		{defTimer, "ticking", "ticking", "after", true},    // through counted, back to ticking
		{defTimer, "ticking", "counted", "after", true},    // through counted, finished there
		{defTimer, "stopped", "ticking", "poke", false},    // stopped takes nothing
		{defOrder, "work", "work", "task_completed", true}, // another round
		{defOrder, "work", "gave_up", "task_failed", true},
		{defOrder, "work", "gave_up", "task_completed", false},
	} {
		if got := defs[c.def].reaches(c.from, c.to, c.cause); got != c.ok {
			t.Errorf("%s: %s -(%s)-> %s: reachable %v, want %v", c.def, c.from, c.cause, c.to, got, c.ok)
		}
	}
}

func TestAStepsTransitionsAreCheckedAgainstItsDefinition(t *testing.T) {
	defs := suiteDefinitions(t)
	timer := defs[defTimer]
	tick := []transition{{From: "ticking", To: "counted", Event: ev("after")}, {From: "counted", To: "ticking"}}
	if msg := timer.checkTransitions("ticking", "ticking", "after", tick); msg != "" {
		t.Fatalf("a tick: %s", msg)
	}
	if msg := timer.checkTransitions("stopped", "ticking", "after", tick); msg == "" {
		t.Fatal("a tick from stopped passed")
	}
	poke := []transition{{From: "ticking", To: "ticking", Event: ev("poke")}}
	if msg := timer.checkTransitions("ticking", "ticking", "stop", poke); msg == "" {
		t.Fatal("a step recorded as poke for the event stop passed")
	}
	if msg := timer.checkTransitions("ticking", "ticking", "after", poke); msg == "" {
		t.Fatal("a timer step taking poke's transition passed")
	}
	finish := []transition{{From: "ticking", To: "counted", Event: ev("after")}, {From: "counted", To: finishState}}
	if msg := timer.checkTransitions("ticking", "counted", "after", finish); msg != "" {
		t.Fatalf("a last tick: %s", msg)
	}
}

// A fan-out's item steps stay in its state on task_completed or task_failed; a single
// task's completion must take a transition.
func TestAMapStateIsReachedAgainByItsItemsEnds(t *testing.T) {
	defs := suiteDefinitions(t)
	batch := defs[defBatch]
	if !batch.States["fan"].Map || !batch.reaches("fan", "fan", "task_completed") || !batch.reaches("fan", "fan", "task_failed") {
		t.Fatal(batch.States["fan"])
	}
	if batch.reaches("kid", "kid", "task_completed") || defs[defKid].reaches("work", "work", "task_completed") {
		t.Fatal("a state that is no fan-out stays put on a task's completion")
	}
}
