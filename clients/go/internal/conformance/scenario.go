// Package conformance executes the shared client conformance scenario
// (clients/conformance/scenario.yaml) step by step against a live Statewright server.
package conformance

import (
	"bytes"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// Scenario is the parsed scenario file.
type Scenario struct {
	Version int    `yaml:"version"`
	Steps   []Step `yaml:"steps"`
}

// Step is one scenario step. Request and Expect keep the YAML values as decoded
// (map[string]any, []any, string, int, float64, bool).
type Step struct {
	ID      string         `yaml:"id"`
	Op      string         `yaml:"op"`
	Request map[string]any `yaml:"request"`
	Expect  map[string]any `yaml:"expect"`
	Save    string         `yaml:"save"`
	Repeat  int            `yaml:"repeat"`
	Watch   string         `yaml:"watch"`
}

// LoadScenario reads and parses a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := ParseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario parses scenario YAML strictly: an unknown key, a missing id or op, a
// duplicate id or an unsupported version is an error, so that a scenario this runner does
// not understand fails instead of passing vacuously.
func ParseScenario(data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var sc Scenario
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("parsing scenario: %w", err)
	}
	if sc.Version != 1 {
		return nil, fmt.Errorf("unsupported scenario version %d (this runner knows version 1)", sc.Version)
	}
	if len(sc.Steps) == 0 {
		return nil, fmt.Errorf("scenario has no steps")
	}
	seen := map[string]bool{}
	for i, st := range sc.Steps {
		if st.ID == "" || st.Op == "" {
			return nil, fmt.Errorf("step %d: id and op are required", i+1)
		}
		if seen[st.ID] {
			return nil, fmt.Errorf("step %d: duplicate id %q", i+1, st.ID)
		}
		seen[st.ID] = true
		if st.Repeat < 0 || (st.Repeat > 1 && st.Save != "") {
			return nil, fmt.Errorf("step %s: repeat must be positive and cannot be combined with save", st.ID)
		}
	}
	return &sc, nil
}
