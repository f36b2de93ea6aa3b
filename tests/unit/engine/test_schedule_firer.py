"""Which answers to a fire's start leave the fire for another try (engine/schedules.py).

The fault suite found fires recorded FAILED for SHUTTING_DOWN while a replica drained (a
rolling restart): their nominal times never got an instance. A refusal of one attempt, or
an outcome the replica cannot know, must leave the fire to the next claim instead.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

import pytest

from statewrightd import errors
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.engine import schedule_spec, schedules
from statewrightd.engine.background import Background
from statewrightd.engine.commands import StartCommand
from statewrightd.engine.event_loop import EventLoop
from statewrightd.engine.schedules import tried_again
from statewrightd.reasons import Reason
from statewrightd.store.records import ScheduleRecord
from statewrightd.store.repository import Repository
from tests.unit.engine.test_retention_purger import NOW, FixedClock, ManualLoop, offload


@pytest.mark.parametrize(
    "answer",
    [
        errors.Unavailable("the server is shutting down", reason=Reason.SHUTTING_DOWN),
        errors.StorageUnavailable("storage is down"),
        errors.Overloaded("the writer queue is full"),
        errors.ResourceExhausted("too many steps in flight"),
        errors.OutcomeUnknown("the connection was lost around COMMIT"),
        errors.DeadlineExceeded("no answer in time"),
        errors.Conflict("another replica saved first"),
    ],
)
def test_a_refusal_of_one_attempt_leaves_the_fire_for_another_try(
    answer: errors.StatewrightError,
) -> None:
    assert tried_again(answer)


@pytest.mark.parametrize(
    "answer",
    [
        None,
        errors.FailedPrecondition("the definition cannot start", reason=Reason.DEFINITION_INVALID),
        errors.NotFound("no such definition", reason=Reason.DEFINITION_NOT_FOUND),
        errors.InvalidArgument("the input does not fit", reason=Reason.INVALID_INPUT),
    ],
)
def test_a_fires_own_failure_or_a_start_is_recorded(answer: errors.StatewrightError | None) -> None:
    assert not tried_again(answer)


# -- more due than a batch ----------------------------------------------------------------


class DueSchedules:
    """A store with ``due`` schedules all due now: claims hand them out a batch at a time."""

    def __init__(self, due: int) -> None:
        self.left = [ScheduleRecord(f"s{i}", {}, NOW, 1, NOW, NOW) for i in range(due)]
        self.claims: list[int] = []

    def claim_schedules(self, now: datetime, until: datetime, limit: int) -> list[ScheduleRecord]:
        taken, self.left = self.left[:limit], self.left[limit:]
        self.claims.append(len(taken))
        return taken

    def next_schedule_due(self, now: datetime) -> datetime | None:
        return NOW if self.left else None

    def schedule_count(self) -> int:
        return len(self.left)


def test_fires_beyond_a_batch_are_claimed_once_half_the_batch_is_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Found by the 10,000-schedule benchmark: each recorded fire scheduled a look at its
    # schedule's next fire (a minute away), and that pending look kept the half-batch
    # re-claim from running, so the rest of the minute's fires waited for the next minute.
    store, loop = DueSchedules(schedules.BATCH * 3), ManualLoop()
    answers: list[Callable[[Any], None]] = []
    monkeypatch.setattr(
        schedules,
        "prepare_all",
        lambda _repo, _registry, records, _now: [
            schedules.Job(
                r, {"counts": {"misses": 0}}, None, "", cast(StartCommand, object()), None
            )
            for r in records
        ],
    )
    monkeypatch.setattr(schedule_spec, "next_look", lambda *_: NOW + timedelta(minutes=1))
    monkeypatch.setattr(schedules, "record_fire", lambda _repo, record, *_: record)
    firer = schedules.ScheduleFirer(
        Background(cast(EventLoop, loop), cast(Repository, store), offload, FixedClock()),
        submit=lambda _command, then: answers.append(then),
        registry=cast(DefinitionRegistry, None),
    )
    firer.start()
    loop.take("_round")
    assert store.claims == [schedules.BATCH]
    assert loop.take("_round") == 0.0  # the batch is full: nothing more claimed yet
    assert store.claims == [schedules.BATCH]
    for then in answers[: schedules.BATCH // 2]:
        then(None)
    assert loop.delays("_round") == [0.0], "half the batch is through: claim the rest now"
    loop.take("_round")
    assert store.claims == [schedules.BATCH, schedules.BATCH // 2]
