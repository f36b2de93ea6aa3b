"""Child workflows' parent links, for the SQL backends (and Citus, where the links are
distributed with the instances by the child's id). Both run the same statements, which
differ only in their placeholders."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

from statewrightd.store.records import ChildLink
from statewrightd.store.rows import Rows

LINK_COLUMNS = "workflow_id, parent_id, parent_task, parent_state, create_time"
_LIVE = "w.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')"


def statements(q: str) -> tuple[str, str, str, str, str]:
    """(insert, get one, count a parent's live children, their first ids, live children
    after an id) with ``q`` as the positional placeholder."""
    insert = (
        f"INSERT INTO workflow_children ({LINK_COLUMNS}) VALUES ({q}, {q}, {q}, {q}, {q})"
        " ON CONFLICT (workflow_id) DO NOTHING"
    )
    get = f"SELECT {LINK_COLUMNS} FROM workflow_children WHERE workflow_id = {q}"
    count = (
        "SELECT count(*) FROM workflow_children c JOIN workflow_instances w"
        f" ON w.workflow_id = c.workflow_id WHERE c.parent_id = {q} AND {_LIVE}"
    )
    first = (
        "SELECT c.workflow_id FROM workflow_children c JOIN workflow_instances w"
        f" ON w.workflow_id = c.workflow_id WHERE c.parent_id = {q} AND {_LIVE}"
        f" ORDER BY c.workflow_id LIMIT {q}"
    )
    live = (
        f"SELECT c.{LINK_COLUMNS.replace(', ', ', c.')} FROM workflow_children c"
        " JOIN workflow_instances w ON w.workflow_id = c.workflow_id"
        f" WHERE c.workflow_id > {q} AND {_LIVE} ORDER BY c.workflow_id LIMIT {q}"
    )
    return insert, get, count, first, live


POSTGRES_CHILDREN = statements("%s")
SQLITE_CHILDREN = statements("?")


class SqlChildren:
    """The parent links of the repository contract, for the SQL backends."""

    CHILDREN_SQL: ClassVar[tuple[str, str, str, str, str]]
    ROWS: ClassVar[Rows]

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _time(self, value: datetime) -> Any: ...

    def link_child(self, link: ChildLink) -> ChildLink:
        insert, get, *_ = self.CHILDREN_SQL
        params = (
            link.workflow_id,
            link.parent_id,
            link.parent_task,
            link.parent_state,
            self._time(link.create_time),
        )
        with self._writing() as conn:
            conn.execute(insert, params)
            row = conn.execute(get, (link.workflow_id,)).fetchone()
        return self._link(row)

    def child_links(self, workflow_ids: Sequence[str]) -> dict[str, ChildLink]:
        get = self.CHILDREN_SQL[1]
        found: dict[str, ChildLink] = {}
        for workflow_id in dict.fromkeys(workflow_ids):
            # One row each, by its key: a page of a listing asks for a few at most.
            for row in self._read_all(get, (workflow_id,)):
                found[workflow_id] = self._link(row)
        return found

    def children_of(self, parent_id: str, limit: int) -> tuple[int, list[str]]:
        _, _, count, first, _ = self.CHILDREN_SQL
        counted = self._read_all(count, (parent_id,))
        ids = [str(r[0]) for r in self._read_all(first, (parent_id, limit))]
        return int(counted[0][0] if counted else 0), ids

    def live_children(self, after: str, limit: int) -> list[ChildLink]:
        return [self._link(r) for r in self._read_all(self.CHILDREN_SQL[4], (after, limit))]

    def _link(self, row: Sequence[Any]) -> ChildLink:
        return ChildLink(str(row[0]), str(row[1]), str(row[2]), str(row[3]), self.ROWS.time(row[4]))
