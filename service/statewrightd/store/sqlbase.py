"""What both SQL backends do the same way: reads, definitions, pages and the schema check.

A backend brings its statements (``Statements``), its ``Rows`` (how its driver hands
values over) and its connection handling (``_reading`` and ``_writing``); its write path
(the batched compare-and-swap) stays its own, because that is where the two databases
differ most.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Protocol

from statewrightd.errors import InvalidArgument, StorageUnavailable
from statewrightd.store import failures
from statewrightd.store.batching import BatchWriter
from statewrightd.store.codec import (
    check_status_filter,
    check_time,
    clamp_page_size,
    decode_page_token,
    encode_definition,
    encode_page_token,
)
from statewrightd.store.records import (
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    Page,
    RequestRecord,
    TimerRecord,
)
from statewrightd.store.rows import Rows


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The part of a DB-API connection the shared reads use (psycopg's and sqlite3's)."""

    def execute(self, query: str, params: Any = ..., /) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class Statements:
    """One backend's SQL for the shared operations. Rows come back in ``rows`` column order;
    positional parameters are in the order each comment gives."""

    load: str  # workflow_id -> INSTANCE
    history_after: str  # workflow_id, after revision, limit -> HISTORY by revision
    lookup_request: str  # request_id -> REQUEST
    purge_requests: str  # cutoff time
    # The definition's DEFINITION columns; may return the row it inserted (nothing when
    # the row was already there, or when the backend's INSERT returns nothing at all).
    insert_definition: str
    get_definition: str  # name, version -> DEFINITION
    get_latest_definition: str  # name -> DEFINITION
    list_definitions: str  # -> DEFINITION by name, version
    # (by_definition, by_status) -> keyset page over seq: seq then INSTANCE, with the named
    # parameters after, definition, status and limit.
    list_instances: Callable[[bool, bool], str]
    # Timers. Named parameters: ids (a JSON array of workflow ids), now, until, limit.
    armed_timers: str  # ids -> TIMER, by workflow id and due time
    # Claims up to limit unclaimed (or lapsed) timers due by now until ``until``; -> TIMER.
    claim_timers: str
    next_timer_due: str  # now -> the earliest due time among timers not claimed now
    delete_timer: str  # workflow_id, timer_id
    timer_counts: str  # now -> (armed, due by now)


