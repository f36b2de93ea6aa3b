package conformance

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
)

// expectation hands out the keys of a step's `expect` map and reports the keys that no
// check consumed, so that an expectation this runner does not understand fails the step.
type expectation struct {
	m        map[string]any
	used     map[string]bool
	problems []string
}

func newExpectation(m map[string]any) *expectation {
	return &expectation{m: m, used: map[string]bool{}}
}

func (e *expectation) take(key string) (any, bool) {
	v, ok := e.m[key]
	if ok {
		e.used[key] = true
	}
	return v, ok
}

func (e *expectation) failf(format string, args ...any) {
	e.problems = append(e.problems, fmt.Sprintf(format, args...))
}

// err returns every mismatch found, and every key nobody checked, as one error.
func (e *expectation) err() error {
	var unknown []string
	for k := range e.m {
		if !e.used[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	problems := e.problems
	if len(unknown) > 0 {
		problems = append(problems, fmt.Sprintf("unsupported expectation key(s) %s", strings.Join(unknown, ", ")))
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// discard marks every key as checked, for when what they describe is missing altogether
// and one problem says so.
func (e *expectation) discard() {
	for k := range e.m {
		e.used[k] = true
	}
}

// sub returns the expectation nested under key, or nil when the key is absent.
func (e *expectation) sub(key string) *expectation {
	v, ok := e.take(key)
	if !ok {
		return nil
	}
	m, isMap := v.(map[string]any)
	if !isMap {
		e.failf("%s: expected a map in the scenario, found %T", key, v)
		return nil
	}
	return newExpectation(m)
}

// merge moves a nested expectation's problems (prefixed) into e.
func (e *expectation) merge(prefix string, nested *expectation) {
	if err := nested.err(); err != nil {
		e.problems = append(e.problems, prefix+": "+err.Error())
	}
}

func (e *expectation) checkString(key, got string) {
	if want, ok := e.take(key); ok {
		if w, isStr := want.(string); !isStr || w != got {
			e.failf("%s: expected %v, got %q", key, want, got)
		}
	}
}

// checkEnum compares an expected short name (WAITING) with an enum value name
// (WORKFLOW_STATUS_WAITING) under its prefix.
func (e *expectation) checkEnum(key, prefix, gotName string) {
	if want, ok := e.take(key); ok {
		if w, isStr := want.(string); !isStr || prefix+w != gotName {
			e.failf("%s: expected %v, got %s", key, want, strings.TrimPrefix(gotName, prefix))
		}
	}
}

func (e *expectation) checkInt(key string, got int64) {
	if want, ok := e.take(key); ok {
		if w, err := toInt(want); err != nil || w != got {
			e.failf("%s: expected %v, got %d", key, want, got)
		}
	}
}

func (e *expectation) checkBool(key string, got bool) {
	if want, ok := e.take(key); ok {
		if w, isBool := want.(bool); !isBool || w != got {
			e.failf("%s: expected %v, got %v", key, want, got)
		}
	}
}

// checkStrings compares a list exactly, in order.
func (e *expectation) checkStrings(key string, got []string) {
	if want, ok := e.take(key); ok {
		w, err := toStrings(want)
		if err != nil || !slices.Equal(w, got) {
			e.failf("%s: expected %v, got %v", key, want, got)
		}
	}
}

// checkContains checks that every expected string is among got.
func (e *expectation) checkContains(key string, got []string) {
	if want, ok := e.take(key); ok {
		w, err := toStrings(want)
		if err != nil {
			e.failf("%s: expected a list of strings in the scenario, found %v", key, want)
			return
		}
		var missing []string
		for _, s := range w {
			if !slices.Contains(got, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			e.failf("%s: missing %v among %d values", key, missing, len(got))
		}
	}
}

func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case int:
		return int64(n), nil
	case int64:
		return n, nil
	case uint64:
		if n <= math.MaxInt64 {
			return int64(n), nil
		}
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<53 {
			return int64(n), nil
		}
	}
	return 0, fmt.Errorf("not an integer: %v", v)
}

func toStrings(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("not a list: %v", v)
	}
	out := make([]string, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("not a string: %v", item)
		}
		out[i] = s
	}
	return out, nil
}

// codeNames maps gRPC codes to their canonical names (ABORTED), as the scenario spells them.
var codeNames = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}

func codeName(c codes.Code) string {
	if name, ok := codeNames[c]; ok {
		return name
	}
	return fmt.Sprintf("CODE(%d)", uint32(c))
}

// checkSubset compares got (plain data, as structpb's AsMap gives) with the expected value
// under key, as a subset: an expected map's keys must be present and match, recursively,
// and other keys may exist; lists match element by element with the same length; numbers
// match by value, whatever their Go type.
func (e *expectation) checkSubset(key string, got any) {
	if want, ok := e.take(key); ok {
		for _, p := range subsetMismatches(key, want, got) {
			e.failf("%s", p)
		}
	}
}

func subsetMismatches(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: expected a map, got %s", path, describeValue(got))}
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			child, present := g[k]
			if !present {
				out = append(out, fmt.Sprintf("%s.%s: missing (expected %v)", path, k, w[k]))
				continue
			}
			out = append(out, subsetMismatches(path+"."+k, w[k], child)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: expected %v, got %s", path, w, describeValue(got))}
		}
		var out []string
		for i := range w {
			out = append(out, subsetMismatches(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	}
	if wn, isNum := toFloat(want); isNum {
		if gn, ok := toFloat(got); !ok || gn != wn {
			return []string{fmt.Sprintf("%s: expected %v, got %s", path, want, describeValue(got))}
		}
		return nil
	}
	if want != got {
		return []string{fmt.Sprintf("%s: expected %v, got %s", path, want, describeValue(got))}
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// describeValue shows a value with its kind, so that "1" (a string) and 1 differ.
func describeValue(v any) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%v", v)
}
