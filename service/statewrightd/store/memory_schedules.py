"""The schedules of the repository contract, held in memory (rows as SQLite keeps them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from statewrightd.domain import Status
from statewrightd.errors import RecordExists
from statewrightd.reasons import Reason
from statewrightd.store.memory_state import ROWS, MemoryState, stamp
from statewrightd.store.records import ScheduleRecord

# schedule_id -> [schedule_id, document, next_fire_time, version, create_time,
# update_time, claimed_until]: the SCHEDULE columns, then the claim.
_Row = list[Any]


class MemorySchedules(MemoryState):
    def __init__(self) -> None:
        super().__init__()
        self._schedules: dict[str, _Row] = {}

    def insert_schedule(
        self, schedule_id: str, document: dict[str, Any], next_fire: datetime | None, now: datetime
    ) -> ScheduleRecord:
        at = stamp(now, "now")
        with self._held():
            if schedule_id in self._schedules:
                raise RecordExists(
                    f"schedule {schedule_id} already exists",
                    reason=Reason.SCHEDULE_EXISTS,
                    metadata={"schedule_id": schedule_id},
                )
            row = [schedule_id, _text(document), _stamp(next_fire), 1, at, at, None]
            self._schedules[schedule_id] = row
            return ROWS.schedule(row)

    def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        with self._held():
            row = self._schedules.get(schedule_id)
            return None if row is None else ROWS.schedule(row)

    def list_schedules(self, after: str, limit: int) -> list[ScheduleRecord]:
        with self._held():
            ids = sorted(i for i in self._schedules if i > after)[:limit]
            return [ROWS.schedule(self._schedules[i]) for i in ids]

    def put_schedule(
        self,
        schedule_id: str,
        version: int,
        document: dict[str, Any],
        next_fire: datetime | None,
        now: datetime,
    ) -> ScheduleRecord | None:
        at = stamp(now, "now")
        with self._held():
            row = self._schedules.get(schedule_id)
            if row is None or row[3] != version:
                return None
            row[1:4] = [_text(document), _stamp(next_fire), version + 1]
            row[5], row[6] = at, None
            return ROWS.schedule(row)

    def delete_schedule(self, schedule_id: str) -> bool:
        with self._held():
            return self._schedules.pop(schedule_id, None) is not None

    def claim_schedules(self, now: datetime, until: datetime, limit: int) -> list[ScheduleRecord]:
        at, held = stamp(now, "now"), stamp(until, "until")
        with self._held():
            due = sorted(
                (r for r in self._schedules.values() if _free_due(r, at)), key=lambda r: r[2]
            )[:limit]
            for row in due:
                row[6] = held
            return [ROWS.schedule(r) for r in due]

    def next_schedule_due(self, now: datetime) -> datetime | None:
        at = stamp(now, "now")
        with self._held():
            dues = [r[2] for r in self._schedules.values() if r[2] is not None and _free(r, at)]
        return ROWS.time(min(dues)) if dues else None

    def instance_statuses(self, workflow_ids: Sequence[str]) -> dict[str, Status]:
        with self._held():
            found = {w: self._instances.get(w) for w in workflow_ids}
            return {w: ROWS.instance(i.row).status for w, i in found.items() if i is not None}

    def instance_revisions(self, workflow_ids: Sequence[str]) -> dict[str, int]:
        with self._held():
            found = {w: self._instances.get(w) for w in workflow_ids}
            return {w: ROWS.instance(i.row).revision for w, i in found.items() if i is not None}

    def schedule_count(self) -> int:
        with self._held():
            return len(self._schedules)


def _free(row: _Row, at: int) -> bool:
    return row[6] is None or row[6] <= at


def _free_due(row: _Row, at: int) -> bool:
    return row[2] is not None and row[2] <= at and _free(row, at)


def _stamp(t: datetime | None) -> int | None:
    return None if t is None else stamp(t, "next_fire")


def _text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, sort_keys=True)
