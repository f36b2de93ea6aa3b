package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The checkers of three promises beyond the register's: signal-with-start (one instance
// per id), flow control (never more leased than the limit) and schedules (one instance
// per nominal time, none early, none missing unrecorded).

const (
	propOneInstance = "a signal-with-start or start creates an instance at most once per id: at most one operation is told it created it, at revision 1"
	propFlow        = "a limited queue never has more tasks leased at once than its max_leased, nor more of one concurrency key than its key_max_leased"
	propSchedule    = "a schedule starts one instance per nominal time, named for it, never before it nor while paused, and misses none between its first and last fire without recording why"
)

// sideStats: what the report says of the three workloads.
type sideStats struct {
	SignalWithStart struct {
		Sent    int `json:"sent"`    // logical operations
		Started int `json:"started"` // told they created the instance
		Applied int `json:"applied"` // in a history
	} `json:"signal_with_start"`
	Flow struct {
		Leases      int `json:"leases"`
		MaxLeased   int `json:"max_leased_seen"`     // the most leases surely held at once
		MaxKey      int `json:"max_key_leased_seen"` // the most of one key
		LimitLeased int `json:"max_leased"`
		LimitKey    int `json:"key_max_leased"`
	} `json:"flow"`
	Schedule struct {
		Fires     int `json:"fires"`     // instances it started
		Recorded  int `json:"recorded"`  // fires seen in its record (GetSchedule, the dump)
		Explained int `json:"explained"` // nominal times without an instance, recorded as skipped, missed or failed
	} `json:"schedule"`
	Family familyStats `json:"family"` // the batches' fan-outs and children (check_family.go)
	Bulk   bulkStats   `json:"bulk"`   // the batch operations and resets (check_bulk.go)
}

func (c *checker) checkSideWork() {
	c.checkOneInstance()
	c.checkFlow()
	c.checkSchedule()
	c.checkFamily()
	c.checkBulk()
}

// checkOneInstance: per id, the operations told that they created the instance (a
// start's `created`, a signal-with-start's `started`) are one at most, and it is applied
// at revision 1. Attempts of one operation (a request id retried) count once.
func (c *checker) checkOneInstance() {
	st := &c.rep.Side.SignalWithStart
	for _, wf := range sortedKeys(c.byWF) {
		var creators []string
		for _, l := range c.byWF[wf] {
			if l.kind == "sws" {
				st.Sent++
				if len(l.applied) > 0 {
					st.Applied++
				}
			}
			if l.kind != "start" && l.kind != "sws" {
				continue
			}
			told := false
			for _, a := range l.attempts {
				told = told || (a.Outcome == outcomeOK && a.Created)
			}
			if !told {
				continue
			}
			if l.kind == "sws" {
				st.Started++
			}
			creators = append(creators, l.id)
			if l.ackRev != 1 {
				c.flag(propOneInstance, wf, l.id, "this %s was told it created the instance, at revision %d", l.kind, l.ackRev)
			}
		}
		if len(creators) == 0 {
			continue
		}
		c.checked[propOneInstance]++
		if len(creators) > 1 {
			sort.Strings(creators)
			c.flag(propOneInstance, wf, creators[1], "%d operations were told they created this instance: %s", len(creators), strings.Join(creators, ", "))
		}
	}
}

// leaseSpan is a time in which a lease was surely held: from the poll's answer (the lease
// was granted and committed before it) to the earliest moment it may have ended.
type leaseSpan struct {
	op         string
	wf, key    string
	start, end int64
}

