package main

import (
	"slices"
	"testing"
)

func TestSplitTargets(t *testing.T) {
	got := splitTargets(" 127.0.0.1:1, 127.0.0.1:2,,")
	if want := []string{"127.0.0.1:1", "127.0.0.1:2"}; !slices.Equal(got, want) {
		t.Fatalf("splitTargets = %v, want %v", got, want)
	}
	if got := splitTargets(""); len(got) != 0 {
		t.Fatalf("splitTargets(\"\") = %v, want none", got)
	}
}

func TestChannelTargets(t *testing.T) {
	one := []string{"a"}
	two := []string{"a", "b"}
	cases := []struct {
		targets  []string
		channels int
		want     []string
	}{
		{one, 1, []string{"a"}},
		{one, 3, []string{"a", "a", "a"}}, // one (shared-port) target: as many channels as asked
		{two, 1, []string{"a", "b"}},      // fewer channels than targets: one per target
		{two, 4, []string{"a", "b", "a", "b"}},
		{two, 3, []string{"a", "b", "a"}},
	}
	for _, tc := range cases {
		if got := channelTargets(tc.targets, tc.channels); !slices.Equal(got, tc.want) {
			t.Errorf("channelTargets(%v, %d) = %v, want %v", tc.targets, tc.channels, got, tc.want)
		}
	}
}
