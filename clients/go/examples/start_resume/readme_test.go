package main

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeShowsThisProgram keeps the README's example compiling: its Go block must be
// this program's main body, verbatim.
func TestReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	source, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README.md has no ```go block")
	}
	block, _, _ = strings.Cut(block, "```\n")
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	for i, line := range lines {
		if line != "" {
			lines[i] = "\t" + line
		}
	}
	if indented := strings.Join(lines, "\n"); !strings.Contains(string(source), indented) {
		t.Errorf("README.md's Go example is not part of examples/start_resume/main.go:\n%s", indented)
	}
}
