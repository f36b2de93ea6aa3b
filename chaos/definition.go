package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"gopkg.in/yaml.v3"
)

// The checker's own reading of the suite's definitions (definitions/*.yaml): which
// transitions exist and where an instance may rest. Guards and expressions are not
// evaluated: a step is checked for being reachable by the transitions the definition
// declares, from the state the revision before it rested in, by the kind of event that
// caused it. The server's reading is not used, so that a server that misreads a
// definition is caught too.

const finishState = "__finish__"

// Kinds of a step's first transition, by what caused the step.
const (
	causeEvent     = "event"     // a signal or a resume: `on: EVENT`
	causeTimer     = "after"     // a timer: `after:` or `after_expr:`
	causeAutomatic = "automatic" // a task's completion: the task state's automatic transitions
)

type defTransition struct {
	From, To, On string
	Timed        bool // after: or after_expr:
}

func (t defTransition) automatic() bool { return t.On == "" && !t.Timed }

type defState struct {
	Wait bool
	Task bool
	Map  bool // a fan-out: each item's end is a step that stays in the state
}

type definition struct {
	Name        string
	Initial     string
	States      map[string]defState
	Transitions []defTransition
	Context     map[string]bool // declared fields
}

// rawDefinition is the YAML's shape, as far as the checker reads it.
type rawDefinition struct {
	Name        string               `yaml:"name"`
	Initial     string               `yaml:"initial"`
	Context     map[string]yaml.Node `yaml:"context"`
	States      yaml.Node            `yaml:"states"`
	Transitions []struct {
		From      string `yaml:"from"`
		To        string `yaml:"to"`
		On        string `yaml:"on"`
		After     string `yaml:"after"`
		AfterExpr string `yaml:"after_expr"`
	} `yaml:"transitions"`
}

func parseDefinition(data []byte) (*definition, error) {
	var raw rawDefinition
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	d := &definition{Name: raw.Name, Initial: raw.Initial, States: map[string]defState{}, Context: map[string]bool{}}
	if raw.States.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: states is not a map", raw.Name)
	}
	for i := 0; i+1 < len(raw.States.Content); i += 2 {
		name := raw.States.Content[i].Value
		var body struct {
			Wait     bool      `yaml:"wait"`
			Task     yaml.Node `yaml:"task"`
			Workflow yaml.Node `yaml:"workflow"` // a child workflow state: its child is its task
		}
		if err := raw.States.Content[i+1].Decode(&body); err != nil {
			return nil, fmt.Errorf("%s: state %s: %w", raw.Name, name, err)
		}
		var task struct {
			Map string `yaml:"map"`
		}
		if body.Task.Kind != 0 {
			if err := body.Task.Decode(&task); err != nil {
				return nil, fmt.Errorf("%s: state %s: task: %w", raw.Name, name, err)
			}
		}
		d.States[name] = defState{Wait: body.Wait, Task: body.Task.Kind != 0 || body.Workflow.Kind != 0, Map: task.Map != ""}
		if d.Initial == "" {
			d.Initial = name // the first state declared
		}
	}
	for _, t := range raw.Transitions {
		d.Transitions = append(d.Transitions, defTransition{From: t.From, To: t.To, On: t.On, Timed: t.After != "" || t.AfterExpr != ""})
	}
	for name := range raw.Context {
		d.Context[name] = true
	}
	return d, nil
}

