package main

import (
	"fmt"
	"testing"
)

// -- fan-out and children -----------------------------------------------------------

// batchRow is one step of batch-0-1: its state, status, event, actor, the item task it
// took ("" for none) and its context.
func batchRow(wf string, rev int64, state, status, event, actor, task string, ctx map[string]any) histRow {
	r := histRow{WorkflowID: wf, Revision: rev, State: state, Status: status, Actor: actor, Context: ctx, TimeUS: t0/1000 + rev*1000}
	if event != "" {
		r.Event = &event
	}
	if task != "" {
		r.Input = map[string]any{"task_id": task}
	}
	return r
}

// goodBatch: a batch of two items, each completed once, joined in order, then its child
// started, completed and delivered. The worker ops and the item tasks agree.
func goodBatch(t *testing.T) *checker {
	c := bareChecker(t)
	c.tasks = map[string][]taskRow{}
	wf, kid := "batch-0-1", "batch-0-1.kid.3"
	items := []any{"a", "b"}
	results := []any{map[string]any{"op": "op-w0-1", "index": float64(0)}, map[string]any{"op": "op-w0-2", "index": float64(1)}}
	c.history[wf] = []histRow{
		batchRow(wf, 1, "fan", "RUNNING", "", "", "", map[string]any{"last": "op-f0-1", "items": items}),
		batchRow(wf, 2, "fan", "RUNNING", "task_completed", "", "1.1", map[string]any{"last": "op-f0-1", "items": items}),
		batchRow(wf, 3, "kid", "RUNNING", "task_completed", "", "1.0", map[string]any{"last": "op-f0-1", "items": items, "results": results}),
		batchRow(wf, 4, "done", "COMPLETED", "task_completed", childActor, "3", map[string]any{"answer": "op-w0-3"}),
	}
	c.history[kid] = []histRow{
		batchRow(kid, 1, "work", "RUNNING", "", parentActor, "", nil),
		batchRow(kid, 2, "done", "COMPLETED", "task_completed", "", "1", map[string]any{"answer": "op-w0-3"}),
	}
	c.instances[wf] = instRow{WorkflowID: wf, Definition: defBatch, State: "done", Status: "COMPLETED", Revision: 4}
	c.instances[kid] = instRow{WorkflowID: kid, Definition: defKid, State: "done", Status: "COMPLETED", Revision: 2,
		Context: map[string]any{"answer": "op-w0-3"}}
	for i := 0; i < 2; i++ {
		idx := i
		c.tasks[wf] = append(c.tasks[wf], taskRow{WorkflowID: wf, TaskID: fmt.Sprintf("1.%d", i), Status: "COMPLETED", ItemIndex: &idx,
			Result: results[i].(map[string]any)})
		c.familyOps = append(c.familyOps, &Op{ID: fmt.Sprintf("op-w0-%d", i+1), Kind: "complete", WF: wf, TaskID: fmt.Sprintf("1.%d", i),
			Def: defBatch, Outcome: outcomeOK, TaskStatus: "COMPLETED"})
	}
	return c
}

func TestFamilyAcceptsAGoodBatch(t *testing.T) {
	c := goodBatch(t)
	c.checkFamily()
	if len(c.anomalies) != 0 {
		t.Fatal(c.anomalies)
	}
	if f := c.rep.Side.Family; f.Batches != 1 || f.Items != 2 || f.Acked != 2 || f.Joined != 1 || f.Children != 1 || f.Delivered != 1 {
		t.Fatal(f)
	}
}

func TestMapFlagsAnItemAppliedTwice(t *testing.T) {
	c := goodBatch(t)
	rows := c.history["batch-0-1"]
	// Item 1 applied again as a second step: its completion doubled.
	extra := batchRow("batch-0-1", 3, "fan", "RUNNING", "task_completed", "", "1.1", rows[1].Context)
	rows = append(rows[:2], append([]histRow{extra}, rows[2:]...)...)
	for i := range rows {
		rows[i].Revision = int64(i + 1)
	}
	c.history["batch-0-1"] = rows
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propMapOnce), "item 1 is applied 2 times")
}

func TestMapFlagsTwoCompletionsToldTheyWereApplied(t *testing.T) {
	c := goodBatch(t)
	c.familyOps = append(c.familyOps, &Op{ID: "op-w1-7", Kind: "complete", WF: "batch-0-1", TaskID: "1.0", Def: defBatch,
		Outcome: outcomeOK, TaskStatus: "COMPLETED"})
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propMapOnce), "item 0: 2 completions were each told they were applied")
}

func TestMapFlagsResultsOutOfOrderAndLost(t *testing.T) {
	c := goodBatch(t)
	join := &c.history["batch-0-1"][2]
	join.Context["results"] = []any{map[string]any{"op": "op-w0-2", "index": float64(1)}, nil}
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propMapOnce), "result 0 is item 1's", "result 1 is null, but the item did not give up")
}

func TestMapFlagsAJoinWithoutAnItemAndAnAcknowledgedCompletionLost(t *testing.T) {
	c := goodBatch(t)
	rows := c.history["batch-0-1"]
	c.history["batch-0-1"] = append([]histRow{rows[0]}, rows[2:]...) // item 1's step gone
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propMapOnce), "without a step of item 1 (lost)", "item 1's completion was told it was applied, but the item has no step")
}

func TestChildFlagsAnEndDeliveredTwice(t *testing.T) {
	c := goodBatch(t)
	rows := c.history["batch-0-1"]
	again := rows[3]
	again.Revision = 5
	c.history["batch-0-1"] = append(rows, again)
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propChildOnce), "delivered 2 times")
}

func TestChildFlagsACancelThatDidNotCascadeAndAnEndNeverDelivered(t *testing.T) {
	c := goodBatch(t)
	rows := c.history["batch-0-1"]
	rows[3] = batchRow("batch-0-1", 4, "kid", "CANCELLED", "", "", "", rows[2].Context)
	c.instances["batch-0-1.kid.3"] = instRow{WorkflowID: "batch-0-1.kid.3", Definition: defKid, State: "work", Status: "RUNNING", Revision: 1}
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propChildOnce), "the cancel did not cascade")

	c = goodBatch(t)
	c.history["batch-0-1"] = c.history["batch-0-1"][:3] // the child ended, its parent still waits
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propChildOnce), "its end was never delivered")
}

func TestChildFlagsAChildOfNoEntryAndAWrongOutcome(t *testing.T) {
	c := goodBatch(t)
	c.instances["batch-0-1.kid.2"] = instRow{WorkflowID: "batch-0-1.kid.2", Definition: defKid, State: "work", Status: "RUNNING", Revision: 1}
	c.history["batch-0-1.kid.2"] = []histRow{batchRow("batch-0-1.kid.2", 1, "work", "RUNNING", "", parentActor, "", nil)}
	c.instances["batch-0-1.kid.3"] = instRow{WorkflowID: "batch-0-1.kid.3", Definition: defKid, State: "work", Status: "CANCELLED", Revision: 2}
	c.checkFamily()
	mustFind(t, anomaliesOf(c, propChildOnce), "which did not enter kid", "which ended CANCELLED, as \"task_completed\"")
}
