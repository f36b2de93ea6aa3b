"""Child workflows' parent links, for the SQL backends (and Citus, where the links are
distributed with the instances by the child's id). Both run the same statements, which
differ only in their placeholders."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

from statewrightd.store.records import ChildLink
from statewrightd.store.rows import Rows

LINK_COLUMNS = "workflow_id, parent_id, parent_task, parent_state, create_time"
_LIVE = "w.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED')"


def statements(q: str, many: str) -> tuple[str, str, str, str, str, str, str, str]:
    """(insert, get one, count a parent's live children, their first ids, live children
    after an id, get many, finished children not taken, take them) with ``q`` as the
    positional placeholder; ``many``: the test of workflow_id against a list of ids given
    as one parameter."""
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
    get_many = f"SELECT {LINK_COLUMNS} FROM workflow_children WHERE {many}"
    untaken = (
        f"SELECT c.{LINK_COLUMNS.replace(', ', ', c.')} FROM workflow_children c"
        " JOIN workflow_instances w ON w.workflow_id = c.workflow_id"
        f" WHERE NOT c.taken AND NOT ({_LIVE}) ORDER BY c.workflow_id LIMIT {q}"
    )
    take = f"UPDATE workflow_children SET taken = true WHERE NOT taken AND {many}"
    return insert, get, count, first, live, get_many, untaken, take


POSTGRES_CHILDREN = statements("%s", "workflow_id = ANY(%s)")
# SQLite takes the ids as a JSON array.
SQLITE_CHILDREN = statements("?", "workflow_id IN (SELECT value FROM json_each(?))")


class SqlChildren:
    """The parent links of the repository contract, for the SQL backends."""

    CHILDREN_SQL: ClassVar[tuple[str, str, str, str, str, str, str, str]]
    JSON_ID_LIST: ClassVar[bool] = False  # a list of ids is bound as JSON text (SQLite)
    ROWS: ClassVar[Rows]

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _writing_one(self) -> AbstractContextManager[Any]: ...

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
        ids = list(dict.fromkeys(workflow_ids))
        if not ids:
            return {}
        param = json.dumps(ids) if self.JSON_ID_LIST else ids
        rows = self._read_all(self.CHILDREN_SQL[5], (param,))
        return {link.workflow_id: link for link in map(self._link, rows)}

    def children_of(self, parent_id: str, limit: int) -> tuple[int, list[str]]:
        count, first = self.CHILDREN_SQL[2:4]
        counted = self._read_all(count, (parent_id,))
        ids = [str(r[0]) for r in self._read_all(first, (parent_id, limit))]
        return int(counted[0][0] if counted else 0), ids

    def live_children(self, after: str, limit: int) -> list[ChildLink]:
        return [self._link(r) for r in self._read_all(self.CHILDREN_SQL[4], (after, limit))]

    def untaken_children(self, limit: int) -> list[ChildLink]:
        return [self._link(r) for r in self._read_all(self.CHILDREN_SQL[6], (limit,))]

    def take_children(self, workflow_ids: Sequence[str]) -> int:
        ids = list(dict.fromkeys(workflow_ids))
        if not ids:
            return 0
        param = json.dumps(ids) if self.JSON_ID_LIST else ids
        with self._writing_one() as conn:
            return int(conn.execute(self.CHILDREN_SQL[7], (param,)).rowcount)

    def _link(self, row: Sequence[Any]) -> ChildLink:
        return ChildLink(str(row[0]), str(row[1]), str(row[2]), str(row[3]), self.ROWS.time(row[4]))
