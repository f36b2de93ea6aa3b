package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The checkers of the batch operations' and the resets' promises, on the run's tallies
// (chaos-tally: a state `open` that takes `bump` signals, each recording the batch that
// sent it in `batch`; bulk.go). A batch's step is the server's own (no client's
// operation): these checks read history whole, with what the run read of each batch at
// its end (bulk.jsonl) and what the resets were told.

const (
	propBulkOnce   = "a batch applies each item at most once: no instance has two steps of one batch; a completed batch stepped exactly the instances it counts done, with none failed; a cancelled one no fewer than it counts done and no more than it matched; every batch ends"
	propBulkPrefix = "a batch narrowed by an id prefix steps only instances whose ids start with it"
	propReset      = "a reset restores its revision, once: its step has the state and context of the revision it went back to; a reset (a request id, retried) is applied at most once, an acknowledged one at the revision it was told"
)

// bulkStats: what the report says of the batch operations and resets.
type bulkStats struct {
	Batches   int `json:"batches"`   // started (as the run read them at their end)
	Completed int `json:"completed"` // ended COMPLETED
	Cancelled int `json:"cancelled"` // ended CANCELLED
	Steps     int `json:"steps"`     // bump steps in history
	Resets    int `json:"resets"`    // reset steps in history
	Acked     int `json:"acked"`     // resets acknowledged to the run
}

func (c *checker) checkBulk() {
	st := &c.rep.Side.Bulk
	recs, err := readJSONL[bulkRec](filepath.Join(c.dir, bulkFile))
	if err != nil {
		if !os.IsNotExist(err) {
			c.flag(propBulkOnce, "", "", "%s: %v", bulkFile, err)
		}
		recs = nil
	}
	stepped := map[string]int64{}   // batch -> instances it stepped
	resetAt := map[string][]int64{} // a reset's reason (its operation id) -> the revisions it made
	for _, wf := range sortedKeys(c.instances) {
		if c.instances[wf].Definition != defTally {
			continue
		}
		rows := c.history[wf]
		first := map[string]int64{}
		for i := range rows {
			r := &rows[i]
			if r.eventName() == bumpEvent {
				st.Steps++
				c.checked[propBulkOnce]++
				b := r.str("batch")
				if at, dup := first[b]; dup {
					c.flag(propBulkOnce, wf, "op-"+b, "revision %d applies batch %s again (it did at revision %d)", r.Revision, b, at)
					continue
				}
				first[b] = r.Revision
				stepped[b]++
				if p := bulkPrefix(b); p != "" {
					c.checked[propBulkPrefix]++
					if !strings.HasPrefix(wf, p) {
						c.flag(propBulkPrefix, wf, "op-"+b, "revision %d applies batch %s, which matched only ids starting with %s", r.Revision, b, p)
					}
				}
			}
			if to, ok := r.Input["to_revision"].(float64); ok {
				st.Resets++
				c.checked[propReset]++
				reason, _ := r.Input["reason"].(string)
				resetAt[reason] = append(resetAt[reason], r.Revision)
				c.checkRestored(wf, rows, r, int64(to), reason)
			}
		}
	}
	for _, a := range c.bulkOps {
		if a.Kind != "reset" {
			continue
		}
		made := resetAt[a.ID]
		c.checked[propReset]++
		if len(made) > 1 {
			c.flag(propReset, a.WF, a.ID, "the reset is applied %d times (revisions %v)", len(made), made)
			delete(resetAt, a.ID) // said once
		}
		if a.Outcome == outcomeOK {
			st.Acked++
			if len(made) == 0 || made[0] != a.Rev {
				c.flag(propReset, a.WF, a.ID, "the reset was told it made revision %d, but history has it at %v", a.Rev, made)
			}
		}
	}
	for _, rec := range recs {
		c.checkBatchEnd(rec, stepped[rec.ID])
	}
}

// checkRestored: a reset's step rests where the revision it went back to rested.
func (c *checker) checkRestored(wf string, rows []histRow, r *histRow, to int64, reason string) {
	if to < 1 || to >= r.Revision || int(to) > len(rows) {
		c.flag(propReset, wf, reason, "revision %d resets to revision %d, which it cannot", r.Revision, to)
		return
	}
	back := &rows[to-1]
	if r.State != back.State || r.digest() != back.digest() {
		c.flag(propReset, wf, reason, "revision %d resets to revision %d, but rests in %s with %v where that revision had %s with %v",
			r.Revision, to, r.State, r.Context, back.State, back.Context)
	}
}

// checkBatchEnd: a batch's counts against the steps history has of it.
func (c *checker) checkBatchEnd(rec bulkRec, steps int64) {
	st := &c.rep.Side.Bulk
	c.checked[propBulkOnce]++
	op := "op-" + rec.ID
	switch rec.State {
	case "BATCH_STATE_COMPLETED":
		st.Batches++
		st.Completed++
		if steps != rec.Done {
			c.flag(propBulkOnce, "", op, "batch %s completed with %d done, but %d instances have its step", rec.ID, rec.Done, steps)
		}
		if rec.Failed > 0 || rec.Done+rec.Failed != rec.Matched {
			c.flag(propBulkOnce, "", op, "batch %s completed with %d matched, %d done and %d failed: %s", rec.ID, rec.Matched, rec.Done, rec.Failed, failuresText(rec.Failures))
		}
	case "BATCH_STATE_CANCELLED":
		st.Batches++
		st.Cancelled++
		if steps < rec.Done || steps > rec.Matched {
			c.flag(propBulkOnce, "", op, "batch %s was cancelled with %d matched and %d done, but %d instances have its step", rec.ID, rec.Matched, rec.Done, steps)
		}
		if rec.Failed > 0 {
			c.flag(propBulkOnce, "", op, "batch %s failed %d instances: %s", rec.ID, rec.Failed, failuresText(rec.Failures))
		}
	case "ABSENT":
		if steps > 0 {
			c.flag(propBulkOnce, "", op, "batch %s does not exist, but %d instances have its step", rec.ID, steps)
		}
	default:
		c.flag(propBulkOnce, "", op, "batch %s did not end (%s) within the run's wait", rec.ID, rec.State)
	}
}

func failuresText(fs []bulkFailure) string {
	if len(fs) == 0 {
		return "no failure listed"
	}
	f := fs[0]
	return fmt.Sprintf("%d listed, the first %s %s %s: %s", len(fs), f.WF, f.Code, f.Reason, f.Msg)
}
