package conformance

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var refPattern = regexp.MustCompile(`\$\{([^}]*)\}`)

// scope resolves ${...} references: plain variables (run, i) and values saved by earlier
// steps (${name.path}), where path walks the saved response as protojson with proto field
// names. A path that does not start at the response's top level is also tried under its
// `workflow` field, so ${mail.revision} means ${mail.workflow.revision}.
//
// References under a name in deferred are left as they are, for a later expansion in
// another scope: a RunWorker handler's ${input.KEY} is known only once a task arrives.
type scope struct {
	vars     map[string]any
	saved    map[string]any
	deferred map[string]bool
}

func (s *scope) isDeferred(ref string) bool {
	name, _, _ := strings.Cut(ref, ".")
	return s.deferred[name]
}

func (s *scope) lookup(ref string) (any, error) {
	if v, ok := s.vars[ref]; ok {
		return v, nil
	}
	name, path, ok := strings.Cut(ref, ".")
	if !ok {
		return nil, fmt.Errorf("unknown variable ${%s}", ref)
	}
	root, ok := s.saved[name]
	if !ok {
		return nil, fmt.Errorf("${%s}: no earlier step saved %q", ref, name)
	}
	keys := strings.Split(path, ".")
	if v, ok := walk(root, keys); ok {
		return v, nil
	}
	if m, isMap := root.(map[string]any); isMap {
		if v, ok := walk(m["workflow"], keys); ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("${%s}: %q has no field %s", ref, name, path)
}

func walk(v any, keys []string) (any, bool) {
	for _, k := range keys {
		switch node := v.(type) {
		case map[string]any:
			next, ok := node[k]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(node) {
				return nil, false
			}
			v = node[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// expand returns a copy of v with every ${...} replaced. A string that is exactly one
// reference takes the referenced value with its type; references inside longer strings
// are formatted into them.
func (s *scope) expand(v any) (any, error) {
	switch node := v.(type) {
	case string:
		return s.expandString(node)
	case map[string]any:
		out := make(map[string]any, len(node))
		for k, child := range node {
			e, err := s.expand(child)
			if err != nil {
				return nil, err
			}
			out[k] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(node))
		for i, child := range node {
			e, err := s.expand(child)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	default:
		return v, nil
	}
}

func (s *scope) expandString(str string) (any, error) {
	if m := refPattern.FindStringSubmatchIndex(str); m != nil && m[0] == 0 && m[1] == len(str) {
		if s.isDeferred(str[m[2]:m[3]]) {
			return str, nil
		}
		return s.lookup(str[m[2]:m[3]])
	}
	var firstErr error
	out := refPattern.ReplaceAllStringFunc(str, func(ref string) string {
		if s.isDeferred(ref[2 : len(ref)-1]) {
			return ref
		}
		v, err := s.lookup(ref[2 : len(ref)-1])
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return ref
		}
		return fmt.Sprint(v)
	})
	return out, firstErr
}