// loadDefinitions reads every definition of a directory, by name.
func loadDefinitions(dir string) (map[string]*definition, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	out := map[string]*definition{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		d, err := parseDefinition(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out[d.Name] = d
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no definitions in %s", dir)
	}
	return out, nil
}

func (d *definition) hasAutomatic(state string) bool {
	for _, t := range d.Transitions {
		if t.From == state && t.automatic() {
			return true
		}
	}
	return false
}

func (d *definition) hasEvent(state, event string) bool {
	for _, t := range d.Transitions {
		if t.From == state && t.On == event {
			return true
		}
	}
	return false
}

func (d *definition) hasExit(state string) bool {
	for _, t := range d.Transitions {
		if t.From == state {
			return true
		}
	}
	return false
}

// restsAs is the status an instance has when a step ends in state (the execution rules'
// second one): "" for a state a step passes through and never rests in.
func (d *definition) restsAs(state string) string {
	s, ok := d.States[state]
	switch {
	case !ok:
		return ""
	case s.Task:
		return "RUNNING"
	case s.Wait:
		return "WAITING"
	case d.hasAutomatic(state):
		return ""
	case d.hasExit(state):
		return "RUNNING"
	}
	return "COMPLETED"
}

// finishesFrom says whether state has a transition to __finish__ (an instance that takes
// it rests, COMPLETED, in the state it finished from).
func (d *definition) finishesFrom(state string) bool {
	for _, t := range d.Transitions {
		if t.From == state && t.To == finishState {
			return true
		}
	}
	return false
}

// allows says whether an instance of d may rest in state with status.
func (d *definition) allows(state, status string) bool {
	switch status {
	case "CANCELLED":
		_, ok := d.States[state]
		return ok
	case "FAILED":
		// A task (or child) that gave up with no task_failed (child_failed) transition
		// fails the instance where it is.
		return d.States[state].Task && !d.hasEvent(state, "task_failed") && !d.hasEvent(state, "child_failed")
	case "COMPLETED":
		if d.finishesFrom(state) {
			return true
		}
	}
	return d.restsAs(state) == status
}

// declares says whether d has the transition from -> to with this cause and event.
func (d *definition) declares(from, to, cause, event string) bool {
	for _, t := range d.Transitions {
		if t.From != from || t.To != to {
			continue
		}
		switch cause {
		case causeEvent:
			if t.On == event && !t.Timed {
				return true
			}
		case causeTimer:
			if t.Timed {
				return true
			}
		case causeAutomatic:
			if t.automatic() {
				return true
			}
		}
	}
	return false
}

// causeOf is the kind of first transition a step with this history event takes.
func causeOf(event string) string {
	switch event {
	case "after":
		return causeTimer
	case "task_completed":
		return causeAutomatic
	}
	return causeEvent
}

// checkTransitions says what is wrong with a step's transitions, taken from the state the
// revision before rested in (from) to the state it rests in (to), caused by event; "" if
// the definition allows them. Guards are not evaluated.
func (d *definition) checkTransitions(from, to, event string, taken []transition) string {
	if len(taken) == 0 {
		if from != to {
			return fmt.Sprintf("moved from %s to %s without a transition", from, to)
		}
		return ""
	}
	if taken[0].From != from {
		return fmt.Sprintf("its first transition leaves %s, but the revision before rests in %s (a step computed on another state than the one it follows)", taken[0].From, from)
	}
	cause := causeOf(event)
	for i, t := range taken {
		if i > 0 {
			if taken[i-1].To != t.From {
				return fmt.Sprintf("transition %d leaves %s, but the one before entered %s", i+1, t.From, taken[i-1].To)
			}
			cause = causeAutomatic // after the first, only automatic transitions follow
		}
		ev := ""
		if t.Event != nil {
			ev = *t.Event
		}
		switch {
		case cause == causeEvent && ev != event:
			return fmt.Sprintf("transition %s>%s is recorded for event %q, but the step's event is %q", t.From, t.To, ev, event)
		case !d.declares(t.From, t.To, cause, ev):
			return fmt.Sprintf("%s declares no %s transition %s>%s%s", d.Name, cause, t.From, t.To, eventSuffix(cause, ev))
		}
		if t.To == finishState && i != len(taken)-1 {
			return fmt.Sprintf("transition %d continues after %s", i+2, finishState)
		}
	}
	last := taken[len(taken)-1]
	rest := last.To
	if rest == finishState {
		rest = last.From
	}
	if rest != to {
		return fmt.Sprintf("its transitions end in %s, but it rests in %s", rest, to)
	}
	return ""
}

func eventSuffix(cause, event string) string {
	if cause == causeEvent {
		return " on " + event
	}
	return ""
}

// reaches says whether a step caused by event (as checkTransitions reads it; "cancel" for
// a cancel, "start" for the first step) may take an instance resting in from to rest in
// to, by the definition's transitions, guards aside.
func (d *definition) reaches(from, to, event string) bool {
	switch event {
	case "cancel":
		return from == to
	case "start":
		return d.settlesIn(d.Initial, to)
	case "task_completed", "task_failed":
		if from == to && d.States[from].Map {
			return true // an item's end that is not the join
		}
	}
	cause := causeOf(event)
	for _, t := range d.Transitions {
		if t.From != from {
			continue
		}
		ok := false
		switch cause {
		case causeEvent:
			ok = t.On == event && !t.Timed
		case causeTimer:
			ok = t.Timed
		case causeAutomatic:
			ok = t.automatic()
		}
		if !ok {
			continue
		}
		if t.To == finishState {
			if from == to {
				return true
			}
			continue
		}
		if d.settlesIn(t.To, to) {
			return true
		}
	}
	return false
}

// settlesIn says whether entering state may end, through automatic transitions, resting
// in to.
func (d *definition) settlesIn(state, to string) bool {
	seen := map[string]bool{}
	var walk func(s string) bool
	walk = func(s string) bool {
		if seen[s] {
			return false
		}
		seen[s] = true
		if s == to && d.restsAs(s) != "" {
			return true
		}
		if s == to && d.finishesFrom(s) {
			return true
		}
		for _, t := range d.Transitions {
			if t.From == s && t.automatic() {
				if t.To == finishState {
					if s == to {
						return true
					}
					continue
				}
				if walk(t.To) {
					return true
				}
			}
		}
		return false
	}
	return walk(state)
}

// chained says whether d's context carries the step chain: every step records the
// revision it was computed for (`at`) and the `last` of the context it began from
// (`prev`), so that a step computed on another context than its predecessor's shows.
func (d *definition) chained() bool { return d.Context["prev"] && d.Context["at"] }

func sortedDefs(defs map[string]*definition) []string {
	var names []string
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
