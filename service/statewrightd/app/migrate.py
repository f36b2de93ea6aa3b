"""Migration of one instance to another version of its definition.

The target version is read before the step (the instance names its definition); the step
itself is an ordinary typed command on the EventLoop (engine.commands.MigrateCommand:
checked against both versions, one compare-and-swap save recording its actor and reason).
``dry_run`` checks and plans the same pure step on the instance as stored, saving nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from statewrightd import errors
from statewrightd.app.repair import Repaired, Repairs
from statewrightd.app.workflows import Workflows
from statewrightd.domain import Status
from statewrightd.engine.commands import MigrateCommand, RequestKey
from statewrightd.engine.migration import MigrationPlan
from statewrightd.engine.snapshots import snapshot_of


@dataclass(frozen=True, slots=True)
class MigrationAsked:
    """A migration as a door asks it (the target version not read yet)."""

    workflow_id: str
    to_version: int
    state_map: Mapping[str, str]
    sets: Mapping[str, str]
    reason: str = ""
    expected_revision: int = 0
    request: RequestKey | None = None
    actor: str = "anonymous"


@dataclass(frozen=True, slots=True)
class Migrated:
    """The checked plan, and the instance after it (saved, or as it would be)."""

    plan: MigrationPlan
    repaired: Repaired


class Migrations:
    def __init__(self, workflows: Workflows, repairs: Repairs) -> None:
        self._reads = workflows.reads
        self._repairs = repairs

    async def migrate(
        self, asked: MigrationAsked, *, dry_run: bool, budget: float | None
    ) -> Migrated:
        found = await self._reads.get(asked.workflow_id)
        name = found.record.definition
        target = await self._reads.definition(name, asked.to_version)
        command = MigrateCommand(
            workflow_id=asked.workflow_id,
            request=None if dry_run else asked.request,
            actor=asked.actor,
            target=target,
            from_version=found.record.version,
            state_map=asked.state_map,
            sets=asked.sets,
            reason=asked.reason,
            expected_revision=asked.expected_revision,
        )
        if dry_run:
            repaired = await self._repairs.dry_run(command, found)
            plan, _ = command.planned(found.loaded.definition, snapshot_of(found.record))
            return Migrated(plan, repaired)
        repaired = await self._repairs.saved(command, budget, found.record.context)
        # The plan as the step made it, against the revision before it as history keeps
        # it, of the version the step recorded (the instance read above may be older, or
        # this the answer to a retried request id).
        revision = repaired.outcome.record.revision
        rows = await self._reads.history_after(asked.workflow_id, revision - 2, 2)
        if len(rows) < 2 or rows[1].revision != revision or rows[1].event != "migrate":
            raise errors.Aborted(
                f"workflow {asked.workflow_id} moved on before its migration could be read "
                "back; read its history",
                metadata={"workflow_id": asked.workflow_id},
            )
        row, taken = rows[0], rows[1].input or {}
        source = await self._reads.definition(name, int(taken["from_version"]))
        before = dataclasses.replace(
            snapshot_of(found.record),
            version=source.definition.version,
            state=row.state,
            status=Status(row.status),
            context=row.context,
            revision=row.revision,
        )
        plan, _ = dataclasses.replace(command, from_version=before.version).planned(
            source.definition, before
        )
        return Migrated(plan, repaired)
