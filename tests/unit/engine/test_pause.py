"""Pause and unpause in the pure FSM (fsm.pause, fsm.unpause), and the refusals of every
other step of a paused instance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.engine.model import Snapshot
from statewrightd.engine.snapshots import instance_record, snapshot_of
from statewrightd.errors import FailedPrecondition

SOURCE = """
name: pausable
version: 1
context:
  n: {type: int, default: 0}
states:
  working:
    task: {queue: jobs}
  review:
    wait: true
  listening: {}
  done: {}
transitions:
  - {from: working, to: review}
  - {from: review, on: approve, to: listening}
  - {from: review, to: done, after: 1h}
  - {from: listening, on: poke, to: done}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def _review(defn: Definition) -> Snapshot:
    started = fsm.start(defn, "w", {}).snapshot
    waiting = fsm.complete_task(defn, started, "working", {}).snapshot
    assert waiting.status is Status.WAITING and waiting.state == "review"
    return waiting


def _refused(reason: str, call: object) -> None:
    assert callable(call)
    with pytest.raises(FailedPrecondition) as refused:
        call()
    assert refused.value.reason == reason


def test_pause_is_a_step_that_changes_nothing_else(defn: Definition) -> None:
    waiting = _review(defn)
    result = fsm.pause(defn, waiting, "key:ops", "looking into it")
    paused = result.snapshot
    assert result.changed and paused.revision == waiting.revision + 1
    assert (paused.state, paused.status, paused.context) == (
        "review",
        Status.WAITING,
        waiting.context,
    )
    assert paused.pause is not None and (paused.pause.actor, paused.pause.reason) == (
        "key:ops",
        "looking into it",
    )
    # Its timers stay armed and nothing is scheduled or cancelled.
    assert not result.timers.disarm and not result.timers.arm
    assert not result.task.cancel and result.task.schedule is None
    assert result.transitions == ()

    unpaused = fsm.unpause(defn, paused)
    assert unpaused.snapshot.pause is None and unpaused.snapshot.revision == paused.revision + 1
    assert not unpaused.timers.disarm and not unpaused.task.cancel
    assert fsm.resume(defn, unpaused.snapshot, "approve", {}).snapshot.state == "listening"


def test_every_step_of_a_paused_instance_but_unpause_and_cancel_is_refused(
    defn: Definition,
) -> None:
    waiting = _review(defn)
    paused = fsm.pause(defn, waiting, "key:ops", "").snapshot
    paused_reason = "WORKFLOW_PAUSED"
    _refused(paused_reason, lambda: fsm.resume(defn, paused, "approve", {}))
    _refused(paused_reason, lambda: fsm.timer(defn, paused, 2))  # the 1h timer came due
    _refused(paused_reason, lambda: fsm.reset(defn, paused, 1, "working", {}))

    running = fsm.resume(defn, waiting, "approve", {}).snapshot
    paused_running = fsm.pause(defn, running, "key:ops", "").snapshot
    _refused(paused_reason, lambda: fsm.signal(defn, paused_running, "poke", {}))

    started = fsm.start(defn, "t", {}).snapshot  # in the task state
    paused_task = fsm.pause(defn, started, "key:ops", "").snapshot
    _refused(paused_reason, lambda: fsm.complete_task(defn, paused_task, "working", {}))
    failure = {"type": "X", "message": "m", "details": {}, "attempts": 1}
    _refused(paused_reason, lambda: fsm.task_gave_up(defn, paused_task, "working", failure))

    cancelled = fsm.cancel(defn, paused, "no longer wanted")
    assert cancelled.snapshot.status is Status.CANCELLED and cancelled.snapshot.pause is None
    assert cancelled.timers.disarm  # the review timer goes with it


def test_pause_and_unpause_refusals(defn: Definition) -> None:
    waiting = _review(defn)
    paused = fsm.pause(defn, waiting, "key:ops", "").snapshot
    _refused("ALREADY_PAUSED", lambda: fsm.pause(defn, paused, "key:other", ""))
    _refused("NOT_PAUSED", lambda: fsm.unpause(defn, waiting))
    listening = fsm.resume(defn, waiting, "approve", {}).snapshot
    done = fsm.signal(defn, listening, "poke", {})
    assert done.snapshot.status is Status.COMPLETED
    _refused("ALREADY_TERMINAL", lambda: fsm.pause(defn, done.snapshot, "key:ops", ""))


def test_the_pause_round_trips_through_the_store_record(defn: Definition) -> None:
    waiting = _review(defn)
    paused = fsm.pause(defn, waiting, "key:ops", "why").snapshot
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    record = instance_record(paused, now, now)
    assert record.pause == {"reason": "why", "actor": "key:ops", "time": now.isoformat()}
    again = snapshot_of(record)
    assert again.pause is not None and again.pause.since == now
    assert instance_record(again, now, now).pause == record.pause
