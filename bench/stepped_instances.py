"""Instances that a store benchmark steps one revision at a time, in turn: the saves it
measures, each from the instance's current revision."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from statewrightd.domain import Status
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Operation, Save

CREATED = datetime.now(UTC)


class SteppedInstances:
    def __init__(self, count: int, prefix: str) -> None:
        self.records = [
            InstanceRecord(
                f"{prefix}-{i}",
                "bench",
                1,
                "s",
                Status.RUNNING,
                {"n": 0},
                1,
                None,
                CREATED,
                CREATED,
            )
            for i in range(count)
        ]
        self._next = 0

    def creates(self) -> list[Operation]:
        return [Create(r, history(r)) for r in self.records]

    def step(self) -> Save:
        """The save of the next instance, one revision on (its context counts them)."""
        i = self._next = (self._next + 1) % len(self.records)
        old = self.records[i]
        new = replace(
            old,
            revision=old.revision + 1,
            context={"n": old.revision},
            update_time=datetime.now(UTC),
        )
        self.records[i] = new
        return Save(new, old.revision, history(new))


def history(r: InstanceRecord) -> HistoryRecord:
    return HistoryRecord(
        r.workflow_id, r.revision, "go", [], r.state, r.status, r.context, None, CREATED
    )
