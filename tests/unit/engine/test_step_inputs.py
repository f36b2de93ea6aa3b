"""What each kind of step records as its input in history (the step's own row)."""

from __future__ import annotations

from datetime import UTC, datetime

from statewrightd.engine.commands import (
    CancelCommand,
    CompleteTaskCommand,
    ResumeCommand,
    SignalCommand,
    TaskGiveUpCommand,
    TimerCommand,
)
from statewrightd.store.records import TimerRecord
from tests.support.store_records import task_record

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

TASK = task_record(
    "w",
    "3",
    NOW,
    leased="t",
    attempt=2,
    lease_expire_time=NOW,
    input={"amount": 5},
    retry={"initial_interval": 1.0, "backoff": 2.0, "max_interval": 5.0, "non_retryable": []},
)


def test_events_record_what_their_caller_sent() -> None:
    resume = ResumeCommand(workflow_id="w", event="approve", input={"approver": "ann"})
    assert resume.taken() == {"approver": "ann"}
    signal = SignalCommand(workflow_id="w", event="tick", payload={"id": "a", "n": [1]})
    assert signal.taken() == {"id": "a", "n": [1]}
    assert CancelCommand(workflow_id="w", reason="a duplicate").taken() == {"reason": "a duplicate"}
    assert CancelCommand(workflow_id="w").taken() == {"reason": ""}


def test_server_steps_record_the_timer_or_task_they_came_from() -> None:
    timer = TimerRecord("w", "2.0", 2, 0, "late", "PT5M", NOW)
    assert TimerCommand.of(timer, "statewright:timer").taken() == {
        "timer_id": "2.0",
        "due_time": NOW.isoformat(),
    }
    done = CompleteTaskCommand.of(TASK, "t", {"charged": True}, actor="key:w", request=None)
    assert done.taken() == {"task_id": "3", "result": {"charged": True}}
    failure = {"type": "CardDeclined", "message": "no", "details": {"big": "x" * 100}}
    gave_up = TaskGiveUpCommand.of(TASK, failure, actor="key:w", lease_token="t", leased=True)
    # The details stay on the task (its last_error): history keeps what a reader scans for.
    assert gave_up.taken() == {
        "task_id": "3",
        "timed_out": False,
        "failure": {"type": "CardDeclined", "message": "no"},
    }
