package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

type recoveryStats struct {
	Count  int `json:"count"`
	Errors int `json:"errors"`
	// Recovery: from the fault's end (healed: restarted, continued, resumed) to a write
	// served by every replica. A fault that overlapped another shares its recovery.
	MeanS float64 `json:"recovery_mean_s"`
	MaxS  float64 `json:"recovery_max_s"`
	// From start: from the fault's start to that write (the fault's whole effect).
	MeanDownS float64 `json:"from_start_mean_s"`
	MaxDownS  float64 `json:"from_start_max_s"`
	samples   []float64
	down      []float64
}

type report struct {
	Seed        uint64  `json:"seed"`
	Size        string  `json:"size"`
	Break       string  `json:"break,omitempty"`
	Seconds     float64 `json:"seconds"`
	Invocations int     `json:"invocations"`
	// The clients' share of the invocations: what the run promised to make.
	ClientInvocations int                       `json:"client_invocations"`
	Logical           int                       `json:"logical_operations"`
	ByOutcome         map[string]int            `json:"by_outcome"`
	ByKind            map[string]map[string]int `json:"by_kind"`
	Unknown           struct {
		Logical    int `json:"logical"`
		Applied    int `json:"applied"`
		NotApplied int `json:"not_applied"`
	} `json:"unknown_outcomes_resolved"`
	Faults    map[string]*recoveryStats `json:"faults"`
	Instances int                       `json:"instances"`
	Revisions int                       `json:"revisions"`
	Steps     map[string]int            `json:"steps_by_event"`
	Watch     struct {
		Followed   int `json:"instances_followed"`
		Sessions   int `json:"stream_sessions"`
		Reconnects int `json:"reconnects"` // streams opened after a revision already received
		Messages   int `json:"messages"`
		// Revisions made while a stream was open on their instance, and the longest any of
		// them took to arrive: in all, and leaving out the database's outages.
		LiveMessages int     `json:"live_messages"`
		MaxDelayS    float64 `json:"max_delay_s"`
		MaxUpDelayS  float64 `json:"max_up_delay_s"`
	} `json:"watch"`
	// The workload's timer races: calls sent to land as a timer of their instance came due.
	Races struct {
		Sent          int `json:"sent"`
		InFlightAtDue int `json:"in_flight_at_due"` // called before the due time, answered after it
		LeftAtDue     int `json:"left_at_due"`      // timers whose state another step left within raceWindow of their due time
	} `json:"timer_races"`
	Linear struct {
		Ok         int `json:"linearizable"`
		Illegal    int `json:"not_linearizable"`
		TimedOut   int `json:"inconclusive"`
		Operations int `json:"operations"`
	} `json:"linearizability"`
	Side        sideStats      `json:"side_workloads"`
	Checked     map[string]int `json:"checked"`
	Anomalies   int            `json:"anomalies"`
	ByProperty  map[string]int `json:"anomalies_by_property"`
	List        []anomaly      `json:"anomaly_list"`
	RunProblems []string       `json:"run_problems,omitempty"`
	Final       final          `json:"final"`
	Settled     bool           `json:"settled"`
}

func newReport(c *checker) *report {
	r := &report{Seed: c.meta.Config.Seed, Size: c.meta.Config.Size, Break: c.meta.Config.Break,
		ByOutcome: map[string]int{}, ByKind: map[string]map[string]int{}, Faults: map[string]*recoveryStats{},
		Steps: map[string]int{}, Final: c.meta.Final, Settled: c.meta.Settled != 0}
	r.Seconds = float64(c.meta.Ended-c.meta.Started) / 1e9
	return r
}

