package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The checkers of the fan-out's and the child workflow's promises, on the run's batches
// (chaos-batch: a map task state `fan`, entered by the start at revision 1, then a
// child workflow state `kid`; family.go). A map item's step and a child's end delivered
// carry no client's operation: these checks read them whole, from history (each step's
// input names its task, its actor who made it), the item tasks (their index and result),
// the join's `results` and what the workers were told.

const (
	propMapOnce   = "each map item applied once: every item of a map has exactly one step (none lost or doubled, its task written once), and the join's results hold each item's acknowledged result at its index"
	propChildOnce = "each child outcome delivered once: a child starts once, under its derived id, its end is one step of its parent (actor statewright:child) as it ended, and a parent cancelled while it waits cancels the child"

	childActor  = "statewright:child"
	parentActor = "statewright:parent"
	fanState    = "fan"
	kidState    = "kid"
)

// familyStats: what the report says of the batches.
type familyStats struct {
	Batches   int `json:"batches"`
	Items     int `json:"items"`     // item steps (completed or given up)
	Acked     int `json:"acked"`     // item completions acknowledged to a worker
	Joined    int `json:"joined"`    // batches that joined their map
	Children  int `json:"children"`  // child instances
	Delivered int `json:"delivered"` // child ends delivered to a parent
	Cascaded  int `json:"cascaded"`  // children cancelled by their parent's cancel
	Cancelled int `json:"cancelled"` // batches cancelled
}

func (c *checker) checkFamily() {
	st := &c.rep.Side.Family
	for _, wf := range sortedKeys(c.instances) {
		switch c.instances[wf].Definition {
		case defBatch:
			st.Batches++
			if rows := c.history[wf]; len(rows) > 0 {
				c.checkMap(wf, rows)
				c.checkChild(wf, rows)
				if rows[len(rows)-1].Status == "CANCELLED" {
					st.Cancelled++
				}
			}
		case defKid:
			st.Children++
			c.checkKid(wf)
		}
	}
}

// itemOf is the index of the map item whose task a step took ("1.<index>": the items
// the start wrote), or -1.
func itemOf(r *histRow) int {
	id, _ := r.Input["task_id"].(string)
	text, ok := strings.CutPrefix(id, "1.")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		return -1
	}
	return n
}

