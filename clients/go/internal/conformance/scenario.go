// Package conformance executes the shared client conformance scenario
// (clients/conformance/scenario.yaml) step by step against a live Statewright server.
package conformance

import (
	"bytes"
	"fmt"
	"os"
	"time"

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

	// RunWorker only: a handler per queue, the instance to wait for, and how long.
	Handlers map[string]HandlerSpec `yaml:"handlers"`
	Until    *UntilSpec             `yaml:"until"`
	Timeout  string                 `yaml:"timeout"`
}

// HandlerSpec is what a RunWorker handler does with every task of its queue: complete it
// with Result, or fail it with Fail; exactly one of the two is set.
type HandlerSpec struct {
	Result map[string]any `yaml:"result"`
	Fail   *FailSpec      `yaml:"fail"`
}

// FailSpec is the task failure a handler throws.
type FailSpec struct {
	Type         string `yaml:"type"`
	Message      string `yaml:"message"`
	NonRetryable bool   `yaml:"non_retryable"`
}

// UntilSpec names the instance whose terminal status ends a RunWorker step.
type UntilSpec struct {
	Name string `yaml:"name"`
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
		if err := checkWorkerKeys(st); err != nil {
			return nil, fmt.Errorf("step %s: %w", st.ID, err)
		}
	}
	return &sc, nil
}

// checkWorkerKeys allows handlers, until and timeout on RunWorker steps only, and requires
// them there, so that a misspelt or misplaced key fails the parse.
func checkWorkerKeys(st Step) error {
	if st.Op != "RunWorker" {
		if st.Handlers != nil || st.Until != nil || st.Timeout != "" {
			return fmt.Errorf("handlers, until and timeout belong to RunWorker steps only")
		}
		return nil
	}
	if st.Request != nil {
		return fmt.Errorf("RunWorker takes no request")
	}
	if len(st.Handlers) == 0 {
		return fmt.Errorf("RunWorker needs at least one handler")
	}
	for queue, h := range st.Handlers {
		if (h.Result == nil) == (h.Fail == nil) {
			return fmt.Errorf("handler %s: exactly one of result and fail is required", queue)
		}
	}
	if st.Until == nil || st.Until.Name == "" {
		return fmt.Errorf("RunWorker needs until.name")
	}
	if _, err := st.timeout(); err != nil {
		return err
	}
	return nil
}

func (st Step) timeout() (time.Duration, error) {
	d, err := time.ParseDuration(st.Timeout)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("timeout: expected a positive duration such as 60s, found %q", st.Timeout)
	}
	return d, nil
}
