package main

import (
	"strings"
	"time"
)

// checkRun checks what the run itself promised, and what the replicas logged: the
// operations it was to make, every fault of its schedule injected with effect, the
// recovery after each within its bound, and no replica traceback.
func (c *checker) checkRun() {
	cfg := c.meta.Config
	// Operations: the clients' invocations (their budget is the run's promise).
	clientOps := 0
	for i := range c.ops {
		if strings.HasPrefix(c.ops[i].Proc, "c") {
			clientOps++
		}
	}
	c.rep.ClientInvocations = clientOps
	c.checked[propPlan]++
	if cfg.Ops > 0 && int64(clientOps) < cfg.Ops {
		c.flag(propPlan, "", "", "the clients made %d invocations, fewer than the %d the run promised", clientOps, cfg.Ops)
	}
	// Faults: each kind of the schedule, as many times as it promised, with effect.
	promised := map[string]int{}
	for _, k := range cfg.Faults {
		promised[k] += max(cfg.Rounds, 1)
	}
	effective := map[string]int{}
	for _, f := range c.faults {
		if f.Err == "" {
			effective[f.Kind]++
		}
	}
	for _, k := range sortedKeys(promised) {
		c.checked[propPlan]++
		if effective[k] < promised[k] {
			c.flag(propPlan, "", "", "%d %s fault(s) took effect, fewer than the %d the schedule promised", effective[k], k, promised[k])
		}
	}
	// Recovery: from the end of the fault (or of the last one on with it) to a write served
	// by every replica.
	for _, f := range c.faults {
		c.checked[propRecoveryBound]++
		end := max(f.End, f.GroupEnd)
		switch {
		case f.Recovered == 0:
			c.flag(propRecoveryBound, "", "", "after %s fault %d (%s), some replica served no write within the probe's limit", f.Kind, f.Seq, f.Target)
		case f.Recovered-end > int64(recoveryBound):
			c.flag(propRecoveryBound, "", "", "after %s fault %d (%s), every replica served a write again only %.2fs after it ended (bound %s)",
				f.Kind, f.Seq, f.Target, float64(f.Recovered-end)/1e9, recoveryBound)
		}
	}
	// The replicas' logs.
	final := c.meta.Final
	for _, log := range sortedKeys(final.Tracebacks) {
		c.checked[propServerHealthy]++
		if n := final.Tracebacks[log]; n > 0 {
			c.flag(propServerHealthy, "", "", "%s logs %d traceback(s): %s", log, n, strings.Join(final.Exceptions[log], "; "))
		}
		if n := final.Unexpected[log]; n > 0 {
			c.flag(propServerHealthy, "", "", "%s logs %d step(s) that failed unexpectedly", log, n)
		}
	}
	c.countRaces()
}

// countRaces reports how often the workload's timer races came close: calls sent to land
// as a timer came due that were in flight at that moment, and timers that came due and
// were disarmed or consumed instead of firing.
func (c *checker) countRaces() {
	for i := range c.ops {
		a := &c.ops[i]
		if a.Race == 0 || a.Try != 0 {
			continue
		}
		c.rep.Races.Sent++
		if a.Call <= a.Race && a.Race <= a.Ret {
			c.rep.Races.InFlightAtDue++
		}
	}
	for _, rows := range c.history {
		for i := 0; i+1 < len(rows); i++ {
			for _, t := range rows[i].Timers {
				due := parseTime(t.DueTime)
				next := &rows[i+1]
				// Left by another step within a moment of the timer coming due.
				if left := next.TimeUS*1000 - due; next.eventName() != "after" && left > -int64(raceWindow) && left < int64(raceWindow) {
					c.rep.Races.LeftAtDue++
				}
			}
		}
	}
}

// raceWindow: a timer counts as raced when another step left its state within this of
// its due time.
const raceWindow = 100 * time.Millisecond
