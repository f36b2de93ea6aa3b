"""Repair of one instance: retry a FAILED one, reset any one to a saved revision, pause
a live one and unpause it.

Each is an ordinary step (a typed command on the EventLoop, one compare-and-swap save
that records its actor and reason in history); a reset first reads the revision it goes
back to from history, which keeps every revision's state and context. ``dry_run`` runs
the same pure step on the instance as stored and returns what it would become, saving
nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from statewrightd import errors
from statewrightd.app.workflows import Workflows
from statewrightd.engine.answers import Outcome
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import (
    PauseCommand,
    ResetCommand,
    RetryCommand,
    StepCommand,
    UnpauseCommand,
)
from statewrightd.engine.loading import Found
from statewrightd.engine.snapshots import instance_record, snapshot_of
from statewrightd.engine.stepping import revision_mismatch
from statewrightd.engine.writes import task_change, timer_change
from statewrightd.reasons import Reason


@dataclass(frozen=True, slots=True)
class Repaired:
    """The instance after the repair (as saved, or as it would be on a dry run), and its
    context before it, which the answer's context changes are taken against."""

    outcome: Outcome
    before: Mapping[str, Any]
    dry_run: bool


class Repairs:
    def __init__(self, workflows: Workflows, clock: Clock) -> None:
        self._workflows = workflows
        self._reads = workflows.reads
        self._clock = clock

    async def retry(
        self, command: RetryCommand, *, dry_run: bool, budget: float | None
    ) -> Repaired:
        return await self._repair(command, dry_run=dry_run, budget=budget)

    async def reset(
        self, command: ResetCommand, *, dry_run: bool, budget: float | None
    ) -> Repaired:
        """Back to revision ``command.to_revision``: its state and context are read from
        history (refused when retention removed it, or it was never saved)."""
        n = command.to_revision
        rows = await self._reads.history_after(command.workflow_id, n - 1, 1)
        if not rows or rows[0].revision != n:
            await self._reads.get(command.workflow_id)  # NOT_FOUND (or out of view) first
            raise errors.FailedPrecondition(
                f"history of workflow {command.workflow_id} holds no revision {n}",
                reason=Reason.REVISION_NOT_FOUND,
                metadata={"workflow_id": command.workflow_id, "revision": str(n)},
            )
        row = rows[0]
        if (row.error or {}).get("reason") == Reason.START_DELAYED:
            raise errors.FailedPrecondition(
                f"revision {n} of workflow {command.workflow_id} is its delayed start, which "
                "has not entered a state yet: reset it to a later revision",
                reason=Reason.START_DELAYED,
                metadata={"workflow_id": command.workflow_id, "revision": str(n)},
            )
        restored = dataclasses.replace(command, state=row.state, context=row.context)
        return await self._repair(restored, dry_run=dry_run, budget=budget)

    async def pause(
        self, command: PauseCommand, *, dry_run: bool, budget: float | None
    ) -> Repaired:
        """Pause a live instance: nothing steps it until its unpause."""
        return await self._repair(command, dry_run=dry_run, budget=budget)

    async def unpause(
        self, command: UnpauseCommand, *, dry_run: bool, budget: float | None
    ) -> Repaired:
        return await self._repair(command, dry_run=dry_run, budget=budget)

    async def _repair(
        self, command: StepCommand, *, dry_run: bool, budget: float | None
    ) -> Repaired:
        found = await self._reads.get(command.workflow_id)
        if not dry_run:
            return await self.saved(command, budget, found.record.context)
        return await self.dry_run(command, found)

    async def saved(
        self, command: StepCommand, budget: float | None, before: Mapping[str, Any]
    ) -> Repaired:
        """Step the instance; its changes are against the revision before its step, as
        history keeps it (``before``, the context read before it, may be older: a race;
        and the answer to a retried request id is the step saved then)."""
        outcome = await self._workflows.step(command, budget)
        revision = outcome.record.revision
        rows = await self._reads.history_after(command.workflow_id, revision - 2, 1)
        before = rows[0].context if rows and rows[0].revision == revision - 1 else before
        return Repaired(outcome, before, False)

    async def dry_run(self, command: StepCommand, found: Found) -> Repaired:
        """What the step would make of the instance as ``found``, saving nothing."""
        record = found.record
        expected = command.expected()
        if expected and expected != record.revision:
            raise revision_mismatch(command.workflow_id, expected, record.revision)
        result = command.step(found.loaded.definition, snapshot_of(record))
        now = self._clock.now()
        after = instance_record(result.snapshot, record.create_time, now)
        _, timers = timer_change(result.timers, after, now)
        _, task = task_change(result, after, now)
        loaded = command.stepped_with(found.loaded)
        if not result.timers.disarm and not timers:
            timers = found.timers  # a step that arms and disarms nothing keeps them
        if not result.task.cancel and result.task.schedule is None:
            task = found.task
        outcome = Outcome(after, loaded, result.transitions, timers=timers, task=task)
        return Repaired(outcome, record.context, True)
