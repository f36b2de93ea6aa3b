"""Request ids: a retried request gets the answer its first attempt got.

A step that writes carries its request record into the same compare-and-swap
transaction (engine/writes.py builds it), and the store refuses a request id already
recorded; the runtime then answers ``Replay`` and this service rebuilds the original
answer from the history row at the recorded revision. A step that writes nothing, or
fails, looks its request id up afterwards, since a retry may meet the state its
original left behind.

Callers see one shape either way: an ``Outcome``, fresh or replayed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import timedelta
from typing import Protocol, TypeVar

from statewrightd import errors
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.engine.answers import Outcome, Replay
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import Command, RequestKey
from statewrightd.engine.snapshots import record_at, settled_from, transitions_from_dicts
from statewrightd.reasons import Reason
from statewrightd.store.repository import Repository

T = TypeVar("T")

# How long a failed step may spend finding out whether its request id was answered before.
REPLAY_BUDGET = 2.0

Run = Callable[[Command, float | None], Awaitable[Outcome | Replay]]


class Reader(Protocol):
    """Runs a blocking store read off the asyncio thread."""

    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


# Refusals of one attempt alone (storage down, overloaded, out of time): the caller retries
# whatever an earlier attempt did, so they answer as they are when the look-up fails.
_THIS_ATTEMPT_ONLY = (errors.Unavailable, errors.ResourceExhausted, errors.DeadlineExceeded)


@dataclass
class Idempotency:
    """Runs commands so that a request id is answered once, whatever the retries."""

    run: Run
    repo: Repository
    registry: DefinitionRegistry
    read: Reader
    _: KW_ONLY
    window: timedelta | None = None  # how long a request record answers retries (None: ever)
    clock: Clock = field(default_factory=Clock)

    async def step(self, command: Command, budget: float | None) -> Outcome:
        """Run ``command`` within ``budget`` seconds (None: no deadline)."""
        key = command.request
        deadline = None if budget is None else time.monotonic() + budget
        try:
            result = await self.run(command, budget)
        except errors.StatewrightError as exc:
            # An unknown outcome is the answer as it is: the request record shares its fate.
            if key is None or isinstance(exc, errors.InvalidArgument | errors.Unknown):
                raise
            try:
                replayed = await self._lookup(command.workflow_id, key, deadline)
            except errors.InvalidArgument:
                raise
            except (errors.StatewrightError, TimeoutError):
                if isinstance(exc, _THIS_ATTEMPT_ONLY):
                    raise exc from None  # it says nothing of an earlier attempt: it stands
                # Whether an earlier attempt was applied is not known, and a refusal would say
                # it was not: the step this attempt found may be that attempt's own.
                raise _undecided(key, exc.reason) from None
            if replayed is not None:
                return replayed
            raise
        if isinstance(result, Replay):
            assert key is not None
            replayed = await self.replay(command.workflow_id, key)
            if replayed is None:
                raise errors.Aborted(
                    "the original request with this request_id did not complete; retry",
                    reason=Reason.REQUEST_IN_DOUBT,
                    metadata={"request_id": key.request_id},
                )
            return replayed
        if key is not None and not result.saved:
            try:
                replayed = await self._lookup(command.workflow_id, key, deadline)
            except errors.InvalidArgument:
                raise
            except (errors.StatewrightError, TimeoutError):
                # Nothing was written by this attempt, but an earlier one may have been
                # applied (a retry meets the state its original left, or an instance in
                # recovery): a refusal would tell the caller it was not.
                why = result.rejection.name if result.rejection is not None else "no change"
                raise _undecided(key, why) from None
            if replayed is not None:
                return replayed
        return result

    async def _lookup(
        self, workflow_id: str, key: RequestKey, deadline: float | None
    ) -> Outcome | None:
        """The stored answer to ``key``, within half of what is left of the caller's time."""
        limit = REPLAY_BUDGET
        if deadline is not None:
            limit = min(limit, (deadline - time.monotonic()) / 2)
        return await asyncio.wait_for(self.replay(workflow_id, key), limit)

    async def replay(self, workflow_id: str, key: RequestKey) -> Outcome | None:
        """The original answer to ``key``'s request id on instance ``workflow_id`` (request
        ids are unique per instance), or None if it was never answered.

        Raises InvalidArgument (REQUEST_ID_REUSED) when the id answered other content.
        """
        repo, registry = self.repo, self.registry
        live_after = None if self.window is None else self.clock.now() - self.window

        def read() -> Outcome | None:
            stored = repo.lookup_request(workflow_id, key.request_id, live_after)
            if stored is None:
                return None
            if (stored.method, stored.fingerprint) != (key.method, key.fingerprint):
                raise errors.InvalidArgument(
                    f"request_id {key.request_id!r} was already used for a different request "
                    f"({stored.method}); use a new request_id for new content",
                    reason=Reason.REQUEST_ID_REUSED,
                    metadata={"request_id": key.request_id, "original_method": stored.method},
                )
            revision = int(json.loads(stored.response)["revision"])
            current = settled_from(repo, repo.load(stored.workflow_id))
            (history,) = repo.history_after(stored.workflow_id, revision - 1, 1)
            loaded = registry.get(current.definition, current.version)
            return Outcome(
                record_at(history, current),
                loaded,
                transitions_from_dicts(history.transitions),
                saved=True,
                replayed=True,
            )

        return await self.read(read)


def _undecided(key: RequestKey, refused: str) -> errors.DeadlineExceeded:
    return errors.DeadlineExceeded(
        f"could not tell in time whether request_id {key.request_id!r} was applied before "
        f"(this attempt was refused: {refused}); retry with the same request_id",
        metadata={"request_id": key.request_id},
    )
