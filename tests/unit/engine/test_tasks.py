"""Task states in the pure FSM, and the task scheduling rules (backoff, giving up, polls)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.engine.clock import Clock
from statewrightd.engine.model import NO_TASK_WORK
from statewrightd.engine.tasks import (
    MAX_POLLERS,
    STALLED_AFTER,
    TaskPolls,
    failure_payload,
    gives_up,
    retry_delay,
)
from statewrightd.errors import FailedPrecondition, InvalidArgument
from statewrightd.store.records import QueueCounts, TaskRecord
from tests.support.store_records import task_record

SOURCE = """
name: tasked
version: 1
context:
  amount:    {type: number, default: 10.0}
  charge_id: {type: string, default: ""}
  log:       {type: list, reducer: append, default: []}
  failure:   {type: map, default: {}}
states:
  charging:
    task:
      queue: payments
      input: "{'amount': context.amount, 'id': workflow.id}"
      retry: {non_retryable: [CARD_DECLINED]}
      apply: {charge_id: "string(result.id)", log: "'charged ' + string(result.id)"}
  shipping:
    task: {queue: shipping}
  bad_input:
    task:
      queue: payments
      input: "{'q': 10 / int(context.amount - 10.0)}"  # divides by zero by default
  declined: {}
  shipped: {}
  stopped: {}
transitions:
  - {from: charging, to: shipping, guard: "context.charge_id != ''"}
  - from: charging
    on: task_failed
    to: declined
    guard: "event.payload.type == 'CARD_DECLINED'"
    set: {failure: "event.payload"}
  - {from: charging, on: stop, to: stopped}
  - {from: charging, on: again, to: charging}
  - {from: shipping, to: shipped}
  - {from: bad_input, to: shipped}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def test_entering_a_task_state_schedules_its_task_with_the_input(defn: Definition) -> None:
    result = fsm.start(defn, "w1", {"amount": 25.0})
    assert (result.snapshot.state, result.snapshot.status) == ("charging", Status.RUNNING)
    plan = result.task
    assert not plan.cancel and plan.schedule is not None
    assert plan.schedule.state == "charging" and plan.schedule.spec.queue == "payments"
    assert dict(plan.schedule.input) == {"amount": 25.0, "id": "w1"}
    # Defaults: no task waits forever by omission.
    spec = defn.states["shipping"].task
    assert spec is not None
    assert (spec.start_to_close, spec.heartbeat, spec.schedule_to_close) == (300.0, None, 3600.0)
    assert spec.retry.max_attempts == 3 and spec.retry.backoff == 2.0


def test_a_completion_applies_the_result_then_takes_the_automatic_transition(
    defn: Definition,
) -> None:
    started = fsm.start(defn, "w2", {}).snapshot
    result = fsm.complete_task(defn, started, "charging", {"id": "ch-9"})
    snapshot = result.snapshot
    assert (snapshot.state, snapshot.status) == ("shipping", Status.RUNNING)
    assert snapshot.context["charge_id"] == "ch-9"
    assert snapshot.context["log"] == ["charged ch-9"]
    # It leaves the state (its task is finished by the command) and schedules the next.
    assert result.task.cancel and result.task.schedule is not None
    assert result.task.schedule.spec.queue == "shipping"
    assert [(t.from_state, t.to_state) for t in result.transitions] == [("charging", "shipping")]


def test_a_completion_whose_result_does_not_fit_fails_the_instance(defn: Definition) -> None:
    started = fsm.start(defn, "w3", {}).snapshot
    result = fsm.complete_task(defn, started, "charging", {})  # no `id`
    assert result.snapshot.status is Status.FAILED
    assert result.snapshot.error is not None
    assert result.task.cancel, "a failed instance leaves nothing open"


def test_a_completion_for_a_state_left_is_refused(defn: Definition) -> None:
    started = fsm.start(defn, "w4", {}).snapshot
    stopped = fsm.signal(defn, started, "stop", {}).snapshot
    with pytest.raises(FailedPrecondition) as refused:
        fsm.complete_task(defn, stopped, "charging", {"id": "late"})
    assert refused.value.reason == "TASK_CANCELLED"


