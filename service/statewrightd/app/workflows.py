"""What changes or follows one instance: a step (start, resume, signal, cancel), its
deletion, a watch of its revisions.

A step is a typed command (engine/commands.py) that a door builds from its request; it
runs on the EventLoop, answered once per request id whatever the retries.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from statewrightd import errors
from statewrightd.app.handoff import Handoff
from statewrightd.app.reads import Reads, not_found
from statewrightd.app.storage import Storage
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import TERMINAL
from statewrightd.engine.answers import Outcome
from statewrightd.engine.commands import CancelCommand, Command
from statewrightd.engine.idempotency import Idempotency
from statewrightd.engine.stepping import revision_mismatch
from statewrightd.engine.watch import StepEvent, WatchFeed, WatchHub
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord


@dataclass(frozen=True, slots=True)
class Deleted:
    """What DeleteWorkflow removed: the instance as it was, and whether it was cancelled
    for it (force)."""

    record: InstanceRecord
    loaded: Loaded
    cancelled: bool


@dataclass(kw_only=True)
class Workflows:
    handoff: Handoff
    requests: Idempotency
    storage: Storage
    reads: Reads
    hub: WatchHub
    _feed: WatchFeed = field(init=False)

    def __post_init__(self) -> None:
        self._feed = WatchFeed(self.hub, self.reads.get, self.reads.history_after)

    async def step(self, command: Command, budget: float | None) -> Outcome:
        """Run one step within ``budget`` seconds; a retried request id gets its original
        answer, in the same shape."""
        self.storage.require()
        try:
            return await self.requests.step(command, budget)
        except errors.NotFound as exc:
            raise await self.reads.explain_missing(command.workflow_id, exc) from None

    async def delete(
        self, workflow_id: str, expected_revision: int, *, force: bool, budget: float | None
    ) -> Deleted:
        """DeleteWorkflow: remove one finished instance and everything of it.

        A live one is refused unless ``force``: then it is cancelled first, by a step like
        any other (so its watchers see it end), and removed at the revision that step
        saved. ``expected_revision`` (0: any) is the revision the caller saw."""
        found = await self.reads.get(workflow_id)
        record, loaded, cancelled = found.record, found.loaded, False
        if expected_revision and record.revision != expected_revision:
            raise revision_mismatch(workflow_id, expected_revision, record.revision)
        if record.status not in TERMINAL:
            if not force:
                raise errors.FailedPrecondition(
                    f"workflow {workflow_id} is {record.status}: only a finished instance is "
                    "deleted, unless force is set (which cancels it first)",
                    reason=Reason.WORKFLOW_NOT_FINISHED,
                    metadata={"workflow_id": workflow_id, "status": record.status},
                )
            cancel = CancelCommand(
                workflow_id=workflow_id,
                reason="deleted with force",
                expected_revision=expected_revision,
            )
            outcome = await self.step(cancel, budget)
            record, loaded, cancelled = outcome.record, outcome.loaded, True
        self.storage.require()
        try:
            await self.handoff.remove(workflow_id, record.revision)
        except errors.RecordNotFound:
            raise not_found(workflow_id, None) from None
        except errors.Conflict as exc:
            actual = exc.actual_revision or 0
            raise revision_mismatch(workflow_id, record.revision, actual) from None
        self.hub.gone((workflow_id,))
        return Deleted(record, loaded, cancelled)

    def watch(self, workflow_id: str, after: int | None) -> AsyncIterator[StepEvent]:
        """Every revision of the instance in order, from ``after`` (None: as it is now)."""
        return self._feed.follow(workflow_id, after)