// limitedSpans: each lease of the limited queue, as the workers saw it, cut down to when
// it was surely held. It may have ended with the first completion or failure that
// presented it (whatever the answer), or with the step that finished its task, or when
// its lease ran out (as the poll, or the latest accepted heartbeat, said): a lease that
// ran out counts on the server until it is swept, after that moment, so the span is
// within the server's own count. Leases a worker never heard of (a poll whose answer was
// lost) only add to the server's count: none of them can make a false alarm.
func (c *checker) limitedSpans() []leaseSpan {
	ends := map[string]int64{}
	until := map[string]int64{}
	for _, a := range c.taskCalls {
		if a.Kind == "heartbeat" && a.Outcome == outcomeOK && a.LeaseExp > until[a.Lease] {
			until[a.Lease] = a.LeaseExp
		}
	}
	for i := range c.ops {
		a := &c.ops[i]
		if (a.Kind == "complete" || a.Kind == "fail") && a.Lease != "" {
			if e, ok := ends[a.Lease]; !ok || a.Call < e {
				ends[a.Lease] = a.Call
			}
		}
	}
	var spans []leaseSpan
	for _, a := range c.taskCalls {
		if a.Kind != "lease" || a.Def != defLimited {
			continue
		}
		end := max(a.LeaseExp, until[a.Lease])
		if e, ok := ends[a.Lease]; ok {
			end = min(end, e)
		}
		if rows := c.history[a.WF]; a.Task >= 1 && int(a.Task) < len(rows) {
			end = min(end, rows[a.Task].TimeUS*1000) // the step after the one that scheduled it
		}
		end -= int64(leaseTolerance)
		if end > a.Ret {
			spans = append(spans, leaseSpan{op: a.ID, wf: a.WF, key: a.Key, start: a.Ret, end: end})
		}
	}
	return spans
}

// overLimit finds the moments when more than limit spans (of one key, with byKey) were
// held at once: one line for each time the count went over, with the spans held then.
// It also answers the most held at once.
func overLimit(spans []leaseSpan, limit int, byKey bool) (excess []string, most int) {
	type edge struct {
		t    int64
		open bool
		s    *leaseSpan
	}
	var edges []edge
	for i := range spans {
		if byKey && spans[i].key == "" {
			continue
		}
		edges = append(edges, edge{spans[i].start, true, &spans[i]}, edge{spans[i].end, false, &spans[i]})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return !edges[i].open && edges[j].open // a lease ending as another begins: not at once
	})
	held := map[string]map[*leaseSpan]bool{}
	for _, e := range edges {
		group := ""
		if byKey {
			group = e.s.key
		}
		if held[group] == nil {
			held[group] = map[*leaseSpan]bool{}
		}
		if !e.open {
			delete(held[group], e.s)
			continue
		}
		held[group][e.s] = true
		n := len(held[group])
		most = max(most, n)
		if n == limit+1 {
			var names []string
			for s := range held[group] {
				names = append(names, fmt.Sprintf("%s (%s)", s.op, s.wf))
			}
			sort.Strings(names)
			excess = append(excess, fmt.Sprintf("%d leases held at once at %s%s, over the limit of %d: %s",
				n, time.Unix(0, e.t).UTC().Format("15:04:05.000"), keyLabel(group), limit, strings.Join(names, ", ")))
		}
	}
	return excess, most
}

func keyLabel(key string) string {
	if key == "" {
		return ""
	}
	return " for key " + key
}

func (c *checker) checkFlow() {
	side := c.meta.Config.Side
	st := &c.rep.Side.Flow
	st.LimitLeased, st.LimitKey = int(side.MaxLeased), int(side.KeyMaxLeased)
	spans := c.limitedSpans()
	st.Leases = len(spans)
	if side.MaxLeased > 0 {
		c.checked[propFlow] += len(spans)
		excess, most := overLimit(spans, int(side.MaxLeased), false)
		st.MaxLeased = most
		for _, e := range excess {
			c.flag(propFlow, "", "", "queue %s: %s", limitedQueue, e)
		}
	}
	if side.KeyMaxLeased > 0 && side.MaxLeased == 0 {
		c.checked[propFlow] += len(spans)
	}
	if side.KeyMaxLeased > 0 {
		excess, most := overLimit(spans, int(side.KeyMaxLeased), true)
		st.MaxKey = most
		for _, e := range excess {
			c.flag(propFlow, "", "", "queue %s: %s", limitedQueue, e)
		}
	}
}

