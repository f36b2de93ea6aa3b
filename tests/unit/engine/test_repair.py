"""Retry and reset in the pure FSM (fsm.retry, fsm.reset), refusals included."""

from __future__ import annotations

import dataclasses

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.engine.model import Snapshot
from statewrightd.errors import FailedPrecondition

SOURCE = """
name: repaired
version: 1
context:
  n:   {type: int, default: 0}
  log: {type: list, reducer: append, default: []}
  divisor: {type: int, default: 0}
states:
  charging:
    entry: [{set: {log: "'enter charging'"}}]
    task: {queue: payments}
  review:
    wait: true
    entry: [{set: {log: "'enter review'"}}]
  dividing:
    entry: [{set: {n: "10 / context.divisor"}}]
  done: {}
transitions:
  - {from: charging, to: review}
  - {from: review, on: approve, to: dividing}
  - {from: review, to: review, after: 1h}
  - {from: dividing, to: done}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def _gave_up(defn: Definition) -> Snapshot:
    started = fsm.start(defn, "w", {}).snapshot
    failure = {"type": "BROKEN", "message": "it broke", "details": {}, "attempts": 3}
    failed = fsm.task_gave_up(defn, started, "charging", failure).snapshot
    assert failed.status is Status.FAILED
    return failed


def test_retry_of_a_task_that_gave_up_schedules_it_anew_without_entry(defn: Definition) -> None:
    failed = _gave_up(defn)
    result = fsm.retry(defn, failed)
    assert result.snapshot.status is Status.RUNNING and result.snapshot.state == "charging"
    assert result.snapshot.revision == failed.revision + 1 and result.error is None
    assert result.task.schedule is not None and result.task.schedule.state == "charging"
    # Its entering step ran the entry already: the retry does not run it twice.
    assert result.snapshot.context["log"] == ["enter charging"]
    assert not result.task.cancel and not result.timers.disarm  # nothing was open


def test_retry_of_a_step_failure_reruns_the_state_entry(defn: Definition) -> None:
    waiting = fsm.resume(defn, _waiting(defn), "approve", {})
    assert waiting.status is Status.FAILED and waiting.snapshot.state == "dividing"
    # The definition's data is fixed by an operator: the context it failed with is kept.
    fixed = dataclasses.replace(
        waiting.snapshot, context={**waiting.snapshot.context, "divisor": 2}
    )
    result = fsm.retry(defn, fixed)
    assert result.snapshot.status is Status.COMPLETED
    assert result.snapshot.context["n"] == 5
    assert [(t.from_state, t.to_state) for t in result.transitions] == [("dividing", "done")]


def test_retry_refuses_an_instance_that_has_not_failed(defn: Definition) -> None:
    waiting = _waiting(defn)
    with pytest.raises(FailedPrecondition) as refused:
        fsm.retry(defn, waiting)
    assert refused.value.reason == "NOT_FAILED"
    cancelled = fsm.cancel(defn, waiting, "stop").snapshot
    with pytest.raises(FailedPrecondition) as refused:
        fsm.retry(defn, cancelled)
    assert refused.value.reason == "NOT_FAILED"


def _waiting(defn: Definition) -> Snapshot:
    started = fsm.start(defn, "w", {}).snapshot
    done = fsm.complete_task(defn, started, "charging", {}).snapshot
    assert done.status is Status.WAITING and done.state == "review"
    return done


def test_reset_of_a_finished_instance_restores_state_context_and_timers(defn: Definition) -> None:
    waiting = _waiting(defn)
    fixed = dataclasses.replace(waiting, context={**waiting.context, "divisor": 5})
    completed = fsm.resume(defn, fixed, "approve", {}).snapshot
    assert completed.status is Status.COMPLETED
    result = fsm.reset(defn, completed, waiting.revision, waiting.state, waiting.context)
    assert result.snapshot.status is Status.WAITING and result.snapshot.state == "review"
    assert result.snapshot.context == waiting.context  # no entry action ran again
    assert result.snapshot.revision == completed.revision + 1
    assert [t.after for t in result.timers.arm] == ["1h"]
    assert result.transitions == ()


def test_reset_of_a_live_instance_cancels_what_it_has_open(defn: Definition) -> None:
    waiting = _waiting(defn)
    started = fsm.start(defn, "w", {}).snapshot  # revision 1, in the task state
    result = fsm.reset(defn, waiting, started.revision, started.state, started.context)
    assert result.snapshot.status is Status.RUNNING and result.snapshot.state == "charging"
    assert result.timers.disarm and result.timers.arm == ()  # review's timer goes
    assert result.task.cancel and result.task.schedule is not None  # a task anew


def test_reset_refusals(defn: Definition) -> None:
    waiting = _waiting(defn)
    with pytest.raises(FailedPrecondition) as refused:
        fsm.reset(defn, waiting, waiting.revision + 1, "review", waiting.context)
    assert refused.value.reason == "REVISION_NOT_FOUND"
    with pytest.raises(FailedPrecondition) as refused:
        fsm.reset(defn, waiting, 1, "nowhere", waiting.context)
    assert refused.value.reason == "STATE_NOT_FOUND"


MAPPED = """
name: mapped
version: 1
context:
  lines: {type: list, default: []}
  charges: {type: list, default: []}
states:
  charge_lines:
    task:
      queue: payments
      map: "context.lines"
      max_concurrency: 2
      apply: {charges: "results"}
  done: {}
transitions:
  - {from: charge_lines, to: done}
"""


def test_retry_and_reset_of_a_map_state_fan_out_every_item_anew() -> None:
    defn = load_definition(MAPPED)
    lines = [{"sku": f"s{i}"} for i in range(3)]
    started = fsm.start(defn, "m", {"lines": lines}).snapshot
    failure = {"type": "BROKEN", "message": "no", "details": {}, "attempts": 1}
    failed = fsm.item_gave_up(
        defn, started, "charge_lines", revision=1, item=0, failure=failure
    ).snapshot
    assert failed.status is Status.FAILED and failed.fan_out is None
    for result in (
        fsm.retry(defn, failed),
        fsm.reset(defn, failed, 1, started.state, started.context),
    ):
        assert result.snapshot.status is Status.RUNNING
        progress = result.snapshot.fan_out
        assert progress is not None and progress.revision == failed.revision + 1
        assert progress.total == 3 and (progress.completed, progress.given_up) == (0, 0)
        # Every item anew, the first max_concurrency offered, the others held.
        assert [t.item for t in result.task.items] == [0, 1, 2] and result.task.offered == 2
