"""SQLite backend (standard library, WAL): the embedded default for ``statewrightd dev``.

One connection guarded by a lock: SQLite has a single writer anyway, and one connection
keeps transactions strictly serial inside the process. ``BEGIN IMMEDIATE`` takes the
write lock up front so a second process sharing the file waits (busy_timeout) instead
of failing half-way through a transaction.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

from statewrightd.errors import StorageUnavailable, StoreError
from statewrightd.reasons import Reason
from statewrightd.store import (
    failures,
    sql_batches,
    sql_children,
    sql_fan_out,
    sql_flow,
    sql_schedules,
)
from statewrightd.store import sql_sqlite as q
from statewrightd.store.codec import EncodedOp, check_time, from_micros, loads, to_micros
from statewrightd.store.outcomes import HistoryWitness, resolve_each
from statewrightd.store.records import (
    Create,
    InstanceRecord,
    Operation,
    Purged,
    SearchValues,
    target_of,
)
from statewrightd.store.rows import Rows
from statewrightd.store.schema import connect_sqlite, latest_version, sqlite_schema_version
from statewrightd.store.sqlbase import SqlRepository


def _micros(params: dict[str, Any], *names: str) -> dict[str, Any]:
    out = dict(params)
    for name in names:
        if out[name] is not None:
            out[name] = to_micros(out[name])
    return out


class SqliteRepository(SqlRepository):
    FAN_OUT_SQL = sql_fan_out.SQLITE_FAN_OUT
    CHILDREN_SQL = sql_children.SQLITE_CHILDREN
    JSON_ID_LIST = True
    SQL = q.SQL
    SCHEDULE_SQL = sql_schedules.SQLITE
    BATCH_SQL = sql_batches.SQLITE
    FLOW = sql_flow.SQLITE
    # JSON is kept as text, times as integer microseconds (exact, and they sort).
    ROWS = Rows(json=loads, time=from_micros, time_param=to_micros)
    SQL_STANDING = q.INSTANCE_STANDING

    def __init__(self, path: str) -> None:
        super().__init__(latest_version("sqlite"))
        self._path = path
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._conn = connect_sqlite(path)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"cannot open SQLite database {path!r}: {exc}") from exc

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StorageUnavailable("the repository is closed", reason=Reason.STORE_CLOSED)
            try:
                yield self._conn
            except sqlite3.OperationalError as exc:
                raise StorageUnavailable(f"SQLite unavailable: {exc}") from exc

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self._reading() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _writing_one(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._writing()  # in the process: no round trips to save

    def answered_at(self) -> float:
        """An embedded database is in the process: it answers whenever it is asked."""
        return time.monotonic()

    def _stored_schema_version(self) -> int:
        with self._reading() as conn:
            return sqlite_schema_version(conn)

    # -- writes ----------------------------------------------------------------------

    def _write(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        try:
            with self._writing() as conn:
                return [_apply_one(conn, e) for e in encoded]
        except StorageUnavailable as exc:
            return [exc for _ in encoded]

    # -- removal ---------------------------------------------------------------------

    def purge_expired(self, now: datetime, limit: int) -> Purged:
        micros = to_micros(check_time(now, "now"))
        with self._writing() as conn:
            found = conn.execute(q.EXPIRED, {"now": micros, "limit": limit}).fetchall()
            ids = [r[0] for r in found]
            if not ids:
                return Purged(rows=dict.fromkeys((*q.CHILD_TABLES, "workflow_instances"), 0))
            conn.execute(q.MARK_REMOVED, {"ids": json.dumps(ids), "now": micros})
            return _remove(conn, ids)

    def delete_workflow(self, workflow_id: str, revision: int | None = None) -> Purged:
        with self._writing() as conn:
            params = {"workflow_id": workflow_id, "revision": revision}
            if conn.execute(q.REMOVABLE, params).fetchone() is None:
                raise self._removal_failure(conn, workflow_id, revision)
            conn.execute(q.UNMARK, (workflow_id,))
            return _remove(conn, [workflow_id])

    def resolve_outcome(
        self, ops: Sequence[Operation], *, backend_pids: Sequence[int] = ()
    ) -> list[InstanceRecord | StoreError]:
        # A local COMMIT cannot be lost in transit, but the runtime may still re-check.
        with self._reading() as conn:
            revisions: dict[str, int] = {}
            witnesses: dict[tuple[str, int], HistoryWitness] = {}
            for op in ops:
                target = target_of(op)
                row = conn.execute(q.CURRENT_REVISION, (target.workflow_id,)).fetchone()
                if row is not None:
                    revisions[target.workflow_id] = row[0]
                found = conn.execute(q.WITNESS, (target.workflow_id, target.revision))
                witnesses.update(self.ROWS.witnesses(found.fetchall()))
        return resolve_each(ops, revisions, witnesses)

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()


_TIMES = ("create_time", "update_time", "expire_time", "h_time", "r_time", "r_cutoff")


def _remove(conn: sqlite3.Connection, ids: list[str]) -> Purged:
    """Delete instances ``ids`` and everything of theirs, inside the caller's transaction."""
    params = {"ids": json.dumps(ids)}
    counts = {
        table: conn.execute(q.REMOVE_CHILDREN[table], params).rowcount for table in q.CHILD_TABLES
    }
    counts["workflow_instances"] = conn.execute(q.REMOVE_INSTANCES, params).rowcount
    return Purged(workflow_ids=tuple(sorted(ids)), rows=counts)


