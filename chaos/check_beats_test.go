package main

import "testing"

func beatOp(id string, call, ret int64, outcome string) Op {
	op := Op{ID: id, Kind: "heartbeat", WF: "order-1", TaskID: "2", Beat: id, Call: call, Ret: ret, Outcome: outcome}
	if outcome == outcomeFail {
		op.Code = "FailedPrecondition"
	}
	return op
}

func completionOp(id, beat string, call, ret int64) Op {
	return Op{ID: id, Kind: "complete", WF: "order-1", TaskID: "2", Beat: beat, Call: call, Ret: ret,
		Outcome: outcomeOK, TaskStatus: "COMPLETED"}
}

func TestBeatsAcceptTheLastHeartbeatOrOneThatMayHaveBeen(t *testing.T) {
	c := bareChecker(t)
	c.ops = []Op{
		beatOp("b1", 10, 20, outcomeOK),
		beatOp("b2", 30, 40, outcomeOK),
		beatOp("b3", 42, 48, outcomeFail), // refused: never the task's
		completionOp("c1", "b2", 50, 60),
		{ID: "b6", Kind: "heartbeat", WF: "order-1", TaskID: "2", Beat: "b6", Call: 61, Ret: 62, Outcome: outcomeFail, Code: "Unavailable"},
		completionOp("c7", "b6", 63, 64), // answered unavailable, yet applied
		beatOp("b4", 70, 80, outcomeUnknown),
		completionOp("c2", "b2", 90, 95), // b4 may or may not have been applied
		completionOp("c3", "b4", 90, 95),
		beatOp("b5", 100, 120, outcomeOK),
		completionOp("c4", "b5", 105, 110), // alongside it
		completionOp("c5", "b2", 105, 110), // b4's outcome is open, b5 ran alongside
	}
	c.ops = append(c.ops, Op{ID: "c6", Kind: "complete", WF: "order-2", TaskID: "1", Call: 1, Ret: 2,
		Outcome: outcomeOK, TaskStatus: "COMPLETED"}) // a task with no heartbeat
	c.checkBeats()
	if len(c.anomalies) != 0 || c.checked[propBeats] != 7 {
		t.Fatal(c.anomalies, c.checked)
	}
}

func TestBeatsFlagAnAnswerThatMissedAnAcknowledgedHeartbeat(t *testing.T) {
	c := bareChecker(t)
	c.ops = []Op{
		beatOp("b1", 10, 20, outcomeOK),
		beatOp("b2", 30, 40, outcomeOK),
		completionOp("c1", "b1", 50, 60), // b2 superseded b1 before c1 was sent
		completionOp("c2", "", 50, 60),   // as the lease left the task
	}
	c.checkBeats()
	found := anomaliesOf(c, propBeats)
	mustFind(t, found, "answered the heartbeat details of heartbeat b1, where the task's last heartbeat was one of [heartbeat b2]",
		"answered the heartbeat details of no heartbeat")
	if len(found) != 2 {
		t.Fatal(found)
	}
}
