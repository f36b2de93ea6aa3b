"""Request ids: a refusal is never the answer to a request that may have been applied."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from statewrightd import errors
from statewrightd.engine.answers import Outcome, Rejection
from statewrightd.engine.commands import RequestKey, ResumeCommand
from statewrightd.engine.idempotency import Idempotency


def _resume() -> ResumeCommand:
    return ResumeCommand(
        actor="test",
        workflow_id="w",
        request=RequestKey("rid-1", "ResumeWorkflow", "f"),
        expected_revision=10,
    )


async def test_a_refused_retry_whose_lookup_does_not_finish_is_answered_undecided() -> None:
    # The retry of a resume that was applied (it made revision 11) finds revision 11 and is
    # refused for expecting 10; the look-up that would replay the original answer does not
    # finish in time. REVISION_MISMATCH would tell the caller its resume was not applied.
    async def run(command: Any, budget: float | None) -> Any:
        raise errors.Aborted("at revision 11, not 10", reason="REVISION_MISMATCH")

    async def slow_read(fn: Callable[[], Any]) -> Any:
        await asyncio.sleep(5)

    service = Idempotency(run, repo=None, registry=None, read=slow_read)  # type: ignore[arg-type]
    with pytest.raises(errors.DeadlineExceeded) as raised:
        await service.step(_resume(), budget=0.1)
    assert "rid-1" in str(raised.value) and "REVISION_MISMATCH" in str(raised.value)


async def test_a_refusal_whose_lookup_finds_no_record_stands() -> None:
    async def run(command: Any, budget: float | None) -> Any:
        raise errors.Aborted("at revision 11, not 10", reason="REVISION_MISMATCH")

    async def read(fn: Callable[[], Any]) -> Any:
        return None  # no request record: this request id was never applied

    service = Idempotency(run, repo=None, registry=None, read=read)  # type: ignore[arg-type]
    with pytest.raises(errors.Aborted) as raised:
        await service.step(_resume(), budget=1.0)
    assert raised.value.reason == "REVISION_MISMATCH"


@pytest.mark.parametrize(
    "refusal",
    [
        errors.StorageUnavailable("storage is down"),
        errors.Overloaded("the writer's queue is full"),
        errors.DeadlineExceeded("out of time"),
    ],
    ids=["unavailable", "overloaded", "deadline"],
)
async def test_a_refusal_of_this_attempt_alone_stands_when_the_lookup_fails(
    refusal: errors.StatewrightError,
) -> None:
    # Storage known down answers UNAVAILABLE, request id or not: the look-up fails on the
    # same storage, and the refusal says nothing of an earlier attempt.
    async def run(command: Any, budget: float | None) -> Any:
        raise refusal

    async def read(fn: Callable[[], Any]) -> Any:
        raise errors.StorageUnavailable("storage is down")

    service = Idempotency(run, repo=None, registry=None, read=read)  # type: ignore[arg-type]
    with pytest.raises(type(refusal)) as raised:
        await service.step(_resume(), budget=1.0)
    assert raised.value is refusal


async def test_a_rejected_retry_whose_lookup_fails_is_answered_undecided() -> None:
    # A signal applied at revision 12; a later step's outcome is unknown, so the instance
    # is in recovery; the retry is rejected RECOVERY_REQUIRED and the look-up of its request
    # id fails on the same faulty storage. "Not applied" would be false: it was.
    async def run(command: Any, budget: float | None) -> Any:
        return Outcome(
            record=None,  # type: ignore[arg-type]
            loaded=None,  # type: ignore[arg-type]
            accepted=False,
            rejection=Rejection.RECOVERY_REQUIRED,
        )

    async def read(fn: Callable[[], Any]) -> Any:
        raise errors.StorageUnavailable("the connection was cut")

    service = Idempotency(run, repo=None, registry=None, read=read)  # type: ignore[arg-type]
    with pytest.raises(errors.DeadlineExceeded) as raised:
        await service.step(_resume(), budget=1.0)
    assert "rid-1" in str(raised.value) and "RECOVERY_REQUIRED" in str(raised.value)
