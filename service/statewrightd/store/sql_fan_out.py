"""A fan-out's items as the engine reads them back: their counts, and the ends the join
needs. Both SQL backends (and Citus, whose queries here name one instance) run the same
statements, which differ only in their placeholders."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from statewrightd.store import rows
from statewrightd.store.records import FanOutProgress, TaskRecord
from statewrightd.store.rows import Rows

TASK_COLUMNS = rows.listed(rows.TASK)

ENDED = "('COMPLETED', 'FAILED', 'TIMED_OUT')"
GAVE_UP = "('FAILED', 'TIMED_OUT')"


def _counts(q: str) -> str:
    """workflow_id (twice) -> (revision, items, completed, given up) of its latest fan-out."""
    return f"""
SELECT revision, count(*),
       sum(CASE WHEN status = 'COMPLETED' THEN 1 ELSE 0 END),
       sum(CASE WHEN status IN {GAVE_UP} THEN 1 ELSE 0 END)
  FROM workflow_tasks
 WHERE workflow_id = {q} AND item_index IS NOT NULL AND revision = (
       SELECT max(revision) FROM workflow_tasks
        WHERE workflow_id = {q} AND item_index IS NOT NULL)
 GROUP BY revision
"""


def _ends(q: str, statuses: str) -> str:
    """workflow_id, revision, limit -> the items of that fan-out in ``statuses``, by index."""
    return (
        f"SELECT {TASK_COLUMNS} FROM workflow_tasks"
        f" WHERE workflow_id = {q} AND revision = {q} AND item_index IS NOT NULL"
        f" AND status IN {statuses} ORDER BY item_index LIMIT {q}"
    )


def statements(q: str) -> tuple[str, str, str]:
    """The statements with ``q`` as their positional placeholder."""
    return _counts(q), _ends(q, ENDED), _ends(q, GAVE_UP)


POSTGRES_FAN_OUT = statements("%s")
SQLITE_FAN_OUT = statements("?")


class SqlFanOut:
    """The fan-out reads of the repository contract, for the SQL backends."""

    FAN_OUT_SQL: ClassVar[tuple[str, str, str]]
    ROWS: ClassVar[Rows]

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    def fan_out(self, workflow_id: str) -> FanOutProgress | None:
        found = self._read_all(self.FAN_OUT_SQL[0], (workflow_id, workflow_id))
        if not found:
            return None
        revision, total, completed, given_up = found[0]
        return FanOutProgress(int(revision), int(total), int(completed or 0), int(given_up or 0))

    def item_ends(
        self, workflow_id: str, revision: int, *, given_up_only: bool, limit: int
    ) -> list[TaskRecord]:
        sql = self.FAN_OUT_SQL[2 if given_up_only else 1]
        return [self.ROWS.task(r) for r in self._read_all(sql, (workflow_id, revision, limit))]