// checkMap: one step per item, each item's task written once, and the join's results in
// input order, each the one completion a worker was told was applied.
func (c *checker) checkMap(wf string, rows []histRow) {
	st := &c.rep.Side.Family
	c.checked[propMapOnce]++
	items, _ := rows[0].Context["items"].([]any)
	n := len(items)
	steps := map[int][]*histRow{}
	joined := -1 // the row of the join
	for i := 1; i < len(rows); i++ {
		r := &rows[i]
		if rows[i-1].State != fanState || terminal(rows[i-1].Status) {
			continue
		}
		if idx := itemOf(r); idx >= 0 {
			st.Items++
			steps[idx] = append(steps[idx], r)
			if idx >= n {
				c.flag(propMapOnce, wf, "", "revision %d is the step of item %d, but the map has %d items", r.Revision, idx, n)
			}
			if r.State != fanState && r.Status != "CANCELLED" && r.eventName() == "task_completed" {
				joined = i
			}
		}
	}
	for _, idx := range sortedInts(steps) {
		if s := steps[idx]; len(s) > 1 {
			var revs []string
			for _, r := range s {
				revs = append(revs, fmt.Sprint(r.Revision))
			}
			c.flag(propMapOnce, wf, "", "item %d is applied %d times, at revisions %s", idx, len(s), strings.Join(revs, ", "))
		}
	}
	tasks := map[int]taskRow{}
	for _, t := range c.tasks[wf] {
		if text, ok := strings.CutPrefix(t.TaskID, "1."); ok {
			idx, _ := strconv.Atoi(text)
			if _, dup := tasks[idx]; dup {
				c.flag(propMapOnce, wf, "", "item %d's task is written twice", idx)
			}
			if t.ItemIndex == nil || *t.ItemIndex != idx {
				c.flag(propMapOnce, wf, "", "task %s has item_index %v", t.TaskID, t.ItemIndex)
			}
			tasks[idx] = t
		}
	}
	if len(c.tasks[wf]) > 0 && len(tasks) != n {
		c.flag(propMapOnce, wf, "", "the map of %d items wrote %d item tasks", n, len(tasks))
	}
	// What the workers were told: one completion applied per item, at most.
	acked := map[int][]string{}
	for _, a := range c.familyOps {
		idx := -1
		if text, ok := strings.CutPrefix(a.TaskID, "1."); ok && a.WF == wf {
			idx, _ = strconv.Atoi(text)
		}
		if idx < 0 || a.Kind != "complete" || a.Outcome != outcomeOK || a.TaskStatus != "COMPLETED" || contains(acked[idx], a.ID) {
			continue
		}
		st.Acked++
		acked[idx] = append(acked[idx], a.ID)
	}
	for _, idx := range sortedInts(acked) {
		ids := acked[idx]
		switch {
		case len(ids) > 1:
			c.flag(propMapOnce, wf, ids[1], "item %d: %d completions were each told they were applied: %s", idx, len(ids), strings.Join(ids, ", "))
		case len(steps[idx]) == 0:
			c.flag(propMapOnce, wf, ids[0], "item %d's completion was told it was applied, but the item has no step (lost)", idx)
		case tasks[idx].Result != nil && tasks[idx].Result["op"] != ids[0]:
			c.flag(propMapOnce, wf, ids[0], "item %d's completion was told it was applied, but its task holds %v", idx, tasks[idx].Result)
		}
	}
	if joined < 0 {
		return
	}
	st.Joined++
	for idx := 0; idx < n; idx++ {
		if len(steps[idx]) == 0 {
			c.flag(propMapOnce, wf, "", "the map joined at revision %d without a step of item %d (lost)", rows[joined].Revision, idx)
		}
	}
	results, ok := rows[joined].Context["results"].([]any)
	if !ok {
		return // a context the store no longer holds (a later step's own)
	}
	if len(results) != n {
		c.flag(propMapOnce, wf, "", "the join at revision %d applied %d results for %d items", rows[joined].Revision, len(results), n)
	}
	for idx, res := range results {
		r, _ := res.(map[string]any)
		gaveUp := len(steps[idx]) > 0 && steps[idx][0].eventName() == "task_failed"
		switch {
		case r == nil && !gaveUp:
			c.flag(propMapOnce, wf, "", "the join's result %d is null, but the item did not give up (lost)", idx)
		case r == nil:
		case r["index"] != float64(idx):
			c.flag(propMapOnce, wf, "", "the join's result %d is item %v's (out of input order, or doubled)", idx, r["index"])
		case len(acked[idx]) == 1 && r["op"] != acked[idx][0]:
			c.flag(propMapOnce, wf, acked[idx][0], "the join's result %d is %v's, not the completion told it was applied", idx, r["op"])
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkChild: the parent's side of its child. Its end is delivered at most once, as it
// ended, and surely once unless the parent left the state before; a parent cancelled
// while it waits leaves no child running.
func (c *checker) checkChild(wf string, rows []histRow) {
	st := &c.rep.Side.Family
	entry := -1
	var deliveries []*histRow
	for i := range rows {
		if rows[i].State == kidState && entry < 0 && !terminal(rows[i].Status) {
			entry = i
		}
		if rows[i].Actor == childActor {
			deliveries = append(deliveries, &rows[i])
		}
	}
	if entry < 0 {
		if len(deliveries) > 0 {
			c.flag(propChildOnce, wf, "", "revision %d is a child's end delivered, but the instance never waited for a child", deliveries[0].Revision)
		}
		return
	}
	c.checked[propChildOnce]++
	kidID := fmt.Sprintf("%s.%s.%d", wf, kidState, rows[entry].Revision)
	kid, exists := c.instances[kidID]
	last := &rows[len(rows)-1]
	kidLast := ""
	if exists {
		kidLast = kid.Status
	}
	switch {
	case len(deliveries) > 1:
		c.flag(propChildOnce, wf, "", "the end of child %s is delivered %d times, at revisions %d and %d", kidID, len(deliveries), deliveries[0].Revision, deliveries[1].Revision)
	case len(deliveries) == 1 && !terminal(kidLast):
		c.flag(propChildOnce, wf, "", "revision %d delivers the end of child %s, which is %q", deliveries[0].Revision, kidID, kidLast)
	case len(deliveries) == 1:
		st.Delivered++
		d := deliveries[0]
		want := "task_completed"
		if kidLast != "COMPLETED" {
			want = "child_failed"
		}
		if d.eventName() != want {
			c.flag(propChildOnce, wf, "", "revision %d delivers child %s, which ended %s, as %q", d.Revision, kidID, kidLast, d.eventName())
		} else if want == "task_completed" && d.Context != nil && d.Context["answer"] != kid.Context["answer"] {
			c.flag(propChildOnce, wf, "", "revision %d applied the answer %v, but child %s ended with %v", d.Revision, d.Context["answer"], kidID, kid.Context["answer"])
		}
	case last.Status == "CANCELLED" && last.State == kidState:
		// Cancelled while it waited: the cancel cascades, and nothing is delivered.
		if exists && !terminal(kidLast) {
			c.flag(propChildOnce, wf, "", "the parent was cancelled at revision %d, but its child %s is still %s (the cancel did not cascade)", last.Revision, kidID, kidLast)
		}
		if kidLast == "CANCELLED" {
			st.Cascaded++
		}
	case terminal(kidLast):
		c.flag(propChildOnce, wf, "", "child %s ended %s, but its end was never delivered (the parent rests %s in %s)", kidID, kidLast, last.Status, last.State)
	case !exists:
		c.flag(propChildOnce, wf, "", "the parent waits (%s in %s) for child %s, which was never started", last.Status, last.State, kidID)
	}
}

// checkKid: a child belongs to the entry of its parent's state its id derives from, and
// its start (by statewright:parent) is its revision 1 alone.
func (c *checker) checkKid(wf string) {
	c.checked[propChildOnce]++
	parent, revText, ok := strings.Cut(wf, "."+kidState+".")
	rev, err := strconv.ParseInt(revText, 10, 64)
	prows := c.history[parent]
	switch {
	case !ok || err != nil || rev < 1 || int(rev) > len(prows):
		c.flag(propChildOnce, wf, "", "a child whose id derives from no step of a parent")
		return
	case prows[rev-1].State != kidState || (rev > 1 && prows[rev-2].State == kidState):
		c.flag(propChildOnce, wf, "", "a child of %s's revision %d, which did not enter %s", parent, rev, kidState)
	}
	rows := c.history[wf]
	if len(rows) > 0 && rows[0].Actor != parentActor {
		c.flag(propChildOnce, wf, "", "its start was made by %q, not %s", rows[0].Actor, parentActor)
	}
}

// sortedInts: the keys of an int map, in order.
func sortedInts[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