class SqlRepository(BatchWriter):
    SQL: ClassVar[Statements]
    ROWS: ClassVar[Rows]

    def __init__(self, schema_version: int) -> None:
        self._schema_version = schema_version

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Connection]:
        """A connection for reads; driver failures come out as StorageUnavailable."""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Connection]:
        """A connection in a write transaction that commits when the block succeeds."""

    @abstractmethod
    def _stored_schema_version(self) -> int:
        """The database's schema version; StorageUnavailable if it does not answer."""

    # -- reads -----------------------------------------------------------------------

    def load(self, workflow_id: str) -> InstanceRecord:
        with self._reading() as conn:
            row = conn.execute(self.SQL.load, (workflow_id,)).fetchone()
        if row is None:
            raise failures.workflow_not_found(workflow_id)
        return self.ROWS.instance(row)

    def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]:
        if limit <= 0:
            raise InvalidArgument("limit must be positive", reason="INVALID_LIMIT")
        with self._reading() as conn:
            rows = conn.execute(
                self.SQL.history_after, (workflow_id, after_revision, limit)
            ).fetchall()
        return [self.ROWS.history(r) for r in rows]

    def lookup_request(self, request_id: str) -> RequestRecord | None:
        with self._reading() as conn:
            row = conn.execute(self.SQL.lookup_request, (request_id,)).fetchone()
        return None if row is None else self.ROWS.request(row)

    def purge_requests(self, older_than: datetime) -> int:
        cutoff = self.ROWS.time_param(check_time(older_than, "older_than"))
        with self._writing() as conn:
            return conn.execute(self.SQL.purge_requests, (cutoff,)).rowcount

    # -- definitions -----------------------------------------------------------------

    def put_definition(self, rec: DefinitionRecord) -> DefinitionRecord:
        *columns, create_time = encode_definition(rec)
        params = (*columns, self.ROWS.time_param(create_time))
        with self._writing() as conn:
            row = conn.execute(self.SQL.insert_definition, params).fetchone()
            if row is None:
                row = conn.execute(self.SQL.get_definition, (rec.name, rec.version)).fetchone()
        if row is None:  # only if someone deletes definitions, which nothing does
            raise StorageUnavailable(f"definition {rec.name} v{rec.version} vanished; retry")
        return failures.same_definition_or_raise(self.ROWS.definition(row), rec)

    def get_definition(self, name: str, version: int | None = None) -> DefinitionRecord:
        with self._reading() as conn:
            if version is None:
                row = conn.execute(self.SQL.get_latest_definition, (name,)).fetchone()
            else:
                row = conn.execute(self.SQL.get_definition, (name, version)).fetchone()
        if row is None:
            raise failures.definition_not_found(name, version)
        return self.ROWS.definition(row)

    def list_definitions(self) -> list[DefinitionRecord]:
        with self._reading() as conn:
            rows = conn.execute(self.SQL.list_definitions).fetchall()
        return [self.ROWS.definition(r) for r in rows]

    # -- timers ----------------------------------------------------------------------

    def armed_timers(self, workflow_ids: Sequence[str]) -> dict[str, list[TimerRecord]]:
        if not workflow_ids:
            return {}
        ids = json.dumps(list(workflow_ids), ensure_ascii=False)
        with self._reading() as conn:
            rows = conn.execute(self.SQL.armed_timers, {"ids": ids}).fetchall()
        out: dict[str, list[TimerRecord]] = {}
        for row in rows:
            timer = self.ROWS.timer(row)
            out.setdefault(timer.workflow_id, []).append(timer)
        return out

    def claim_timers(self, now: datetime, until: datetime, limit: int) -> list[TimerRecord]:
        params = {
            "now": self.ROWS.time_param(check_time(now, "now")),
            "until": self.ROWS.time_param(check_time(until, "until")),
            "limit": limit,
        }
        with self._writing() as conn:
            rows = conn.execute(self.SQL.claim_timers, params).fetchall()
        return sorted((self.ROWS.timer(r) for r in rows), key=lambda t: t.due_time)

    def next_timer_due(self, now: datetime) -> datetime | None:
        params = {"now": self.ROWS.time_param(check_time(now, "now"))}
        with self._reading() as conn:
            row = conn.execute(self.SQL.next_timer_due, params).fetchone()
        return None if row is None or row[0] is None else self.ROWS.time(row[0])

    def delete_timer(self, workflow_id: str, timer_id: str) -> bool:
        with self._writing() as conn:
            deleted = conn.execute(self.SQL.delete_timer, (workflow_id, timer_id)).rowcount
        return bool(deleted)

    def timer_counts(self, now: datetime) -> tuple[int, int]:
        params = {"now": self.ROWS.time_param(check_time(now, "now"))}
        with self._reading() as conn:
            armed, due = conn.execute(self.SQL.timer_counts, params).fetchone()
        return int(armed or 0), int(due or 0)

    # -- lifecycle -------------------------------------------------------------------

    def ping(self) -> None:
        version = self._stored_schema_version()
        if version < self._schema_version:
            raise failures.schema_behind(version, self._schema_version)

    # Last in the class: the method name shadows the builtin in later annotations.
    def list(
        self,
        *,
        definition: str | None = None,
        status: str | None = None,
        page_size: int = 0,
        page_token: str = "",
    ) -> Page:
        check_status_filter(status)
        size = clamp_page_size(page_size)
        after = decode_page_token(page_token, definition, status)
        sql = self.SQL.list_instances(definition is not None, status is not None)
        params = {"after": after, "definition": definition, "status": status, "limit": size + 1}
        with self._reading() as conn:
            rows = conn.execute(sql, params).fetchall()
        more = len(rows) > size
        rows = rows[:size]
        token = encode_page_token(rows[-1][0], definition, status) if more else ""
        return Page(items=[self.ROWS.instance(r[1:]) for r in rows], next_page_token=token)
