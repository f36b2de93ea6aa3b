"""What changes or follows one instance: a step (start, resume, signal, cancel), its
deletion, a watch of its revisions.

A step is a typed command (engine/commands.py) that a door builds from its request; it
runs on the EventLoop, answered once per request id whatever the retries.

Every answer that shows an instance, or tells that one exists, is checked against the
call's view (statewrightd.visibility): a scoped caller is refused one out of its view
exactly as one that does not exist.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from statewrightd import errors, visibility
from statewrightd.app.handoff import Handoff
from statewrightd.app.reads import Reads, not_found
from statewrightd.app.storage import Storage
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import TERMINAL
from statewrightd.engine.answers import Outcome
from statewrightd.engine.commands import CancelCommand, Command, SignalWithStartCommand
from statewrightd.engine.idempotency import Idempotency
from statewrightd.engine.stepping import revision_mismatch
from statewrightd.engine.watch import StepEvent, WatchFeed, WatchHub
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord

# Once storage is found down, a step still on its way gets this long to reach its own
# answer (most do at once: waits for a connection are cut short) before its caller is
# told that its outcome is not known yet, rather than left to wait out its deadline.
STEP_RELEASE_GRACE = 0.5

# How many times a signal-with-start with START_NEW tries again when other callers
# replace the finished instance it found before it can.
START_NEW_ATTEMPTS = 4


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
            outcome = await self.requests.step(command, budget)
        except errors.NotFound as exc:
            raise await self.reads.explain_missing(command.workflow_id, exc) from None
        except errors.AlreadyExists:
            await self._exists_in_view(command.workflow_id)
            raise
        except errors.FailedPrecondition as exc:
            # A start that steps the instance holding its id (a restart, a signal-with-start)
            # is refused when that instance runs another definition, which it names.
            if exc.reason == Reason.DEFINITION_DIFFERS:
                await self._exists_in_view(command.workflow_id)
            raise
        # Whatever answers: a fresh step, a replayed one, an instance a start found.
        visibility.check(outcome.record.definition)
        return outcome

    async def signal_with_start(
        self, command: SignalWithStartCommand, *, start_new: bool, budget: float | None
    ) -> Outcome:
        """SignalWithStartWorkflow: the event delivered to the instance, started with it
        when it does not exist (one step, revision 1). A finished instance is refused,
        unless ``start_new``: then it is removed (as DeleteWorkflow removes it, fenced by
        the revision it was found at) and a new one started under its id; a caller
        racing this one meets either the old instance or the new one, never neither."""
        deadline = None if budget is None else time.monotonic() + budget
        for _ in range(START_NEW_ATTEMPTS):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                outcome = await self.step(command, left)
            except errors.NotFound:
                # Found taken by the insert, then removed (replaced) before its load.
                continue
            record = outcome.record
            if outcome.accepted or record.status not in TERMINAL:
                return outcome
            if not start_new:
                raise errors.FailedPrecondition(
                    f"workflow {command.workflow_id} has finished ({record.status}): the "
                    "event is not delivered; if_finished START_NEW starts a new instance",
                    reason=Reason.ALREADY_TERMINAL,
                    metadata={"workflow_id": command.workflow_id, "status": record.status},
                )
            self.storage.require()
            try:
                await self.handoff.remove(command.workflow_id, record.revision)
            except (errors.RecordNotFound, errors.Conflict):
                pass  # another caller replaced or removed it first: deliver to what is there
            else:
                self.hub.gone((command.workflow_id,))
        raise errors.Aborted(
            f"workflow {command.workflow_id} was replaced by other callers while this one "
            "tried to start it anew; retry",
            reason=Reason.WORKFLOW_BUSY,
            metadata={"workflow_id": command.workflow_id},
        )

    async def _exists_in_view(self, workflow_id: str) -> None:
        """Raise the refusal unless the caller may learn that ``workflow_id`` exists."""
        view = visibility.current()
        if view is None:
            return
        try:
            await self.reads.get(workflow_id)  # refused there when out of view
        except errors.NotFound:
            raise visibility.refusal(view.method) from None

    def storage_down(self, down: str) -> None:
        """Storage was found down (asyncio loop): steps still on their way are answered
        OUTCOME_UNKNOWN once they have had a moment to reach their own answer."""
        asyncio.get_running_loop().call_later(STEP_RELEASE_GRACE, self._release_steps)

    def _release_steps(self) -> None:
        if self.storage.down is not None:
            self.handoff.release_steps()

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
        events = self._feed.follow(workflow_id, after)
        view = visibility.current()
        return events if view is None else _in_view(events, view)


async def _in_view(
    events: AsyncIterator[StepEvent], view: visibility.View
) -> AsyncIterator[StepEvent]:
    async for event in events:
        visibility.check(event.record.definition, view)
        yield event
