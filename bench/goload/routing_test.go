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

func TestWatchRouting(t *testing.T) {
	for _, targets := range [][]string{{"a"}, {"a", "b"}, {"a", "b", "c"}} {
		for _, asked := range []int{1, 2, 8} {
			channels := watchChannels(asked, len(targets))
			if channels < asked || channels%len(targets) != 0 {
				t.Fatalf("watchChannels(%d, %d) = %d", asked, len(targets), channels)
			}
			layout := channelTargets(targets, channels)
			used := map[int]int{}
			for instance := range 60 {
				for k := range 3 {
					j := watchChannel(instance, k, len(targets), channels)
					// Every stream and signal of an instance on the instance's own replica.
					if got, want := layout[j], targets[instance%len(targets)]; got != want {
						t.Fatalf("%d targets, %d channels: instance %d stream %d on %s, want %s",
							len(targets), channels, instance, k, got, want)
					}
					if k == 0 {
						used[j]++
					}
				}
			}
			// Instances spread evenly over all the connections.
			if len(used) != channels {
				t.Errorf("%d targets, %d channels: only %d connections used", len(targets), channels, len(used))
			}
		}
	}
}

func TestDigits(t *testing.T) {
	for s, want := range map[string]bool{"": false, "0": true, "1764000000000000000": true, "+1": false, "-1": false, "12a": false, "99999999999999999999": false} {
		if _, ok := digits(s); ok != want {
			t.Errorf("digits(%q) ok = %v, want %v", s, ok, want)
		}
	}
}