def _apply_one(conn: sqlite3.Connection, e: EncodedOp) -> InstanceRecord | StoreError:
    """One row's CAS inside the batch transaction; a failure here writes nothing."""
    op = e.op
    p = _micros(
        e.params, "create_time", "update_time", "expire_time", "h_time", "r_time", "r_cutoff"
    )
    rid = p["request_id"]
    if (
        rid is not None
        and conn.execute(q.REQUEST_TAKEN, (p["workflow_id"], rid, p["r_cutoff"])).fetchone()
    ):
        return failures.refused(op, request_free=False, actual_revision=None)
    fired = op.timers.fired
    if fired is not None and not conn.execute(q.TIMER_ARMED, (p["workflow_id"], fired)).fetchone():
        return _refused_save(conn, op, p)
    finish = op.tasks.finish
    if finish is not None:
        row = conn.execute(q.TASK_FENCE, (p["workflow_id"], finish.task_id)).fetchone()
        fenced = row is not None and row[1] == finish.lease_token
        fenced = fenced and (finish.attempt is None or row[2] == finish.attempt)
        fenced = fenced and (finish.seen is None or row[3] == to_micros(finish.seen))
        fenced = fenced and (row[0] == "LEASED" or (not finish.leased and row[0] in _OPEN))
        if not fenced:
            return _refused_save(conn, op, p, None if row is None else (row[0], row[1]))
    if not conn.execute(q.CREATE if isinstance(op, Create) else q.SAVE, p).rowcount:
        return _refused_save(conn, op, p)
    conn.execute(q.INSERT_HISTORY, p)
    if rid is not None:
        conn.execute(q.INSERT_REQUEST, p)
    if op.timers.disarm:
        conn.execute(q.DISARM, (p["workflow_id"],))
    if op.timers.arm:
        conn.execute(q.ARM, p)
    if op.tasks:
        _task_work(conn, p)
    if op.search is not None:
        _write_search(conn, p["workflow_id"], op.search, fresh=isinstance(op, Create))
    return target_of(op)


def _write_search(
    conn: sqlite3.Connection, workflow_id: str, values: SearchValues, *, fresh: bool
) -> None:
    """The instance's search rows, replaced (a new instance has none to replace)."""
    if not fresh:
        conn.execute(q.DELETE_SEARCH, (workflow_id,))
    conn.executemany(q.INSERT_SEARCH, [(workflow_id, v.field, v.text, v.number) for v in values])


_OPEN = frozenset({"SCHEDULED", "LEASED", "BACKOFF"})


def _task_work(conn: sqlite3.Connection, p: dict[str, Any]) -> None:
    if p["k_finish_id"] is not None:
        conn.execute(q.FINISH_TASK, p)
    if p["k_cancel"]:
        conn.execute(q.CANCEL_TASK, p)
    if p["k_schedule"] is not None:
        conn.executemany(q.SCHEDULE_TASK, [sqlite_task(t) for t in loads(p["k_schedule"])])
    if p["k_release_id"] is not None:
        release = _micros(p, "k_release_time", "k_release_deadline")
        conn.execute(q.RELEASE_ITEM, release)


def sqlite_task(task: dict[str, Any]) -> dict[str, Any]:
    """An encoded task (codec.encode_task) as this backend's parameters."""
    out = {**task, **task["us"]}
    for name in ("input", "retry", "heartbeat_details", "last_error", "result"):
        out[name] = None if out[name] is None else json.dumps(out[name], ensure_ascii=False)
    del out["us"]
    return out


def _refused_save(
    conn: sqlite3.Connection,
    op: Operation,
    p: dict[str, Any],
    task: tuple[str, str | None] | None = None,
) -> StoreError:
    actual = None
    if not isinstance(op, Create):
        row = conn.execute(q.CURRENT_REVISION, (p["workflow_id"],)).fetchone()
        actual = None if row is None else row[0]
    return failures.refused(op, request_free=True, actual_revision=actual, task=task)
