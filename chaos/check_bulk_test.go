package main

import (
	"path/filepath"
	"testing"
)

// -- batch operations and resets ------------------------------------------------------

func tallyRow(wf string, rev int64, event string, ctx map[string]any, input map[string]any) histRow {
	r := histRow{WorkflowID: wf, Revision: rev, State: "open", Status: "RUNNING", Context: ctx, Input: input, TimeUS: t0/1000 + rev*1000}
	if event != "" {
		r.Event = &event
	}
	return r
}

// goodBulk: two tallies, each bumped once by batch bulk-0-0 (completed, 2 done); the
// first reset back to its revision 1 by an acknowledged reset (op-f0-9).
func goodBulk(t *testing.T) (*checker, []bulkRec) {
	c := bareChecker(t)
	for _, wf := range []string{"tally-0-0", "tally-0-1"} {
		c.history[wf] = []histRow{
			tallyRow(wf, 1, "", map[string]any{"last": "op-f0-1", "batch": "", "bumps": float64(0)}, nil),
			tallyRow(wf, 2, bumpEvent, map[string]any{"last": "op-f0-1", "batch": "bulk-0-0", "bumps": float64(1)}, map[string]any{"batch": "bulk-0-0"}),
		}
		c.instances[wf] = instRow{WorkflowID: wf, Definition: defTally, State: "open", Status: "RUNNING", Revision: 2}
	}
	c.history["tally-0-0"] = append(c.history["tally-0-0"],
		tallyRow("tally-0-0", 3, "", map[string]any{"last": "op-f0-1", "batch": "", "bumps": float64(0)},
			map[string]any{"reason": "op-f0-9", "to_revision": float64(1)}))
	c.bulkOps = append(c.bulkOps, &Op{ID: "op-f0-9", Kind: "reset", WF: "tally-0-0", Def: defTally, Outcome: outcomeOK, Rev: 3, To: 1})
	return c, []bulkRec{{ID: "bulk-0-0", State: "BATCH_STATE_COMPLETED", Matched: 2, Done: 2}}
}

func writeBulk(t *testing.T, c *checker, recs []bulkRec) {
	out, err := createJSONL(filepath.Join(c.dir, bulkFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		out.write(r)
	}
	out.close()
}

func TestBulkAcceptsGoodBatchesAndResets(t *testing.T) {
	c, recs := goodBulk(t)
	writeBulk(t, c, recs)
	c.checkBulk()
	if len(c.anomalies) != 0 {
		t.Fatal(c.anomalies)
	}
	if b := c.rep.Side.Bulk; b.Batches != 1 || b.Completed != 1 || b.Steps != 2 || b.Resets != 1 || b.Acked != 1 {
		t.Fatal(b)
	}
}

func TestBulkFlagsAnItemAppliedTwice(t *testing.T) {
	c, recs := goodBulk(t)
	wf := "tally-0-1"
	c.history[wf] = append(c.history[wf], tallyRow(wf, 3, bumpEvent,
		map[string]any{"last": "op-f0-1", "batch": "bulk-0-0", "bumps": float64(2)}, map[string]any{"batch": "bulk-0-0"}))
	writeBulk(t, c, recs)
	c.checkBulk()
	mustFind(t, anomaliesOf(c, propBulkOnce), "revision 3 applies batch bulk-0-0 again (it did at revision 2)")
}

func TestBulkFlagsAStepOutsideItsIdPrefix(t *testing.T) {
	if bulkPrefix("bulk-0-0") != "" || bulkPrefix("bulk-0-1") != "tally-0-1" || bulkPrefix("bulk-0-3") != "tally-0-2" {
		t.Fatal(bulkPrefix("bulk-0-1"), bulkPrefix("bulk-0-3"))
	}
	c, _ := goodBulk(t)
	for _, wf := range []string{"tally-0-1", "tally-0-0"} { // within bulk-0-1's prefix, and not
		c.history[wf] = append(c.history[wf], tallyRow(wf, 3, bumpEvent,
			map[string]any{"last": "op-f0-1", "batch": "bulk-0-1", "bumps": float64(2)}, map[string]any{"batch": "bulk-0-1"}))
	}
	writeBulk(t, c, []bulkRec{{ID: "bulk-0-0", State: "BATCH_STATE_COMPLETED", Matched: 2, Done: 2},
		{ID: "bulk-0-1", State: "BATCH_STATE_COMPLETED", Matched: 2, Done: 2}})
	c.checkBulk()
	found := anomaliesOf(c, propBulkPrefix)
	mustFind(t, found, "revision 3 applies batch bulk-0-1, which matched only ids starting with tally-0-1")
	if len(found) != 1 || len(anomaliesOf(c, propBulkOnce)) != 0 {
		t.Fatal(c.anomalies)
	}
}

func TestBulkFlagsCountsThatDisagreeWithHistory(t *testing.T) {
	c, _ := goodBulk(t)
	writeBulk(t, c, []bulkRec{
		{ID: "bulk-0-0", State: "BATCH_STATE_COMPLETED", Matched: 3, Done: 3}, // one item lost
		{ID: "bulk-0-1", State: "BATCH_STATE_RUNNING", Matched: 2},            // never ended
		{ID: "bulk-0-2", State: "BATCH_STATE_COMPLETED", Matched: 1, Done: 0, Failed: 1, // failed under a fault
			Failures: []bulkFailure{{WF: "workflows/tally-0-0", Code: "INTERNAL", Reason: "STORE_ERROR", Msg: "boom"}}},
	})
	c.checkBulk()
	mustFind(t, anomaliesOf(c, propBulkOnce),
		"batch bulk-0-0 completed with 3 done, but 2 instances have its step",
		"batch bulk-0-1 did not end (BATCH_STATE_RUNNING)",
		"batch bulk-0-2 completed with 1 matched, 0 done and 1 failed: 1 listed, the first workflows/tally-0-0 INTERNAL STORE_ERROR: boom")
}

func TestBulkFlagsACancelledBatchThatSteppedLess(t *testing.T) {
	c, _ := goodBulk(t)
	writeBulk(t, c, []bulkRec{{ID: "bulk-0-0", State: "BATCH_STATE_CANCELLED", Matched: 5, Done: 3}})
	c.checkBulk()
	mustFind(t, anomaliesOf(c, propBulkOnce), "batch bulk-0-0 was cancelled with 5 matched and 3 done, but 2 instances have its step")
}

func TestResetFlagsAWrongRestoreAndADouble(t *testing.T) {
	c, recs := goodBulk(t)
	wf := "tally-0-0"
	// Restored with the context of revision 2, not of revision 1 it names.
	c.history[wf][2].Context = map[string]any{"last": "op-f0-1", "batch": "bulk-0-0", "bumps": float64(1)}
	// And the same reset applied again.
	c.history[wf] = append(c.history[wf], tallyRow(wf, 4, "", map[string]any{"last": "op-f0-1", "batch": "", "bumps": float64(0)},
		map[string]any{"reason": "op-f0-9", "to_revision": float64(1)}))
	writeBulk(t, c, recs)
	c.checkBulk()
	mustFind(t, anomaliesOf(c, propReset), "revision 3 resets to revision 1, but rests in open with", "the reset is applied 2 times (revisions [3 4])")
}

func TestResetFlagsAnAcknowledgedResetNotInHistory(t *testing.T) {
	c, recs := goodBulk(t)
	c.bulkOps[0].Rev = 4
	writeBulk(t, c, recs)
	c.checkBulk()
	mustFind(t, anomaliesOf(c, propReset), "the reset was told it made revision 4, but history has it at [3]")
}
