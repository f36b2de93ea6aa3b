"""Deciding what happened to writes whose COMMIT acknowledgement was lost.

History rows are the witness: they are immutable and keyed by (instance, revision), so
the row our step would have written is either there with our values (committed), absent
while the instance still sits at the expected revision (not committed), or something
else (unknown). Instance rows alone could not tell a later step apart from ours.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from statewrightd.errors import Conflict, OutcomeUnknown, StorageUnavailable, StoreError
from statewrightd.store import failures
from statewrightd.store.records import Create, InstanceRecord, Operation, target_of


class Verdict(enum.Enum):
    COMMITTED = "committed"
    NOT_COMMITTED = "not_committed"
    LOST_RACE = "lost_race"  # another step owns our revision: ours cannot have committed
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class HistoryWitness:
    event: str | None
    state: str
    status: str
    time: datetime


def classify(
    op: Operation,
    current_revision: int | None,
    witness: HistoryWitness | None,
) -> Verdict:
    target = target_of(op)
    h = op.history
    if witness is not None:
        ours = (witness.event, witness.state, witness.status, witness.time) == (
            h.event,
            h.state,
            h.status,
            h.time,
        )
        return Verdict.COMMITTED if ours else Verdict.LOST_RACE
    if isinstance(op, Create):
        return Verdict.NOT_COMMITTED if current_revision is None else Verdict.UNKNOWN
    if current_revision == op.expected_revision and target.revision == current_revision + 1:
        return Verdict.NOT_COMMITTED
    return Verdict.UNKNOWN


def resolve_each(
    ops: Sequence[Operation],
    revisions: Mapping[str, int],
    witnesses: Mapping[tuple[str, int], HistoryWitness],
) -> list[InstanceRecord | StoreError]:
    """Per-operation answers for a later re-check, when no batch-wide evidence exists."""
    out: list[InstanceRecord | StoreError] = []
    for op in ops:
        target = target_of(op)
        current = revisions.get(target.workflow_id)
        verdict = classify(op, current, witnesses.get((target.workflow_id, target.revision)))
        out.append(answer(op, verdict, current))
    return out


def answer(op: Operation, verdict: Verdict, current: int | None) -> InstanceRecord | StoreError:
    target = target_of(op)
    wid = target.workflow_id
    if verdict is Verdict.COMMITTED:
        return target
    if verdict is Verdict.NOT_COMMITTED:
        return StorageUnavailable(
            f"workflow {wid!r}: the connection was lost before the step committed; "
            "nothing was written",
            metadata={"workflow_id": wid},
        )
    if verdict is Verdict.LOST_RACE:
        if isinstance(op, Create):
            # Another start created this id first: the answer a create that met the row
            # at once would have had, never a revision conflict (a start has no revision
            # to step from, so a retry as a step would be wrong).
            return failures.workflow_exists(wid)
        return Conflict(
            f"workflow {wid!r}: another step saved revision {target.revision} first",
            actual_revision=current,
            metadata={"workflow_id": wid},
        )
    return unknown(op)


def unknown(op: Operation, backend_pid: int | None = None) -> OutcomeUnknown:
    """``backend_pid``: the server process that ran the lost COMMIT, for later re-checks."""
    target = target_of(op)
    metadata: dict[str, object] = {"workflow_id": target.workflow_id, "revision": target.revision}
    if backend_pid is not None:
        metadata["backend_pid"] = backend_pid
    return OutcomeUnknown(
        f"workflow {target.workflow_id!r}: the connection was lost around COMMIT and "
        f"revision {target.revision} could not be confirmed or ruled out",
        metadata=metadata,
    )
