"""PostgreSQL backend: psycopg 3 with a connection pool, READ COMMITTED, CAS by revision."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from json.encoder import encode_basestring as _json_string
from typing import Any

import psycopg
import psycopg.errors
from psycopg_pool import PoolTimeout

from statewrightd.errors import OutcomeUnknown, StorageUnavailable, StoreError
from statewrightd.reasons import Reason
from statewrightd.store import (
    failures,
    sql_batches,
    sql_children,
    sql_fan_out,
    sql_schedules,
)
from statewrightd.store import sql_postgres as q
from statewrightd.store.codec import EncodedOp, check_time
from statewrightd.store.notifications import step_hints_payloads, task_queues_payload
from statewrightd.store.outcomes import (
    HistoryWitness,
    Verdict,
    answer,
    classify,
    resolve_each,
    unknown,
)
from statewrightd.store.pg_pool import RETRYABLE, Conn, RenewingPool
from statewrightd.store.records import (
    Create,
    InstanceRecord,
    Operation,
    Purged,
    Save,
    WholeInstance,
    target_of,
)
from statewrightd.store.rows import INSTANCE, Rows
from statewrightd.store.schema import latest_version, postgres_schema_version
from statewrightd.store.sqlbase import SqlRepository

_MAX_ATTEMPTS = 3
# How long a read-back waits for the old server process to finish on its own before
# terminating it; only once it is gone is the row we read final.
_BACKEND_GRACE_S = 1.0
_TERMINATE_TIMEOUT_MS = 3000


def _utc(value: datetime) -> datetime:
    return value.astimezone(UTC)


def _as_is(value: Any) -> Any:
    return value


# psycopg decodes jsonb and timestamptz itself, and takes datetimes as they are.
_ROWS = Rows(json=_as_is, time=_utc, time_param=_as_is)


def _configure(conn: Conn) -> None:
    # Timestamps come back in UTC whatever the server's default zone is.
    conn.execute("SET TIME ZONE 'UTC'")
    conn.commit()


@contextmanager
def _autocommitted(conn: Conn) -> Iterator[Conn]:
    """``conn`` running each statement as its own transaction for the block, then back.

    A read, or a write of one statement: in a transaction of its own it would cost two
    more round trips (BEGIN, COMMIT) and isolate nothing more (each statement of a READ
    COMMITTED transaction sees its own snapshot anyway; a statement is atomic). A
    connection that cannot be put back to transactions is closed: the pool must never
    hand a writer one that commits each statement as it runs.
    """
    if conn.autocommit:
        yield conn
        return
    conn.autocommit = True
    try:
        yield conn
    finally:
        # A lost connection is left as it is: the pool discards it, and a writer asks
        # it whether it broke while a statement ran (closing it would hide that).
        if not conn.broken:
            try:
                conn.autocommit = False
            except psycopg.Error:
                conn.close()


# A batch of at least this many steps takes the set-based statements (sql_postgres
# CREATE_MANY, CREATE_REQUESTS), a smaller one a statement per step: the set-based form
# adds a statement (the rows' locks) and a JSON document, which pay for themselves from
# about eight rows (bench/run_request_batches.sh): below that one statement a row costs
# the server and PostgreSQL less CPU, and a lone step a quarter less time.
SET_BASED_FROM = 8


class _CommitLost(Exception):
    """Internal: the connection failed while COMMIT was in flight."""

    def __init__(self, backend_pid: int | None, executed: list[InstanceRecord | StoreError] | None):
        """``executed``: each row's answer before COMMIT, or None when lost with it."""
        super().__init__("connection lost during COMMIT")
        self.backend_pid = backend_pid
        self.executed = executed