// scheduleRow is the schedule as dumped at the end.
type scheduleRow struct {
	ScheduleID string `json:"schedule_id"`
	Document   struct {
		Counts struct {
			Fires, Skips, Misses int
		} `json:"counts"`
		Recent []struct {
			Nominal    string `json:"nominal"`
			Actual     string `json:"actual"`
			WorkflowID string `json:"workflow_id"`
			Outcome    string `json:"outcome"`
			Reason     string `json:"reason"`
		} `json:"recent"`
	} `json:"document"`
}

// scheduleRecord: every fire the run saw the schedule record (GetSchedule while it ran,
// the dump at the end), by nominal time; and the misses it counted.
func (c *checker) scheduleRecord() (map[int64][]ScheduleAction, int) {
	byNominal := map[int64][]ScheduleAction{}
	seen, _ := readJSONL[ScheduleAction](filepath.Join(c.dir, "schedule.jsonl"))
	misses := 0
	if data, err := os.ReadFile(filepath.Join(c.dir, "db", "schedules.jsonl")); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r scheduleRow
			if json.Unmarshal([]byte(line), &r) != nil || r.ScheduleID != scheduleID {
				continue
			}
			misses = r.Document.Counts.Misses
			for _, a := range r.Document.Recent {
				seen = append(seen, ScheduleAction{Nominal: parseTime(a.Nominal), Actual: parseTime(a.Actual),
					WF: a.WorkflowID, Outcome: "SCHEDULE_ACTION_OUTCOME_" + strings.ToUpper(a.Outcome), Reason: a.Reason})
			}
		}
	}
	for _, a := range seen {
		byNominal[a.Nominal] = append(byNominal[a.Nominal], a)
	}
	return byNominal, misses
}

