"""The two start forms in the pure FSM: signal-with-start (the first step and an event as
one step, revision 1) and the delayed start (an instance that waits for its first step on
a timer), with what each arms, schedules and refuses."""

from __future__ import annotations

from datetime import timedelta

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.errors import FailedPrecondition, InvalidArgument

SOURCE = """
name: inbox
version: 1
context:
  items: {type: list, reducer: append, default: []}
  owner: {type: string, default: ""}
  greeted: {type: bool, default: false}
initial: collecting
states:
  collecting:
    entry:
      - set: {greeted: "true"}
  processing:
    task: {queue: inbox}
  held: {wait: true}
  done: {}
transitions:
  - {from: collecting, on: add, to: collecting, set: {items: "event.payload.item"}}
  - {from: collecting, on: hold, to: held}
  - {from: collecting, after: 30s, to: processing}
  - {from: collecting, on: process, to: processing}
  - {from: processing, on: stop, to: done}
  - {from: held, on: go, to: collecting}
"""

WAITER = """
name: waiter
version: 1
context:
  note: {type: string, default: ""}
initial: parked
states:
  parked: {wait: true}
  gone: {}
transitions:
  - {from: parked, on: go, to: gone}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def test_signal_with_start_applies_the_event_in_revision_1(defn: Definition) -> None:
    result = fsm.signal_with_start(defn, "w", {"owner": "ann"}, "add", {"item": "a"})
    snap = result.snapshot
    assert (snap.revision, snap.state, snap.status) == (1, "collecting", Status.RUNNING)
    assert snap.context["items"] == ["a"] and snap.context["owner"] == "ann"
    assert snap.context["greeted"] is True  # the entry actions of the first step ran
    assert [t.event for t in result.transitions] == ["add"]
    # The self-loop re-entered the state: its timer is armed once, nothing is disarmed.
    assert not result.timers.disarm
    assert [t.target for t in result.timers.arm] == ["processing"]


def test_signal_with_start_into_a_task_state_schedules_that_task_only(
    defn: Definition,
) -> None:
    result = fsm.signal_with_start(defn, "w", {}, "process", {})
    assert result.snapshot.state == "processing"
    assert not result.task.cancel and result.task.schedule is not None
    assert result.task.schedule.state == "processing"
    assert not result.timers.disarm and not result.timers.arm


def test_signal_with_start_to_a_wait_state_arms_nothing(defn: Definition) -> None:
    result = fsm.signal_with_start(defn, "w", {}, "hold", {})
    assert (result.snapshot.state, result.snapshot.status) == ("held", Status.WAITING)
    assert not result.timers.disarm and not result.timers.arm


def test_signal_with_start_refusals_create_nothing(defn: Definition) -> None:
    with pytest.raises(InvalidArgument) as unknown:
        fsm.signal_with_start(defn, "w", {}, "ad", {})
    assert unknown.value.reason == "UNKNOWN_EVENT"
    with pytest.raises(FailedPrecondition) as elsewhere:
        fsm.signal_with_start(defn, "w", {}, "go", {})
    assert elsewhere.value.reason == "EVENT_NOT_ALLOWED"
    waiter = load_definition(WAITER)
    with pytest.raises(FailedPrecondition) as waiting:
        fsm.signal_with_start(waiter, "w", {}, "go", {})
    assert waiting.value.reason == "SIGNAL_NOT_DELIVERABLE"
    assert waiting.value.metadata["status"] == "WAITING"


def test_a_delayed_start_waits_with_its_reason_and_its_start_timer(defn: Definition) -> None:
    result = fsm.scheduled(defn, "w", {"owner": "ann"}, timedelta(seconds=90))
    snap = result.snapshot
    assert (snap.revision, snap.state, snap.status) == (1, "collecting", Status.WAITING)
    assert snap.context["owner"] == "ann" and snap.context["greeted"] is False
    assert snap.error is not None and snap.error.reason == "START_DELAYED"
    assert fsm.is_delayed(snap)
    assert result.transitions == ()
    (timer,) = result.timers.arm
    assert timer.transition == fsm.START_TRANSITION and timer.delay == timedelta(seconds=90)
    assert timer.target == "collecting" and timer.after == "start_delay 90s"
    assert fsm.accepted_events(defn, snap) == ()


def test_a_delayed_start_checks_its_input_at_once(defn: Definition) -> None:
    with pytest.raises(InvalidArgument):
        fsm.scheduled(defn, "w", {"ownr": "x"}, timedelta(seconds=5))


def test_the_start_timer_runs_the_first_step(defn: Definition) -> None:
    waiting = fsm.scheduled(defn, "w", {}, timedelta(seconds=5)).snapshot
    result = fsm.timer(defn, waiting, fsm.START_TRANSITION)
    snap = result.snapshot
    assert (snap.revision, snap.state, snap.status) == (2, "collecting", Status.RUNNING)
    assert snap.error is None and snap.context["greeted"] is True
    assert [t.target for t in result.timers.arm] == ["processing"]
    with pytest.raises(FailedPrecondition) as stale:
        fsm.timer(defn, snap, fsm.START_TRANSITION)
    assert stale.value.reason == "TIMER_STALE"


def test_a_delayed_instance_is_not_resumed_or_signalled_but_cancelled() -> None:
    waiter = load_definition(WAITER)
    waiting = fsm.scheduled(waiter, "w", {}, timedelta(seconds=5)).snapshot
    with pytest.raises(FailedPrecondition) as early:
        fsm.resume(waiter, waiting, "go", {})
    assert early.value.reason == "START_DELAYED"
    with pytest.raises(FailedPrecondition) as signalled:
        fsm.signal(waiter, waiting, "go", {})
    assert signalled.value.reason == "NOT_RUNNING"
    cancelled = fsm.cancel(waiter, waiting, "not needed")
    assert cancelled.snapshot.status is Status.CANCELLED
    assert cancelled.timers.disarm  # the start timer goes with it


def test_start_now_starts_a_delayed_instance_with_the_event(defn: Definition) -> None:
    waiting = fsm.scheduled(defn, "w", {}, timedelta(hours=1)).snapshot
    result = fsm.start_now_with_signal(defn, waiting, "add", {"item": "x"})
    snap = result.snapshot
    assert (snap.revision, snap.status) == (2, Status.RUNNING)
    assert snap.context["items"] == ["x"] and snap.context["greeted"] is True
    assert result.timers.disarm  # the start timer is consumed by this step
    assert [t.target for t in result.timers.arm] == ["processing"]