def test_leaving_a_task_state_by_an_event_cancels_its_task(defn: Definition) -> None:
    started = fsm.start(defn, "w5", {}).snapshot
    result = fsm.signal(defn, started, "stop", {})
    assert result.snapshot.state == "stopped"
    assert result.task.cancel and result.task.schedule is None
    cancelled = fsm.cancel(defn, started, "no")
    assert cancelled.task.cancel


def test_reentering_a_task_state_schedules_a_new_task(defn: Definition) -> None:
    started = fsm.start(defn, "w6", {}).snapshot
    result = fsm.signal(defn, started, "again", {})
    assert result.task.cancel and result.task.schedule is not None


def test_a_task_that_gives_up_fires_task_failed(defn: Definition) -> None:
    started = fsm.start(defn, "w7", {}).snapshot
    failure = {"type": "CARD_DECLINED", "message": "no", "details": {}, "attempts": 1}
    result = fsm.task_gave_up(defn, started, "charging", failure)
    assert result.snapshot.state == "declined"
    assert result.snapshot.context["failure"] == failure
    assert [t.event for t in result.transitions] == ["task_failed"]


@pytest.mark.parametrize(
    ("kind", "reason"), [("OTHER", "TASK_FAILED"), ("TIMED_OUT", "TASK_TIMED_OUT")]
)
def test_a_task_that_gives_up_unhandled_fails_the_instance(
    defn: Definition, kind: str, reason: str
) -> None:
    started = fsm.start(defn, "w8", {}).snapshot
    failure = {"type": kind, "message": "it broke", "details": {}, "attempts": 3}
    result = fsm.task_gave_up(defn, started, "charging", failure)
    error = result.snapshot.error
    assert result.snapshot.status is Status.FAILED and error is not None
    assert error.reason == reason and "it broke" in error.message
    assert error.metadata["attempts"] == "3"


def test_task_failed_is_reserved_for_tasks(defn: Definition) -> None:
    started = fsm.start(defn, "w9", {}).snapshot
    assert fsm.accepted_events(defn, started) == ("stop", "again")
    for event in ("task_failed", "task_completed"):
        with pytest.raises(InvalidArgument) as refused:
            fsm.signal(defn, started, event, {})
        assert refused.value.reason == "RESERVED_EVENT"


def test_an_input_that_fails_to_evaluate_fails_the_entering_step(defn: Definition) -> None:
    d = dataclasses.replace(defn, initial="bad_input")
    result = fsm.start(d, "w10", {})
    assert result.snapshot.status is Status.FAILED
    assert result.task is NO_TASK_WORK


# -- scheduling rules ------------------------------------------------------------------

NOW = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)


