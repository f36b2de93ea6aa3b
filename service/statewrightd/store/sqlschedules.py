"""The schedules' rows on SQLite and PostgreSQL (ScheduleStore of store/repository.py).

A part of ``SqlRepository``, kept in a class of its own so that each stays readable: one
row a schedule, its document written only at the version it was read at."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

from statewrightd.domain import Status
from statewrightd.errors import RecordExists
from statewrightd.reasons import Reason
from statewrightd.store.codec import NEVER, check_time
from statewrightd.store.records import ScheduleRecord
from statewrightd.store.repository import Params
from statewrightd.store.rows import Rows
from statewrightd.store.sql_schedules import ScheduleStatements


class SqlSchedules:
    SCHEDULE_SQL: ClassVar[ScheduleStatements]
    ROWS: ClassVar[Rows]

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _writing_one(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    def insert_schedule(
        self, schedule_id: str, document: dict[str, Any], next_fire: datetime | None, now: datetime
    ) -> ScheduleRecord:
        params = self._schedule_params(schedule_id, document, next_fire, now)
        with self._writing_one() as conn:
            row = conn.execute(self.SCHEDULE_SQL.insert, params).fetchone()
        if row is None:
            raise RecordExists(
                f"schedule {schedule_id} already exists",
                reason=Reason.SCHEDULE_EXISTS,
                metadata={"schedule_id": schedule_id},
            )
        return self.ROWS.schedule(row)

    def get_schedule(self, schedule_id: str) -> ScheduleRecord | None:
        with self._reading() as conn:
            row = conn.execute(self.SCHEDULE_SQL.get, {"schedule_id": schedule_id}).fetchone()
        return None if row is None else self.ROWS.schedule(row)

    def list_schedules(self, after: str, limit: int) -> list[ScheduleRecord]:
        rows = self._read_all(self.SCHEDULE_SQL.list_after, {"after": after, "limit": limit})
        return [self.ROWS.schedule(r) for r in rows]

    def put_schedule(
        self,
        schedule_id: str,
        version: int,
        document: dict[str, Any],
        next_fire: datetime | None,
        now: datetime,
    ) -> ScheduleRecord | None:
        params = self._schedule_params(schedule_id, document, next_fire, now)
        params["version"] = version
        with self._writing_one() as conn:
            row = conn.execute(self.SCHEDULE_SQL.put, params).fetchone()
        return None if row is None else self.ROWS.schedule(row)

    def delete_schedule(self, schedule_id: str) -> bool:
        with self._writing_one() as conn:
            cursor = conn.execute(self.SCHEDULE_SQL.delete, {"schedule_id": schedule_id})
            return bool(cursor.rowcount)

    def claim_schedules(self, now: datetime, until: datetime, limit: int) -> list[ScheduleRecord]:
        params = {
            "now": self.ROWS.time_param(check_time(now, "now")),
            "until": self.ROWS.time_param(check_time(until, "until")),
            "limit": limit,
        }
        with self._writing_one() as conn:
            rows = conn.execute(self.SCHEDULE_SQL.claim, params).fetchall()
        found = [self.ROWS.schedule(r) for r in rows]
        return sorted(found, key=lambda s: (s.next_fire_time or NEVER, s.schedule_id))

    def next_schedule_due(self, now: datetime) -> datetime | None:
        params = {"now": self.ROWS.time_param(check_time(now, "now"))}
        with self._reading() as conn:
            row = conn.execute(self.SCHEDULE_SQL.next_due, params).fetchone()
        return None if row is None or row[0] is None else self.ROWS.time(row[0])

    def schedule_count(self) -> int:
        with self._reading() as conn:
            row = conn.execute(self.SCHEDULE_SQL.count).fetchone()
        return int(row[0] or 0)

    def instance_statuses(self, workflow_ids: Sequence[str]) -> dict[str, Status]:
        rows = self._among(self.SCHEDULE_SQL.statuses, workflow_ids)
        return {str(r[0]): Status(r[1]) for r in rows}

    def instance_revisions(self, workflow_ids: Sequence[str]) -> dict[str, int]:
        rows = self._among(self.SCHEDULE_SQL.revisions, workflow_ids)
        return {str(r[0]): int(r[1]) for r in rows}

    def _among(self, sql: str, workflow_ids: Sequence[str]) -> list[Any]:
        """The rows ``sql`` reads of ``workflow_ids`` (its ``ids``: a JSON array)."""
        if not workflow_ids:
            return []
        ids = json.dumps(list(dict.fromkeys(workflow_ids)), ensure_ascii=False)
        return self._read_all(sql, {"ids": ids})

    def _schedule_params(
        self, schedule_id: str, document: dict[str, Any], next_fire: datetime | None, now: datetime
    ) -> Params:
        return {
            "schedule_id": schedule_id,
            "document": json.dumps(document, ensure_ascii=False, sort_keys=True),
            "next_fire_time": None
            if next_fire is None
            else self.ROWS.time_param(check_time(next_fire, "next_fire")),
            "now": self.ROWS.time_param(check_time(now, "now")),
        }
