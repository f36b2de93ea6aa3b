"""How the child runner reads a failed start of a child: made again later, or delivered
to the parent as a child that did not start."""

from __future__ import annotations

import pytest

from statewrightd import errors
from statewrightd.engine.children import _tried_again


@pytest.mark.parametrize(
    "failure",
    [
        # May have been made: made again, it answers the child that exists.
        errors.OutcomeUnknown("the connection was lost around COMMIT"),
        errors.StorageUnavailable("database unavailable"),
        errors.Unavailable("the server is stopping"),
        errors.Aborted("busy"),
    ],
)
def test_a_start_that_may_yet_be_made_is_made_again(failure: errors.StatewrightError) -> None:
    assert _tried_again(failure)


@pytest.mark.parametrize(
    "failure",
    [
        errors.InvalidArgument("the child's input is not an object"),
        errors.FailedPrecondition("the definition is disabled"),
    ],
)
def test_a_start_refused_for_good_is_the_childs_failure(failure: errors.StatewrightError) -> None:
    assert not _tried_again(failure)