def _task(**changes: object) -> TaskRecord:
    base = task_record(
        "w",
        "1",
        NOW,
        leased="t",
        lease_expire_time=NOW,
        retry={
            "initial_interval": 1.0,
            "backoff": 2.0,
            "max_interval": 5.0,
            "non_retryable": ["X"],
        },
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_retry_delays_are_full_jitter_under_an_exponential_ceiling() -> None:
    rng = random.Random(7)
    policy = _task().retry
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (10, 5.0)]:
        delays = [retry_delay(policy, attempt, rng) for _ in range(400)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.9 and min(delays) < ceiling * 0.1, "spread over [0, c]"


def test_a_failure_gives_up_when_non_retryable_out_of_attempts_or_late() -> None:
    assert not gives_up(_task(), "FLAKY", NOW, False)
    assert gives_up(_task(), "FLAKY", NOW, True)
    assert gives_up(_task(), "X", NOW, False)
    assert gives_up(_task(attempt=3), "FLAKY", NOW, False)
    assert gives_up(_task(), "FLAKY", NOW + timedelta(hours=2), False)
    payload = failure_payload(_task(attempt=2), {"type": "", "message": None})
    assert payload == {"type": "ERROR", "message": "", "details": {}, "attempts": 2}


class _ManualClock(Clock):
    def __init__(self) -> None:
        super().__init__()
        self.at = NOW

    def now(self) -> datetime:
        return self.at


def test_polls_record_pollers_and_report_a_queue_nobody_polls() -> None:
    clock = _ManualClock()
    polls = TaskPolls(clock)
    backlog = QueueCounts("payments", ready=2, oldest_ready=NOW, leased=0)
    assert not polls.stalled(backlog, polls.now())
    clock.at = NOW + timedelta(seconds=STALLED_AFTER + 1)
    assert polls.stalled(backlog, polls.now()), "a backlog and no poll for a minute"
    polls.polled("payments", "worker-1")
    view = polls.view(backlog, "payments", polls.now())
    assert view.pollers == ("worker-1",) and not view.stalled
    assert view.oldest_age == pytest.approx(STALLED_AFTER + 1)
    assert not polls.stalled(QueueCounts("idle", 0, None, 3), polls.now()), "no backlog"
    clock.at += timedelta(seconds=STALLED_AFTER + 1)
    view = polls.view(backlog, "payments", polls.now())
    assert view.pollers == () and view.stalled, "pollers are those of the last minute"


def test_a_waiting_poll_wakes_on_notify_and_on_close() -> None:
    async def scenario() -> list[str]:
        polls = TaskPolls(Clock())
        polls.bind(asyncio.get_running_loop())
        seen: list[str] = []

        async def wait(name: str) -> None:
            await polls.wait("payments", 10.0)
            seen.append(name)

        first = asyncio.create_task(wait("notified"))
        await asyncio.sleep(0.01)
        assert polls.waiting() == 1
        polls.notify("payments")
        await asyncio.wait_for(first, 2)
        second = asyncio.create_task(wait("closed"))
        await asyncio.sleep(0.01)
        polls.close()
        await asyncio.wait_for(second, 2)
        await asyncio.wait_for(polls.wait("payments", 10.0), 1)  # closed: at once
        return seen

    assert asyncio.run(scenario()) == ["notified", "closed"]


def test_a_notify_between_looking_and_waiting_is_not_lost() -> None:
    async def scenario() -> None:
        polls = TaskPolls(Clock())
        polls.bind(asyncio.get_running_loop())
        seen = polls.generation("payments")
        polls.notify("payments")  # a task became ready while the lease query ran
        # Only the generation check can end an hour's wait within the bound.
        await asyncio.wait_for(polls.wait("payments", 3600.0, since=seen), 10)

    asyncio.run(scenario())


def test_the_retry_delay_of_a_thousandth_attempt_is_its_ceiling_not_an_overflow() -> None:
    retry = {"initial_interval": 1.0, "backoff": 2.0, "max_interval": 60.0}
    rng = random.Random(7)
    delays = [retry_delay(retry, attempt, rng) for attempt in (1_100, 10**6)]
    assert all(0.0 <= d <= 60.0 for d in delays)


def test_polls_of_queues_no_definition_names_are_not_remembered() -> None:
    async def scenario() -> TaskPolls:
        polls = TaskPolls(Clock(), named=lambda queue: queue == "payments")
        polls.bind(asyncio.get_running_loop())
        for i in range(500):
            polls.polled(f"made-up-{i}", f"w{i}")
            seen = polls.generation(f"made-up-{i}")
            await polls.wait(f"made-up-{i}", 0.0, since=seen)
        polls.polled("payments", "w")
        return polls

    polls = asyncio.run(scenario())
    assert polls.queues() == ["payments"]
    assert polls._queues.keys() == {"payments"}


def test_a_queue_keeps_its_most_recent_pollers() -> None:
    polls = TaskPolls(Clock())
    for i in range(MAX_POLLERS * 3):
        polls.polled("payments", f"w{i}")
    polls.polled("payments", f"w{MAX_POLLERS * 2 + 1}")  # polls again: most recent now
    view = polls.view(None, "payments", polls.now())
    assert len(view.pollers) == MAX_POLLERS
    assert f"w{MAX_POLLERS * 3 - 1}" in view.pollers and "w0" not in view.pollers
