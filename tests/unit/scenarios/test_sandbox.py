"""The sandbox: the server's engine driven from one thread, on a virtual clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from statewrightd import errors
from statewrightd.definitions.registry import read_file
from statewrightd.domain import Status, TaskStatus
from statewrightd.engine.tasks import FIRST_LEASE
from statewrightd.scenarios.sandbox import DEFAULT_START, NoTask, Sandbox, VirtualClock


@pytest.fixture
def sandbox(project: Path) -> Sandbox:
    box = Sandbox()
    box.place(read_file(project / "ticket.yaml"))
    return box


def test_the_clock_stands_still_until_moved_and_never_goes_back() -> None:
    clock = VirtualClock()
    assert clock.now() == DEFAULT_START == clock.now()
    clock.set(DEFAULT_START + timedelta(hours=1))
    with pytest.raises(ValueError, match="cannot go back"):
        clock.set(DEFAULT_START)


def test_a_start_arms_timers_in_due_order_and_time_fires_the_first(sandbox: Sandbox) -> None:
    sandbox.start("ticket", workflow_id="w")
    found = sandbox.get("w")
    assert (found.record.state, found.record.status) == ("open", Status.WAITING)
    assert [(t.target, t.due_time - DEFAULT_START) for t in found.timers] == [
        ("late", timedelta(hours=1)),
        ("done", timedelta(hours=2)),
    ]
    sandbox.advance(timedelta(minutes=59, seconds=59))
    assert sandbox.get("w").record.state == "open"
    sandbox.advance(timedelta(hours=3))
    after = sandbox.get("w")
    # The 1h timer fired at its due time and disarmed the 2h one: `late` never moved on.
    assert (after.record.state, after.record.status, after.timers) == ("late", "RUNNING", ())
    assert after.record.context["tags"] == ["late"]
    assert after.record.update_time == DEFAULT_START + timedelta(hours=1)
    assert sandbox.now() == DEFAULT_START + timedelta(hours=3, minutes=59, seconds=59)


def test_resume_signal_and_cancel_are_the_servers_steps(sandbox: Sandbox) -> None:
    sandbox.start("ticket", workflow_id="w", input={"n": 4.0})
    assert sandbox.get("w").record.context["n"] == 4  # through a Struct, as on the wire
    with pytest.raises(errors.FailedPrecondition) as refused:
        sandbox.resume("w", "poke")
    assert refused.value.reason == "EVENT_NOT_ALLOWED"
    rejected = sandbox.signal("w", "go")
    assert (rejected.accepted, rejected.rejection) == (False, "NOT_RUNNING")
    sandbox.resume("w", "go")
    assert sandbox.get("w").record.state == "working"
    cancelled = sandbox.cancel("w", "enough")
    assert cancelled.record.status is Status.CANCELLED
    assert sandbox.get("w").tasks == ()  # its task was cancelled with it


def test_a_signal_whose_guards_are_false_is_accepted_and_changes_nothing(
    sandbox: Sandbox,
) -> None:
    sandbox.start("ticket", workflow_id="w")
    sandbox.advance(timedelta(hours=1))
    outcome = sandbox.signal("w", "poke", {"hard": False})
    assert outcome.accepted and not outcome.saved
    sandbox.signal("w", "poke", {"hard": True})
    assert sandbox.get("w").record.status is Status.COMPLETED


def test_a_task_is_leased_completed_and_applied(sandbox: Sandbox) -> None:
    sandbox.start("ticket", workflow_id="w", input={"n": 1})
    sandbox.resume("w", "go")
    (task,) = sandbox.get("w").tasks
    assert (task.queue, task.input, task.status) == ("work", {"n": 2, "who": "w"}, "SCHEDULED")
    leased = sandbox.take("work", "w")
    assert leased.status is TaskStatus.LEASED and leased.attempt == 1
    done = sandbox.complete(leased, {"note": "ok"})
    assert done.outcome.record.state == "done" and done.outcome.saved
    assert sandbox.get("w").record.context["note"] == "ok"


def test_a_failed_attempt_waits_out_its_backoff_before_the_next(sandbox: Sandbox) -> None:
    sandbox.start("ticket", workflow_id="w")
    sandbox.resume("w", "go")
    failed = sandbox.fail(sandbox.take("work"), type="DOWN", message="later")
    assert failed.outcome is None and failed.task.status is TaskStatus.BACKOFF
    ready = failed.task.available_time
    assert DEFAULT_START < ready <= DEFAULT_START + timedelta(seconds=10)
    second = sandbox.take("work")  # the worker waits: the clock moves to the retry
    assert sandbox.now() == ready and second.attempt == 2
    explicit = sandbox.fail(second, type="DOWN", retry_after=timedelta(seconds=30))
    assert explicit.task.available_time == ready + timedelta(seconds=30)
    last = sandbox.fail(sandbox.take("work"), type="DOWN", message="for good")
    assert last.outcome is not None
    found = sandbox.get("w")
    assert found.record.state == "broken"
    assert found.record.context["meta"] == {
        "type": "DOWN",
        "message": "for good",
        "details": {},
        "attempts": 3,
    }


def test_the_same_seed_draws_the_same_backoff(project: Path) -> None:
    def first_retry(seed: int) -> datetime:
        box = Sandbox(seed=seed)
        box.place(read_file(project / "ticket.yaml"))
        box.start("ticket", workflow_id="w")
        box.resume("w", "go")
        return box.fail(box.take("work"), type="X").task.available_time

    assert first_retry(7) == first_retry(7)
    assert len({first_retry(seed) for seed in range(5)}) > 1


def test_a_lease_that_runs_out_is_retried_then_gives_up_timed_out(sandbox: Sandbox) -> None:
    sandbox.start("ticket", workflow_id="w")
    sandbox.resume("w", "go")
    for attempt in (1, 2):
        task = sandbox.take("work")
        assert task.attempt == attempt
        # A first lease lasts FIRST_LEASE (under the task's 1m start_to_close) until a
        # heartbeat extends it.
        assert task.lease_expire_time == sandbox.now() + timedelta(seconds=FIRST_LEASE)
        sandbox.time_out(task)
        (backoff,) = sandbox.get("w").tasks
        assert backoff.status == "BACKOFF" and backoff.last_error is not None
        assert backoff.last_error["type"] == "TIMED_OUT"
    sandbox.time_out(sandbox.take("work"))
    found = sandbox.get("w")
    assert found.record.state == "broken" and found.record.context["meta"]["type"] == "TIMED_OUT"


def test_a_task_nobody_takes_gives_up_at_its_deadline(sandbox: Sandbox) -> None:
    sandbox.start("ticket", workflow_id="w")
    sandbox.resume("w", "go")
    sandbox.advance(timedelta(hours=2))
    found = sandbox.get("w")
    assert found.record.state == "broken"
    assert found.record.update_time == DEFAULT_START + timedelta(hours=1)  # at the deadline
    with pytest.raises(NoTask):
        sandbox.take("work")


def test_every_committed_step_is_told_with_its_transitions(sandbox: Sandbox) -> None:
    taken: list[tuple[str | None, int | None]] = []
    sandbox.on_step(lambda o, h: taken.extend((t.event, t.index) for t in o.transitions))
    sandbox.start("ticket", workflow_id="w")
    sandbox.advance(timedelta(hours=1))  # a timer's step, started by the server
    assert taken == [("after", 1)]


def test_a_sandbox_starts_where_it_is_told(project: Path) -> None:
    when = datetime(2030, 5, 6, 7, 8, tzinfo=UTC)
    box = Sandbox(start=when)
    box.place(read_file(project / "ticket.yaml"))
    box.start("ticket", workflow_id="w")
    assert box.get("w").record.create_time == when
    box.close()


async def test_it_runs_inside_a_running_event_loop(sandbox: Sandbox) -> None:
    # A user's async test calls it synchronously: its coroutines run on a loop of its own.
    sandbox.start("ticket", workflow_id="w")
    sandbox.resume("w", "go")
    sandbox.complete(sandbox.take("work"), {"note": "async"})
    assert sandbox.get("w").record.context["note"] == "async"