func (r *report) finish(c *checker) {
	r.Invocations = len(c.ops)
	r.Logical = len(c.logicals)
	for _, a := range c.ops {
		r.ByOutcome[a.Outcome]++
		if r.ByKind[a.Kind] == nil {
			r.ByKind[a.Kind] = map[string]int{}
		}
		r.ByKind[a.Kind][a.Outcome]++
	}
	for _, f := range c.faults {
		s := r.Faults[f.Kind]
		if s == nil {
			s = &recoveryStats{}
			r.Faults[f.Kind] = s
		}
		s.Count++
		if f.Err != "" {
			s.Errors++
		}
		if f.Recovered > 0 {
			d := float64(f.Recovered-max(f.End, f.GroupEnd)) / 1e9
			if d < 0 {
				d = 0
			}
			s.samples = append(s.samples, d)
			s.down = append(s.down, float64(f.Recovered-f.Start)/1e9)
		}
	}
	for _, s := range r.Faults {
		for i, d := range s.samples {
			s.MeanS += d / float64(len(s.samples))
			s.MaxS = max(s.MaxS, d)
			s.MeanDownS += s.down[i] / float64(len(s.down))
			s.MaxDownS = max(s.MaxDownS, s.down[i])
		}
	}
	r.Instances = len(c.instances)
	for _, rows := range c.history {
		r.Revisions += len(rows)
		for i := range rows {
			ev := rows[i].eventName()
			if rows[i].Revision == 1 {
				ev = "(start)"
			} else if ev == "" && rows[i].Status == "CANCELLED" {
				ev = "(cancel)"
			}
			r.Steps[ev]++
		}
	}
	r.Checked = c.checked
	r.Anomalies = len(c.anomalies)
	r.ByProperty = map[string]int{}
	for _, a := range c.anomalies {
		r.ByProperty[a.Property]++
	}
	r.List = c.anomalies
}

func (r *report) write(dir string) error {
	if err := writeJSON(filepath.Join(dir, "report.json"), r); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, "report.txt"), r.text())
}

func sortedKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (r *report) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos report: %s run, seed %d", r.Size, r.Seed)
	if r.Break != "" {
		fmt.Fprintf(&b, ", server broken on purpose: %s", r.Break)
	}
	fmt.Fprintf(&b, ", %.0fs\n\n", r.Seconds)
	fmt.Fprintf(&b, "invocations: %d (%d from the clients; %d logical operations): ok %d, failed %d, unknown %d\n", r.Invocations,
		r.ClientInvocations, r.Logical, r.ByOutcome[outcomeOK], r.ByOutcome[outcomeFail], r.ByOutcome[outcomeUnknown])
	for _, k := range sortedKeys(r.ByKind) {
		m := r.ByKind[k]
		fmt.Fprintf(&b, "  %-9s ok %6d  failed %6d  unknown %5d\n", k, m[outcomeOK], m[outcomeFail], m[outcomeUnknown])
	}
	fmt.Fprintf(&b, "unknown outcomes resolved: %d logical operations: %d applied once, %d not applied\n",
		r.Unknown.Logical, r.Unknown.Applied, r.Unknown.NotApplied)
	fmt.Fprintf(&b, "instances: %d, revisions: %d; steps by event:", r.Instances, r.Revisions)
	for _, k := range sortedKeys(r.Steps) {
		fmt.Fprintf(&b, " %s %d", k, r.Steps[k])
	}
	fmt.Fprintf(&b, "\nfaults: time to a write served by every replica, from the fault's start and from its end (recovery):\n")
	for _, k := range sortedKeys(r.Faults) {
		s := r.Faults[k]
		fmt.Fprintf(&b, "  %-21s %3d  from start mean %5.2fs max %5.2fs  recovery mean %5.2fs max %5.2fs", k, s.Count, s.MeanDownS, s.MaxDownS, s.MeanS, s.MaxS)
		if s.Errors > 0 {
			fmt.Fprintf(&b, "  (%d did not take effect)", s.Errors)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "watch: %d of %d instances followed, %d streams opened (%d of them reconnects after a revision received), %d messages; %d revisions made while a stream was open on them, the slowest arrived %.2fs after it was made (%.2fs with the database up)\n",
		r.Watch.Followed, r.Instances, r.Watch.Sessions, r.Watch.Reconnects, r.Watch.Messages, r.Watch.LiveMessages, r.Watch.MaxDelayS, r.Watch.MaxUpDelayS)
	fmt.Fprintf(&b, "timer races: %d calls sent to land as a timer came due, %d of them in flight at that moment; %d timers left by another step within 0.1s of coming due\n",
		r.Races.Sent, r.Races.InFlightAtDue, r.Races.LeftAtDue)
	sw, fl, sc := r.Side.SignalWithStart, r.Side.Flow, r.Side.Schedule
	fmt.Fprintf(&b, "signal-with-start: %d sent, %d told they started the instance, %d applied\n", sw.Sent, sw.Started, sw.Applied)
	fmt.Fprintf(&b, "flow control: %d leases of the limited queue; at most %d held at once (limit %d), %d of one key (limit %d)\n",
		fl.Leases, fl.MaxLeased, fl.LimitLeased, fl.MaxKey, fl.LimitKey)
	fmt.Fprintf(&b, "schedule: %d instances fired, %d fires seen in its record, %d nominal times without an instance explained by it\n",
		sc.Fires, sc.Recorded, sc.Explained)
	fm := r.Side.Family
	fmt.Fprintf(&b, "fan-out and children: %d batches (%d cancelled), %d item steps, %d item completions acknowledged, %d maps joined; %d children, %d ends delivered, %d cancelled with their parent\n",
		fm.Batches, fm.Cancelled, fm.Items, fm.Acked, fm.Joined, fm.Children, fm.Delivered, fm.Cascaded)
	bk := r.Side.Bulk
	fmt.Fprintf(&b, "batch operations: %d batches ended (%d completed, %d cancelled), %d of their steps; resets: %d steps, %d acknowledged\n",
		bk.Batches, bk.Completed, bk.Cancelled, bk.Steps, bk.Resets, bk.Acked)
	fmt.Fprintf(&b, "linearizability (porcupine): %d instances linearizable, %d not, %d inconclusive; %d operations\n",
		r.Linear.Ok, r.Linear.Illegal, r.Linear.TimedOut, r.Linear.Operations)
	fmt.Fprintf(&b, "settled after the faults: %v\n\nproperties:\n", r.Settled)
	for _, p := range propertyOrder {
		fmt.Fprintf(&b, "  [%s] %s (%d checked)\n", mark(r.ByProperty[p]), p, r.Checked[p])
	}
	for p, n := range r.ByProperty {
		known := false
		for _, q := range propertyOrder {
			known = known || p == q
		}
		if !known {
			fmt.Fprintf(&b, "  [%s] %s\n", mark(n), p)
		}
	}
	for _, p := range r.RunProblems {
		fmt.Fprintf(&b, "run problem: %s\n", p)
	}
	fmt.Fprintf(&b, "\nanomalies: %d\n", r.Anomalies)
	for i, a := range r.List {
		if i == 200 {
			fmt.Fprintf(&b, "  ... and %d more (report.json has them all)\n", len(r.List)-200)
			break
		}
		fmt.Fprintf(&b, "  - %s", a.Detail)
		if a.WF != "" {
			fmt.Fprintf(&b, " [instance %s]", a.WF)
		}
		if a.Op != "" {
			fmt.Fprintf(&b, " [operation %s]", a.Op)
		}
		fmt.Fprintf(&b, "\n      (%s)\n", a.Property)
	}
	if r.Anomalies > 0 {
		fmt.Fprintf(&b, "\nreplay: chaos run --size %s --seed %d (same schedule of faults and choices of operations)\n", r.Size, r.Seed)
	}
	return b.String()
}

func mark(n int) string {
	if n == 0 {
		return "ok"
	}
	return fmt.Sprintf("%d ANOMALIES", n)
}

var _ = time.Second