class PostgresRepository(SqlRepository):
    FAN_OUT_SQL = sql_fan_out.POSTGRES_FAN_OUT
    CHILDREN_SQL = sql_children.POSTGRES_CHILDREN
    SQL = q.SQL
    SCHEDULE_SQL = sql_schedules.POSTGRES
    BATCH_SQL = sql_batches.POSTGRES
    FLOW = q.FLOW
    ROWS = _ROWS
    SQL_STANDING = q.INSTANCE_STANDING
    # Whether pooled connections run each statement as its own transaction.
    AUTOCOMMIT = False
    REVISION_FOR_UPDATE = " FOR UPDATE"

    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 16,
        connect_timeout: float = 10.0,
        pool_timeout: float = 10.0,
        set_based_from: int = SET_BASED_FROM,
    ) -> None:
        """``set_based_from``: the fewest steps a batch has for its set-based statements."""
        super().__init__(latest_version("postgres"))
        self._url = url
        self._set_based_from = set_based_from
        self._connect_timeout = connect_timeout
        self._pool_timeout = pool_timeout
        self._before_open()
        self._connections = RenewingPool(
            url,
            size=pool_size,
            connect_timeout=connect_timeout,
            timeout=pool_timeout,
            autocommit=self.AUTOCOMMIT,
            configure=self._configure,
            troubles=(_CommitLost,),
        )

    @property
    def backend_pids(self) -> set[int]:
        """Server processes behind the pool's connections (see RenewingPool)."""
        return self._connections.backend_pids

    def _before_open(self) -> None:
        """Sets what a backend built on this one keeps besides the pool; it runs before the
        pool opens, whose connections' set-up may already need it."""

    def _configure(self, conn: Conn) -> None:
        _configure(conn)

    def set_unreachable(self, unreachable: bool) -> None:
        self._connections.unreachable = unreachable

    def answered_at(self) -> float:
        return self._connections.answered_at()

    def _pooled(self, timeout: float, *, probe: bool = False) -> AbstractContextManager[Conn]:
        """A pooled connection; the ``probe`` (the readiness check) is never refused while
        the database is known down, and renews the pool once the database is back."""
        return self._connections.pooled(timeout, probe=probe)

    # -- connections for the shared reads and definitions (see sqlbase) ---------------

    @contextmanager
    def _reading(self) -> Iterator[Conn]:
        try:
            with self._pooled(self._pool_timeout) as conn, _autocommitted(conn):
                yield conn
        except PoolTimeout as exc:
            raise StorageUnavailable(f"no database connection available: {exc}") from exc
        except psycopg.OperationalError as exc:
            raise StorageUnavailable(f"database unavailable: {exc}") from exc

    @contextmanager
    def _writing(self, alone: bool = False) -> Iterator[Conn]:
        # The pool commits a connection's transaction when the block using it succeeds;
        # a connection lost then may or may not have committed, which the caller must be
        # told apart from a write that surely did not happen (as a step's is). With
        # autocommit (Citus, or ``alone``: one statement) each statement commits as it
        # runs, so a connection lost while one ran may have committed it too: a task's
        # retry told "not applied" had in fact given up its lease, and its worker went on
        # as if it held it.
        committing = False
        used: Conn | None = None
        try:
            with self._pooled(self._pool_timeout) as conn:
                used = conn
                if alone:
                    with _autocommitted(conn):
                        yield conn
                else:
                    yield conn
                committing = True
        except PoolTimeout as exc:
            raise StorageUnavailable(f"no database connection available: {exc}") from exc
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            autocommit = self.AUTOCOMMIT or alone
            lost_running = autocommit and used is not None and used.broken
            if (committing or lost_running) and not isinstance(exc, RETRYABLE):
                when = "during COMMIT" if committing else "while a write ran"
                raise OutcomeUnknown(f"connection lost {when}: {exc}") from exc
            raise StorageUnavailable(f"database unavailable: {exc}") from exc

    def _writing_one(self) -> AbstractContextManager[Conn]:
        # One statement is a transaction of its own: BEGIN and COMMIT around it would be
        # two more round trips (a heartbeat, a retry, each background claim).
        return self._writing(alone=True)

    def load_whole(self, workflow_id: str) -> WholeInstance | None:
        # Three statements, one round trip: a pipeline sends them all before reading.
        ids = json.dumps([workflow_id], ensure_ascii=False)
        with self._reading() as conn:
            with conn.pipeline():
                found = conn.execute(self.SQL.load, (workflow_id,))
                armed = conn.execute(self.SQL.armed_timers, {"ids": ids})
                tasks = conn.execute(self.SQL.open_tasks, {"ids": ids})
            row = found.fetchone()
            timers = tuple(self.ROWS.timer(r) for r in armed.fetchall())
            task = next((self.ROWS.task(r) for r in tasks.fetchall()), None)
        if row is None:
            raise failures.workflow_not_found(workflow_id)
        return WholeInstance(self.ROWS.instance(row), timers, task)

    def _stored_schema_version(self) -> int:
        try:
            pooled = self._pooled(min(self._pool_timeout, 5.0), probe=True)
            with pooled as conn, _autocommitted(conn):
                return postgres_schema_version(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageUnavailable(f"database unavailable: {exc}") from exc

    # -- writes ----------------------------------------------------------------------

    def _write(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        for attempt in range(1, _MAX_ATTEMPTS + 1):
            try:
                return self._transaction(encoded)
            except RETRYABLE as exc:
                if attempt == _MAX_ATTEMPTS:
                    return _all(encoded, StorageUnavailable(f"transaction kept failing: {exc}"))
            except _CommitLost as lost:
                return self._reconcile(encoded, lost)
            except PoolTimeout as exc:
                return _all(encoded, StorageUnavailable(f"no database connection: {exc}"))
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                # Failed before COMMIT was sent: the server rolls the transaction back.
                return _all(encoded, StorageUnavailable(f"database unavailable: {exc}"))
            except psycopg.Error as exc:
                if len(encoded) > 1:
                    # A row the database refuses (a bug, or data it rejects) must not
                    # fail its neighbours: run each row on its own.
                    return [self._write([e])[0] for e in encoded]
                return [
                    StoreError(f"database rejected the write: {exc}", reason=Reason.STORE_ERROR)
                ]
        raise AssertionError("unreachable")

    def _transaction(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        if len(encoded) == 1 and _one_statement(encoded[0]):
            return [self._lone(encoded[0])]
        return self._in_block(encoded)

    def _in_block(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        """A batch in a transaction block: its statements and notifications in one
        pipeline, then COMMIT."""
        pid: int | None = None
        with self._pooled(self._pool_timeout) as conn:
            pid = conn.info.backend_pid
            results = self._execute(conn, encoded)
            try:
                conn.commit()
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if isinstance(exc, RETRYABLE):
                    raise
                raise _CommitLost(pid, results) from exc
        return results

    def _lone(self, e: EncodedOp) -> InstanceRecord | StoreError:
        """A step alone in its batch (most, below saturation): one statement outside a
        transaction block, which commits as it runs and sends its own notification, in one
        round trip where BEGIN, the statement, NOTIFY and COMMIT took two."""
        params = {**e.params, "n_steps": next(step_hints_payloads([target_of(e.op)]))}
        with self._pooled(self._pool_timeout) as conn, _autocommitted(conn):
            pid = conn.info.backend_pid
            try:
                row = conn.execute(_lone_statement(e), params).fetchone()
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if conn.broken and not isinstance(exc, RETRYABLE):
                    # It may have committed: what it answered is lost with the connection.
                    raise _CommitLost(pid, None) from exc
                raise
            assert row is not None
            return self._results(conn, [e], [(bool(row[0]), bool(row[1]))])[0]

    def _execute(self, conn: Conn, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        if len(encoded) >= self._set_based_from and _one_per_instance(encoded):
            outcomes = self._statement_per_kind(conn, encoded)
        else:
            outcomes = self._statement_per_row(conn, encoded)
        return self._results(conn, encoded, outcomes)

    def _results(
        self, conn: Conn, encoded: list[EncodedOp], outcomes: list[tuple[bool, bool]]
    ) -> list[InstanceRecord | StoreError]:
        """Each operation's answer from its statement's (changed, request id free)."""
        failed_saves = [
            e.op.new.workflow_id
            for e, (changed, free) in zip(encoded, outcomes, strict=True)
            if isinstance(e.op, Save) and free and not changed
        ]
        current: dict[str, int] = {}
        tasks: dict[tuple[str, str], tuple[str, str | None]] = {}
        if failed_saves:
            # A fresh statement sees the latest committed revision (READ COMMITTED), which
            # is what the loser of a CAS race needs to know.
            current = dict(conn.execute(q.CURRENT_REVISIONS, (failed_saves,)).fetchall())
            fenced = [
                (e.op.new.workflow_id, e.op.tasks.finish.task_id)
                for e, (changed, free) in zip(encoded, outcomes, strict=True)
                if isinstance(e.op, Save) and free and not changed and e.op.tasks.finish
            ]
            if fenced:
                found = conn.execute(
                    q.TASK_STATES, ([f[0] for f in fenced], [f[1] for f in fenced])
                ).fetchall()
                tasks = {(r[0], r[1]): (r[2], r[3]) for r in found}
        _write_search(
            conn, [e.op for e, (changed, _) in zip(encoded, outcomes, strict=True) if changed]
        )
        return [
            _row_result(e.op, changed, free, current, tasks)
            for e, (changed, free) in zip(encoded, outcomes, strict=True)
        ]

    def _statement_per_row(self, conn: Conn, encoded: list[EncodedOp]) -> list[tuple[bool, bool]]:
        """(changed, request id free) per operation, one CAS statement each."""
        # Lock rows in a global order (by id; stable, so one instance's ops keep their
        # order) so that concurrent batches from other replicas cannot deadlock.
        order = sorted(range(len(encoded)), key=lambda i: target_of(encoded[i].op).workflow_id)
        with conn.pipeline():
            cursors = {
                i: conn.execute(_row_statement(encoded[i]), encoded[i].params) for i in order
            }
            self._notify(conn, encoded)
        outcomes: list[tuple[bool, bool]] = []
        for i in range(len(encoded)):
            row = cursors[i].fetchone()
            assert row is not None
            outcomes.append((bool(row[0]), bool(row[1])))
        return outcomes

    def _statement_per_kind(self, conn: Conn, encoded: list[EncodedOp]) -> list[tuple[bool, bool]]:
        """The same for a whole batch in one statement per kind (sql_postgres.CREATE_MANY).
        A batch whose steps carry request ids takes the statements that record them
        (sql_postgres.CREATE_REQUESTS), which answer whether each id was free; without
        any, every request id is "free"."""
        by_id = sorted(encoded, key=lambda e: target_of(e.op).workflow_id)
        creates = [e for e in by_id if isinstance(e.op, Create)]
        saves = [e for e in by_id if isinstance(e.op, Save)]
        requested = any(e.op.request is not None for e in encoded)
        with conn.pipeline():
            if saves:
                ids = [e.params["workflow_id"] for e in saves]
                conn.execute(q.LOCK_INSTANCES, (json.dumps(ids, ensure_ascii=False),))
            created = saved = None
            if creates:
                # A batch with timer or task work takes the statements that do it (only then).
                kind = _work(creates)
                fields = _fields(_CREATE_ROW, kind, requested)
                rows_json = _rows_json([e.params for e in creates], fields)
                statements = q.CREATE_REQUESTS if requested else q.CREATE_MANYS
                created = conn.execute(statements[kind], (rows_json,))
            if saves:
                kind = _work(saves)
                rows_json = _rows_json(
                    [e.params for e in saves], _fields(_SAVE_ROW, kind, requested)
                )
                statements = q.SAVE_REQUESTS if requested else q.SAVE_MANYS
                saved = conn.execute(statements[kind], (rows_json,))
            self._notify(conn, encoded)
        answers: dict[str, tuple[bool, bool]] = {}
        for cursor in (created, saved):
            if cursor is not None:
                for row in cursor.fetchall():
                    answers[row[0]] = (bool(row[1]), bool(row[2])) if requested else (True, True)
        return [answers.get(target_of(e.op).workflow_id, (False, True)) for e in encoded]

    @staticmethod
    def _notify(conn: Conn, encoded: list[EncodedOp]) -> None:
        for payload in step_hints_payloads(target_of(e.op) for e in encoded):
            conn.execute(q.NOTIFY_STEPS, (q.STEPS_CHANNEL, payload))
        ready = (e.op.tasks.ready_queue() for e in encoded)
        queues = [r.queue for r in ready if r is not None]
        if queues:
            conn.execute(q.NOTIFY_STEPS, (q.TASKS_CHANNEL, task_queues_payload(queues)))

    # -- removal ---------------------------------------------------------------------

    def purge_expired(self, now: datetime, limit: int) -> Purged:
        params = {"now": check_time(now, "now"), "limit": limit}
        with self._writing_one() as conn:
            row = conn.execute(q.PURGE_EXPIRED, params).fetchone()
        return _purged(row)

    def delete_workflow(self, workflow_id: str, revision: int | None = None) -> Purged:
        params = {"workflow_id": workflow_id, "revision": revision}
        with self._writing() as conn:
            row = conn.execute(q.DELETE_WORKFLOW, params).fetchone()
            purged = _purged(row)
            if not purged.workflow_ids:
                raise self._removal_failure(conn, workflow_id, revision)
        return purged

    # -- unknown outcomes ------------------------------------------------------------

    def _reconcile(
        self, encoded: list[EncodedOp], lost: _CommitLost
    ) -> list[InstanceRecord | StoreError]:
        ops = [e.op for e in encoded]
        if lost.executed is None:
            return self._resolve_lost(ops, lost.backend_pid)
        written = [i for i, r in enumerate(lost.executed) if not isinstance(r, StoreError)]
        try:
            with psycopg.connect(
                self._url, autocommit=True, connect_timeout=int(self._connect_timeout)
            ) as conn:
                if lost.backend_pid is not None and not self._backend_gone(conn, lost.backend_pid):
                    return _unknown_for(ops, lost.executed, written, lost.backend_pid)
                revisions, witnesses = _read_back(conn, [ops[i] for i in written])
        except psycopg.Error:
            return _unknown_for(ops, lost.executed, written, lost.backend_pid)
        # The transaction is atomic, so one row that proves it committed (or did not)
        # decides every row it wrote; rows whose CAS failed wrote nothing either way.
        verdicts = {
            i: classify(
                ops[i],
                revisions.get(target_of(ops[i]).workflow_id),
                witnesses.get(_key(ops[i])),
            )
            for i in written
        }
        seen = set(verdicts.values())
        out = list(lost.executed)
        if Verdict.COMMITTED in seen:
            return out
        for i in written:
            target = target_of(ops[i])
            if seen & {Verdict.NOT_COMMITTED, Verdict.LOST_RACE}:
                verdict = Verdict.NOT_COMMITTED
                if verdicts[i] is Verdict.LOST_RACE:
                    verdict = Verdict.LOST_RACE
            else:
                verdict = Verdict.UNKNOWN
            out[i] = answer(ops[i], verdict, revisions.get(target.workflow_id))
        return out

    def _resolve_lost(
        self, ops: list[Operation], backend_pid: int | None
    ) -> list[InstanceRecord | StoreError]:
        """Steps whose statements' answers were lost with their COMMIT, read back."""
        try:
            found = self.resolve_outcome(ops, backend_pids=[backend_pid] if backend_pid else [])
        except StorageUnavailable:
            return [unknown(op, backend_pid) for op in ops]
        # A later re-check waits for this server process to be gone.
        return [
            unknown(op, backend_pid) if isinstance(r, OutcomeUnknown) else r
            for op, r in zip(ops, found, strict=True)
        ]

    def resolve_outcome(
        self, ops: Sequence[Operation], *, backend_pids: Sequence[int] = ()
    ) -> list[InstanceRecord | StoreError]:
        try:
            with psycopg.connect(
                self._url, autocommit=True, connect_timeout=int(self._connect_timeout)
            ) as conn:
                # Until the server process that ran the lost COMMIT is gone, the pre-state
                # proves nothing: the commit may land a moment after we read.
                if not all(self._backend_gone(conn, pid) for pid in backend_pids):
                    return [unknown(op) for op in ops]
                revisions, witnesses = _read_back(conn, list(ops))
        except psycopg.Error as exc:
            raise StorageUnavailable(f"cannot read back: {exc}") from exc
        return resolve_each(ops, revisions, witnesses)

    def _backend_gone(self, conn: Conn, pid: int) -> bool:
        """Whether the server process that ran a lost COMMIT is gone (waiting a while, and
        then terminating it): only then is a row read back final."""
        return _wait_backend_gone(conn, pid)

    # -- lifecycle -------------------------------------------------------------------

    def close(self) -> None:
        self._connections.close()


# The rows' JSON keys are the encoded parameters' names; an instance's are its columns.
_CREATE_FIELDS = INSTANCE
_SAVE_FIELDS = (
    "workflow_id", "expected", "revision", "version", "state", "status", "context", "error",
    "update_time", "expire_time", "recursion_limit", "run", "pause",
)  # fmt: skip
_HISTORY_FIELDS = (
    "h_event", "h_transitions", "h_state", "h_status", "h_error", "h_time", "h_timers",
    "h_actor", "h_input",
)  # fmt: skip
_TIMER_FIELDS = ("t_disarm", "t_arm", "t_fired")
_TEXT, _RAW, _TIME, _BOOL, _BYTES = "text", "raw", "time", "bool", "bytes"
# How each field goes into the JSON document: a JSON string, its text as it is (numbers
# and JSON already encoded), or a time.
_KINDS = {
    **dict.fromkeys(("workflow_id", "definition", "state", "status"), _TEXT),
    **dict.fromkeys(("h_event", "h_state", "h_status", "h_actor", "t_fired"), _TEXT),
    **dict.fromkeys(("k_finish_id", "k_finish_status", "k_fence_token", "k_release_id"), _TEXT),
    **dict.fromkeys(("k_release_time", "k_release_deadline", "k_fence_seen"), _TIME),
    **dict.fromkeys(("version", "revision", "expected", "k_fence_attempt"), _RAW),
    **dict.fromkeys(("recursion_limit", "run", "pause"), _RAW),
    **dict.fromkeys(
        ("context", "error", "h_transitions", "h_error", "h_timers", "h_input", "t_arm"), _RAW
    ),
    **dict.fromkeys(("k_schedule", "k_error", "k_result"), _RAW),
    **dict.fromkeys(("create_time", "update_time", "expire_time", "h_time"), _TIME),
    **dict.fromkeys(("t_disarm", "k_cancel", "k_fence_leased"), _BOOL),
    # Request records, for the batches that carry them, and a row's position (Citus).
    **dict.fromkeys(("request_id", "r_method", "r_fingerprint"), _TEXT),
    **dict.fromkeys(("r_time", "r_cutoff"), _TIME),
    "r_response": _BYTES,
    "n": _RAW,
    "s_values": _RAW,  # a step's search values, JSON (Citus)
}
_TASK_FIELDS = (
    "k_schedule", "k_cancel", "k_finish_id", "k_finish_status", "k_fence_token",
    "k_fence_attempt", "k_fence_leased", "k_error", "k_result", "k_release_id", "k_release_time",
    "k_release_deadline", "k_fence_seen",
)  # fmt: skip
_CREATE_ROW: tuple[str, ...] = _CREATE_FIELDS + _HISTORY_FIELDS
_SAVE_ROW: tuple[str, ...] = _SAVE_FIELDS + _HISTORY_FIELDS


def _purged(row: Any) -> Purged:
    """A removal statement's answer: the ids it removed, then its child-table counts."""
    assert row is not None
    ids, history, timers, tasks, requests = row
    removed = tuple(ids or ())
    return Purged(
        workflow_ids=removed,
        rows={
            "workflow_instances": len(removed),
            "workflow_history": int(history),
            "workflow_timers": int(timers),
            "workflow_tasks": int(tasks),
            "workflow_requests": int(requests),
        },
    )


def _one_per_instance(encoded: list[EncodedOp]) -> bool:
    """Whether a batch can take the set-based statements, which see one snapshot and not
    their own earlier rows: at most one operation per instance."""
    return len({target_of(e.op).workflow_id for e in encoded}) == len(encoded)


def _rows_json(rows: list[dict[str, Any]], fields: tuple[str, ...]) -> str:
    """A batch's rows as one JSON document for ``json_to_recordset``.

    One text parameter per statement instead of an array per column: psycopg dumps each
    array element in Python (several calls each), which made parameter dumping a third
    of the writer's CPU. JSON texts (contexts, errors, transitions) are already encoded
    and go in as they are; strings go through the json module's C encoder.
    """
    out = []
    for row in rows:
        parts = []
        for name in fields:
            value = row.get(name)  # a step without timer work has no t_* parameters
            kind = _KINDS[name]
            if value is None:
                parts.append(f'"{name}":null')
            elif kind is _BOOL:
                parts.append(f'"{name}":{"true" if value else "false"}')
            elif kind is _TEXT:
                parts.append(f'"{name}":{_json_string(value)}')
            elif kind is _RAW:
                parts.append(f'"{name}":{value}')
            elif kind is _BYTES:  # bytea's hex input form
                parts.append(f'"{name}":"\\\\x{value.hex()}"')
            else:  # a time: ISO 8601 with offset, which timestamptz reads exactly
                parts.append(f'"{name}":"{value.isoformat()}"')
        # Absent: the same text as the instance's context (codec reuses the very string),
        # or none stored (a finished instance's last row: see sql_postgres._ROWS_HISTORY).
        h_context = row["h_context"]
        if h_context is not None and h_context is not row["context"]:
            parts.append(f'"h_context":{h_context}')
        out.append("{" + ",".join(parts) + "}")
    return "[" + ",".join(out) + "]"


def _one_statement(e: EncodedOp) -> bool:
    """Whether a step alone in its group commit runs as one statement. Not with search
    rows: they follow the statement, knowing whether it saved. Not when it readies a task:
    the task benchmark lost 6% of its task steps a second to it, its quicker commits
    leaving more batches of one (bench/NOTES.md), and likely waking the queue's pollers
    for one task at a time where steps that commit together wake them once."""
    return e.op.search is None and e.op.tasks.ready_queue() is None


def _lone_statement(e: EncodedOp) -> str:
    kind = (bool(e.op.timers), bool(e.op.tasks))
    return q.LONE_CREATES[kind] if isinstance(e.op, Create) else q.LONE_SAVES[kind]


def _row_statement(e: EncodedOp) -> str:
    kind = (bool(e.op.timers), bool(e.op.tasks))
    return q.CREATES[kind] if isinstance(e.op, Create) else q.SAVES[kind]


def _work(encoded: list[EncodedOp]) -> tuple[bool, bool]:
    """(any timer work, any task work) of a batch's operations."""
    return (any(e.op.timers for e in encoded), any(e.op.tasks for e in encoded))


def _fields(
    base: tuple[str, ...], kind: tuple[bool, bool], requested: bool = False
) -> tuple[str, ...]:
    return (
        base
        + (_TIMER_FIELDS if kind[0] else ())
        + (_TASK_FIELDS if kind[1] else ())
        + (q.REQUEST_FIELDS if requested else ())
    )


def _key(op: Operation) -> tuple[str, int]:
    target = target_of(op)
    return (target.workflow_id, target.revision)


def _all(encoded: list[EncodedOp], error: StoreError) -> list[InstanceRecord | StoreError]:
    return [error for _ in encoded]


def _unknown_for(
    ops: list[Operation],
    executed: list[InstanceRecord | StoreError],
    written: list[int],
    backend_pid: int | None,
) -> list[InstanceRecord | StoreError]:
    out = list(executed)
    for i in written:
        out[i] = unknown(ops[i], backend_pid)
    return out


def _write_search(conn: Conn, saved: list[Operation]) -> None:
    """The search rows of the instances whose CAS succeeded in this transaction (a failed
    one writes none), replaced where their values changed."""
    changed = [op for op in saved if op.search is not None]
    if not changed:
        return
    replaced = [op.new.workflow_id for op in changed if isinstance(op, Save)]
    if replaced:
        conn.execute(q.DELETE_SEARCH, (replaced,))
    values = [
        {
            "workflow_id": target_of(op).workflow_id,
            "field": v.field,
            "text": v.text,
            "number": v.number,
        }
        for op in changed
        for v in op.search or ()
    ]
    if values:
        conn.execute(q.INSERT_SEARCH, (json.dumps(values, ensure_ascii=False),))


def _row_result(
    op: Operation,
    changed: bool,
    request_free: bool,
    current: dict[str, int],
    tasks: dict[tuple[str, str], tuple[str, str | None]],
) -> InstanceRecord | StoreError:
    target = target_of(op)
    if changed:
        return target
    finish = op.tasks.finish
    task = tasks.get((target.workflow_id, finish.task_id)) if finish else None
    return failures.refused(
        op,
        request_free=request_free,
        actual_revision=current.get(target.workflow_id),
        task=task,
    )


def _wait_backend_gone(conn: Conn, pid: int) -> bool:
    """Wait until the server process that ran the lost transaction has exited.

    Until then its COMMIT may still be in progress and a read could see the pre-state of
    a transaction that commits a moment later.
    """
    deadline = time.monotonic() + _BACKEND_GRACE_S
    while time.monotonic() < deadline:
        if conn.execute(q.BACKEND_ALIVE, (pid,)).fetchone() is None:
            return True
        time.sleep(0.01)
    conn.execute(q.TERMINATE_BACKEND, (pid, _TERMINATE_TIMEOUT_MS))
    return conn.execute(q.BACKEND_ALIVE, (pid,)).fetchone() is None


def _read_back(
    conn: Conn, ops: list[Operation]
) -> tuple[dict[str, int], dict[tuple[str, int], HistoryWitness]]:
    if not ops:
        return {}, {}
    ids = sorted({target_of(op).workflow_id for op in ops})
    revisions: dict[str, int] = dict(conn.execute(q.CURRENT_REVISIONS, (ids,)).fetchall())
    keys = [_key(op) for op in ops]
    found = conn.execute(
        q.READ_BACK_HISTORY, ([k[0] for k in keys], [k[1] for k in keys])
    ).fetchall()
    return revisions, _ROWS.witnesses(found)
