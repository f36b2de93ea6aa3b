"""SQLite backend (standard library, WAL): the embedded default for ``statewrightd dev``.

One connection guarded by a lock: SQLite has a single writer anyway, and one connection
keeps transactions strictly serial inside the process. ``BEGIN IMMEDIATE`` takes the
write lock up front so a second process sharing the file waits (busy_timeout) instead
of failing half-way through a transaction.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from statewrightd.errors import (
    Conflict,
    InvalidArgument,
    RecordExists,
    RecordNotFound,
    SerializationError,
    StorageUnavailable,
    StoreError,
)
from statewrightd.store.batching import BatchWriter
from statewrightd.store.codec import (
    EncodedOp,
    check_status_filter,
    check_text,
    check_time,
    clamp_page_size,
    decode_page_token,
    definition_not_found,
    encode_page_token,
    from_micros,
    loads,
    same_definition_or_raise,
    to_micros,
)
from statewrightd.store.outcomes import HistoryWitness, resolve_each
from statewrightd.store.records import (
    Create,
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    Operation,
    Page,
    RequestRecord,
    Save,
    target_of,
)
from statewrightd.store.schema import connect_sqlite, latest_version, sqlite_schema_version

_INSTANCE_COLUMNS = (
    "workflow_id, definition, version, state, status, context, revision, error,"
    " create_time, update_time"
)
_HISTORY_COLUMNS = "workflow_id, revision, event, transitions, state, status, context, error, time"
_REQUEST_COLUMNS = "request_id, workflow_id, method, fingerprint, response, create_time"
_DEFINITION_COLUMNS = "name, version, source, digest, source_name, create_time"


def _instance(row: Sequence[Any]) -> InstanceRecord:
    return InstanceRecord(
        workflow_id=row[0],
        definition=row[1],
        version=row[2],
        state=row[3],
        status=row[4],
        context=loads(row[5]),
        revision=row[6],
        error=None if row[7] is None else loads(row[7]),
        create_time=from_micros(row[8]),
        update_time=from_micros(row[9]),
    )


def _history(row: Sequence[Any]) -> HistoryRecord:
    return HistoryRecord(
        workflow_id=row[0],
        revision=row[1],
        event=row[2],
        transitions=loads(row[3]),
        state=row[4],
        status=row[5],
        context=loads(row[6]),
        error=None if row[7] is None else loads(row[7]),
        time=from_micros(row[8]),
    )


def _definition(row: Sequence[Any]) -> DefinitionRecord:
    return DefinitionRecord(
        name=row[0],
        version=row[1],
        source=row[2],
        digest=row[3],
        source_name=row[4],
        create_time=from_micros(row[5]),
    )


def _micros(params: dict[str, Any], *names: str) -> dict[str, Any]:
    out = dict(params)
    for name in names:
        if out[name] is not None:
            out[name] = to_micros(out[name])
    return out


class SqliteRepository(BatchWriter):
    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._closed = False
        self._schema_version = latest_version("sqlite")
        try:
            self._conn = connect_sqlite(path)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"cannot open SQLite database {path!r}: {exc}") from exc

    @contextmanager
    def _locked(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._closed:
                raise StorageUnavailable("the repository is closed", reason="STORE_CLOSED")
            try:
                yield self._conn
            except sqlite3.OperationalError as exc:
                raise StorageUnavailable(f"SQLite unavailable: {exc}") from exc

    @contextmanager
    def _write_transaction(self) -> Iterator[sqlite3.Connection]:
        with self._locked() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # -- reads -----------------------------------------------------------------------

    def load(self, workflow_id: str) -> InstanceRecord:
        with self._locked() as conn:
            row = conn.execute(
                f"SELECT {_INSTANCE_COLUMNS} FROM workflow_instances WHERE workflow_id = ?",
                (workflow_id,),
            ).fetchone()
        if row is None:
            raise RecordNotFound(
                f"workflow {workflow_id!r} not found", metadata={"workflow_id": workflow_id}
            )
        return _instance(row)

    def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]:
        if limit <= 0:
            raise InvalidArgument("limit must be positive", reason="INVALID_LIMIT")
        with self._locked() as conn:
            rows = conn.execute(
                f"SELECT {_HISTORY_COLUMNS} FROM workflow_history"
                " WHERE workflow_id = ? AND revision > ? ORDER BY revision LIMIT ?",
                (workflow_id, after_revision, limit),
            ).fetchall()
        return [_history(r) for r in rows]

    def lookup_request(self, request_id: str) -> RequestRecord | None:
        with self._locked() as conn:
            row = conn.execute(
                f"SELECT {_REQUEST_COLUMNS} FROM workflow_requests WHERE request_id = ?",
                (request_id,),
            ).fetchone()
        if row is None:
            return None
        return RequestRecord(
            request_id=row[0],
            workflow_id=row[1],
            method=row[2],
            fingerprint=row[3],
            response=bytes(row[4]),
            create_time=from_micros(row[5]),
        )

    def purge_requests(self, older_than: datetime) -> int:
        cutoff = to_micros(check_time(older_than, "older_than"))
        with self._write_transaction() as conn:
            return conn.execute(
                "DELETE FROM workflow_requests WHERE create_time < ?", (cutoff,)
            ).rowcount

    # -- definitions -----------------------------------------------------------------

    def put_definition(self, rec: DefinitionRecord) -> DefinitionRecord:
        if isinstance(rec.version, bool) or not isinstance(rec.version, int) or rec.version < 1:
            raise SerializationError("definition version must be a positive integer")
        params = (
            check_text(rec.name, "definition name"),
            rec.version,
            check_text(rec.source, "definition source"),
            check_text(rec.digest, "definition digest"),
            check_text(rec.source_name, "definition source_name"),
            to_micros(check_time(rec.create_time, "definition create_time")),
        )
        with self._write_transaction() as conn:
            conn.execute(
                f"INSERT INTO workflow_definitions ({_DEFINITION_COLUMNS})"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (name, version) DO NOTHING",
                params,
            )
            row = conn.execute(
                f"SELECT {_DEFINITION_COLUMNS} FROM workflow_definitions"
                " WHERE name = ? AND version = ?",
                (rec.name, rec.version),
            ).fetchone()
        return same_definition_or_raise(_definition(row), rec)

    def get_definition(self, name: str, version: int | None = None) -> DefinitionRecord:
        with self._locked() as conn:
            if version is None:
                row = conn.execute(
                    f"SELECT {_DEFINITION_COLUMNS} FROM workflow_definitions"
                    " WHERE name = ? ORDER BY version DESC LIMIT 1",
                    (name,),
                ).fetchone()
            else:
                row = conn.execute(
                    f"SELECT {_DEFINITION_COLUMNS} FROM workflow_definitions"
                    " WHERE name = ? AND version = ?",
                    (name, version),
                ).fetchone()
        if row is None:
            raise definition_not_found(name, version)
        return _definition(row)

    def list_definitions(self) -> list[DefinitionRecord]:
        with self._locked() as conn:
            rows = conn.execute(
                f"SELECT {_DEFINITION_COLUMNS} FROM workflow_definitions ORDER BY name, version"
            ).fetchall()
        return [_definition(r) for r in rows]

    # -- writes ----------------------------------------------------------------------

    def _write(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        try:
            with self._write_transaction() as conn:
                return [_apply_one(conn, e) for e in encoded]
        except StorageUnavailable as exc:
            return [exc for _ in encoded]

    def resolve_outcome(
        self, ops: Sequence[Operation], *, backend_pids: Sequence[int] = ()
    ) -> list[InstanceRecord | StoreError]:
        # A local COMMIT cannot be lost in transit, but the runtime may still re-check.
        with self._locked() as conn:
            revisions: dict[str, int] = {}
            witnesses: dict[tuple[str, int], HistoryWitness] = {}
            for op in ops:
                target = target_of(op)
                row = conn.execute(
                    "SELECT revision FROM workflow_instances WHERE workflow_id = ?",
                    (target.workflow_id,),
                ).fetchone()
                if row is not None:
                    revisions[target.workflow_id] = row[0]
                h = conn.execute(
                    "SELECT event, state, status, time FROM workflow_history"
                    " WHERE workflow_id = ? AND revision = ?",
                    (target.workflow_id, target.revision),
                ).fetchone()
                if h is not None:
                    witnesses[(target.workflow_id, target.revision)] = HistoryWitness(
                        event=h[0], state=h[1], status=h[2], time=from_micros(h[3])
                    )
        return resolve_each(ops, revisions, witnesses)

    # -- lifecycle -------------------------------------------------------------------

    def ping(self) -> None:
        with self._locked() as conn:
            version = sqlite_schema_version(conn)
        if version < self._schema_version:
            raise StorageUnavailable(
                f"database schema is at version {version}, this server needs "
                f"{self._schema_version}; run `statewrightd migrate`",
                reason="SCHEMA_NOT_MIGRATED",
            )

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

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
        where = ["seq > ?"]
        params: list[Any] = [after]
        if definition is not None:
            where.append("definition = ?")
            params.append(definition)
        if status is not None:
            where.append("status = ?")
            params.append(status)
        params.append(size + 1)
        with self._locked() as conn:
            rows = conn.execute(
                f"SELECT seq, {_INSTANCE_COLUMNS} FROM workflow_instances"
                f" WHERE {' AND '.join(where)} ORDER BY seq LIMIT ?",
                params,
            ).fetchall()
        more = len(rows) > size
        rows = rows[:size]
        token = encode_page_token(rows[-1][0], definition, status) if more else ""
        return Page(items=[_instance(r[1:]) for r in rows], next_page_token=token)


def _apply_one(conn: sqlite3.Connection, e: EncodedOp) -> InstanceRecord | StoreError:
    """One row's CAS inside the batch transaction; a failure here writes nothing."""
    op = e.op
    p = _micros(e.params, "create_time", "update_time", "h_time", "r_time")
    target = target_of(op)
    wid = target.workflow_id
    rid = p["request_id"]
    if (
        rid is not None
        and conn.execute("SELECT 1 FROM workflow_requests WHERE request_id = ?", (rid,)).fetchone()
    ):
        return RecordExists(
            f"request id {rid!r} was already used",
            reason="REQUEST_EXISTS",
            metadata={"request_id": rid, "workflow_id": wid},
        )
    if isinstance(op, Create):
        changed = conn.execute(
            f"INSERT INTO workflow_instances ({_INSTANCE_COLUMNS})"
            " VALUES (:workflow_id, :definition, :version, :state, :status, :context,"
            " :revision, :error, :create_time, :update_time)"
            " ON CONFLICT (workflow_id) DO NOTHING",
            p,
        ).rowcount
        if not changed:
            return RecordExists(f"workflow {wid!r} already exists", metadata={"workflow_id": wid})
    else:
        assert isinstance(op, Save)
        changed = conn.execute(
            "UPDATE workflow_instances SET state = :state, status = :status,"
            " context = :context, revision = :revision, error = :error,"
            " update_time = :update_time"
            " WHERE workflow_id = :workflow_id AND revision = :expected",
            p,
        ).rowcount
        if not changed:
            row = conn.execute(
                "SELECT revision FROM workflow_instances WHERE workflow_id = ?", (wid,)
            ).fetchone()
            if row is None:
                return RecordNotFound(f"workflow {wid!r} not found", metadata={"workflow_id": wid})
            return Conflict(
                f"workflow {wid!r} is at revision {row[0]}, not {op.expected_revision}",
                actual_revision=row[0],
                metadata={"workflow_id": wid, "expected_revision": op.expected_revision},
            )
    conn.execute(
        f"INSERT INTO workflow_history ({_HISTORY_COLUMNS})"
        " VALUES (:workflow_id, :revision, :h_event, :h_transitions, :h_state, :h_status,"
        " :h_context, :h_error, :h_time)",
        p,
    )
    if rid is not None:
        conn.execute(
            f"INSERT INTO workflow_requests ({_REQUEST_COLUMNS})"
            " VALUES (:request_id, :workflow_id, :r_method, :r_fingerprint, :r_response,"
            " :r_time)",
            p,
        )
    return target