// checkSchedule: the instances of chaos-fire are the schedule's fires. Each is named
// `<schedule id>-<nominal time, RFC 3339>`, for a nominal time of its interval, with that
// nominal time in its context (the fire's input expression); it has one step, its start,
// made no earlier than its nominal time and before the schedule was paused; no two
// instances share a nominal time; every fire recorded as started has its instance; and
// each nominal time between the first and the last fire has an instance, or the record
// says it was skipped or failed (for a reason of its own: a refusal of one attempt, such
// as a draining replica's, is no reason to drop a fire) or missed (named, or counted: the
// record names only its last ten fires; a miss is a fire older than the catch-up window).
func (c *checker) checkSchedule() {
	side, times := c.meta.Config.Side, c.meta.Side
	if side.Interval <= 0 || times.ScheduleCreated == 0 {
		return
	}
	st := &c.rep.Side.Schedule
	interval := int64(side.Interval)
	byNominal := map[int64][]string{}
	for _, wf := range sortedKeys(c.instances) {
		if c.instances[wf].Definition != defFire {
			continue
		}
		st.Fires++
		c.checked[propSchedule]++
		text, ok := strings.CutPrefix(wf, scheduleID+"-")
		nominal := parseTime(text)
		if !ok || nominal == 0 {
			c.flag(propSchedule, wf, "", "an instance of %s that is not named <schedule id>-<nominal time>", defFire)
			continue
		}
		byNominal[nominal] = append(byNominal[nominal], wf)
		rows := c.history[wf]
		switch {
		case nominal%interval != 0:
			c.flag(propSchedule, wf, "", "nominal time %s is not one of every %s", text, side.Interval)
		case len(rows) == 0:
			continue // flagged as an instance row without history
		case parseTime(rows[0].str("nominal")) != nominal:
			c.flag(propSchedule, wf, "", "started with nominal time %q in its context, not its own %s", rows[0].str("nominal"), text)
		}
		if len(rows) != 1 {
			c.flag(propSchedule, wf, "", "has %d steps: its start happened more than once, or something else stepped it", len(rows))
		}
		if started := rows[0].TimeUS * 1000; started < nominal {
			c.flag(propSchedule, wf, "", "started %.3fs before its nominal time", float64(nominal-started)/1e9)
		}
		if times.SchedulePaused != 0 && nominal > times.SchedulePaused {
			c.flag(propSchedule, wf, "", "fired for %s, after the schedule was paused", text)
		}
	}
	var nominals []int64
	for n, wfs := range byNominal {
		nominals = append(nominals, n)
		if len(wfs) > 1 {
			sort.Strings(wfs)
			c.flag(propSchedule, wfs[1], "", "%d instances for one nominal time: %s", len(wfs), strings.Join(wfs, ", "))
		}
	}
	sort.Slice(nominals, func(i, j int) bool { return nominals[i] < nominals[j] })
	record, misses := c.scheduleRecord()
	for n, actions := range record {
		st.Recorded++
		for _, a := range actions {
			if a.Outcome == "SCHEDULE_ACTION_OUTCOME_STARTED" && len(byNominal[n]) == 0 {
				c.flag(propSchedule, strings.TrimPrefix(a.WF, "workflows/"), "", "the schedule recorded its fire of %s as started, but no instance exists",
					time.Unix(0, n).UTC().Format(time.RFC3339))
			}
		}
	}
	if len(nominals) == 0 {
		c.flag(propSchedule, "", "", "the schedule started no instance in the run's %.0fs", float64(c.meta.LoadEnded-times.ScheduleCreated)/1e9)
		return
	}
	uncounted := misses
	for _, actions := range record {
		for _, a := range actions {
			if a.Outcome == "SCHEDULE_ACTION_OUTCOME_MISSED" {
				uncounted-- // named: the count need not cover it
				break
			}
		}
	}
	for n := nominals[0]; n <= nominals[len(nominals)-1]; n += interval {
		if len(byNominal[n]) > 0 {
			continue
		}
		ok, dropped := explained(record[n])
		if ok {
			st.Explained++
			continue
		}
		at := time.Unix(0, n).UTC().Format(time.RFC3339)
		if dropped != "" {
			c.flag(propSchedule, scheduleID+"-"+at, "", "no instance for nominal time %s: the schedule recorded its fire FAILED for %s, a refusal of one attempt, and never tried it again",
				at, dropped)
			continue
		}
		if uncounted > 0 {
			uncounted--
			st.Explained++
			continue
		}
		c.flag(propSchedule, scheduleID+"-"+at, "", "no instance for nominal time %s, and the schedule records no skip, miss or failure of it", at)
	}
}

// transientReasons are refusals of one attempt alone (the replica draining, storage
// down, its queues full) or an outcome it could not know: a fire that met one must be
// tried again (its instance found, or started), never given up as failed.
var transientReasons = map[string]bool{"SHUTTING_DOWN": true, "UNAVAILABLE": true, "STORAGE_UNAVAILABLE": true,
	"OVERLOADED": true, "OUTCOME_UNKNOWN": true, "DEADLINE_EXCEEDED": true, "WORKFLOW_BUSY": true,
	"REQUEST_IN_DOUBT": true, "ABORTED": true}

// explained says whether the schedule's record of a nominal time says why it started
// nothing: missed, or skipped, or failed for a reason that is the fire's own (its input,
// its definition), not a refusal of one attempt (then it says why it was dropped).
func explained(actions []ScheduleAction) (bool, string) {
	dropped := ""
	for _, a := range actions {
		switch {
		case a.Outcome == "SCHEDULE_ACTION_OUTCOME_MISSED":
			return true, ""
		case a.Outcome == "SCHEDULE_ACTION_OUTCOME_FAILED" && transientReasons[a.Reason]:
			dropped = a.Reason
		case a.Reason != "" && (a.Outcome == "SCHEDULE_ACTION_OUTCOME_SKIPPED" || a.Outcome == "SCHEDULE_ACTION_OUTCOME_FAILED"):
			return true, ""
		}
	}
	return false, dropped
}
