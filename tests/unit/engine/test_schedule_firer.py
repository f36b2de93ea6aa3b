"""Which answers to a fire's start leave the fire for another try (engine/schedules.py).

The fault suite found fires recorded FAILED for SHUTTING_DOWN while a replica drained (a
rolling restart): their nominal times never got an instance. A refusal of one attempt, or
an outcome the replica cannot know, must leave the fire to the next claim instead.
"""

from __future__ import annotations

import pytest

from statewrightd import errors
from statewrightd.engine.schedules import tried_again
from statewrightd.reasons import Reason


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
