"""Numbered SQL migrations (``migrations/<backend>/NNNN_name.sql``) and the version table.

Each pending file is applied in one transaction together with its version row, so a
migration is all or nothing. Two replicas starting at once serialize on a PostgreSQL
advisory lock (SQLite: on ``BEGIN IMMEDIATE``); the loser finds nothing left to apply.
On a Citus coordinator the same run then distributes the schema (see citus_layout); the
lock is the coordinator's, which every migrator connects to.
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import psycopg
from psycopg import sql

from statewrightd.errors import InvalidArgument, StorageUnavailable, StoreError
from statewrightd.reasons import Reason
from statewrightd.store import citus_layout
from statewrightd.store.codec import to_micros

# An arbitrary constant that names "statewright schema migration" among advisory locks.
_ADVISORY_LOCK_KEY = 0x5357_4D49_4752


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def available(backend: str) -> list[Migration]:
    folder = resources.files("statewrightd.store").joinpath("migrations", backend)
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _FILE.match(entry.name)
        if match:
            found.append(Migration(int(match[1]), match[2], entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise StoreError(f"duplicate migration versions for {backend}: {versions}")
    return found


def latest_version(backend: str) -> int:
    migrations = available(backend)
    return migrations[-1].version if migrations else 0


def backend_of(url: str) -> str:
    if url.startswith(("postgresql://", "postgres://")):
        return "postgres"
    if url.startswith("sqlite:///"):
        return "sqlite"
    raise InvalidArgument(
        "database URL must start with postgresql:// or sqlite:///",
        reason=Reason.INVALID_DATABASE_URL,
    )


def sqlite_path(url: str) -> str:
    # sqlite:///relative.db -> "relative.db"; sqlite:////abs/path.db -> "/abs/path.db".
    return url.removeprefix("sqlite:///")


@dataclass(frozen=True, slots=True)
class Migrated:
    """What one migrator run did."""

    versions: list[int]  # the migrations it applied
    citus: bool = False  # the database is a Citus coordinator
    distributed: list[str] = field(default_factory=list)  # tables it distributed (Citus)
    citus_versions: list[int] = field(default_factory=list)  # Citus migrations it applied


def migrate(url: str) -> list[int]:
    """Apply every pending migration; return the versions applied by this call."""
    return migrate_database(url).versions


def migrate_database(url: str) -> Migrated:
    """Apply every pending migration (and, on a Citus coordinator, distribute the schema);
    say what this call did."""
    backend = backend_of(url)
    if backend == "postgres":
        return _migrate_postgres(url)
    return Migrated(_migrate_sqlite(sqlite_path(url)))


def is_citus(url: str) -> bool:
    """Whether ``url`` (a PostgreSQL URL) names a Citus coordinator; raises StoreError
    when it is Citus that Statewright cannot use as it is (see citus_layout)."""
    try:
        with psycopg.connect(url, connect_timeout=10, autocommit=True) as conn:
            return citus_layout.is_citus(conn)
    except psycopg.OperationalError as exc:
        raise StorageUnavailable(f"database unavailable: {exc}") from exc


def _version_table(integer: str, text: str, time: str) -> str:
    """The table of applied migrations, in a backend's column types."""
    return (
        "CREATE TABLE IF NOT EXISTS statewright_schema_version ("
        f"version {integer} PRIMARY KEY, name {text} NOT NULL, applied_at {time} NOT NULL)"
    )


_PG_VERSION_TABLE = _version_table("integer", "text", "timestamptz")


def _apply_postgres(
    conn: psycopg.Connection[Any], migrations: list[Migration], table: str
) -> list[int]:
    """Apply the migrations not yet recorded in ``table``, each in a transaction with its
    row there, under the migration lock."""
    applied: list[int] = []
    recorded = sql.SQL("SELECT 1 FROM {} WHERE version = %s").format(sql.Identifier(table))
    record = sql.SQL("INSERT INTO {} (version, name, applied_at) VALUES (%s, %s, %s)").format(
        sql.Identifier(table)
    )
    for migration in migrations:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_ADVISORY_LOCK_KEY,))
            if conn.execute(recorded, (migration.version,)).fetchone() is not None:
                continue
            conn.execute(migration.sql.encode())
            conn.execute(record, (migration.version, migration.name, datetime.now(UTC)))
            applied.append(migration.version)
    return applied


def _migrate_postgres(url: str) -> Migrated:
    try:
        with psycopg.connect(url, connect_timeout=10) as conn:
            # A Citus database that cannot be used is refused before anything changes.
            citus = citus_layout.is_citus(conn)
            conn.commit()
            # Held for the whole run, released when the connection closes: a second
            # migrator waits for the first to finish and then finds nothing to apply,
            # instead of the two taking turns version by version.
            conn.execute("SELECT pg_advisory_lock(%s)", (_ADVISORY_LOCK_KEY,))
            conn.commit()
            with conn.transaction():
                # Transaction-scoped: released by COMMIT/ROLLBACK even if we crash midway.
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_ADVISORY_LOCK_KEY,))
                conn.execute(_PG_VERSION_TABLE)
            applied = _apply_postgres(conn, available("postgres"), "statewright_schema_version")
            if not citus:
                return Migrated(applied)
            # Still under the session lock: one migrator distributes, the others find
            # every table distributed.
            distributed = citus_layout.distribute(conn)
            with conn.transaction():
                conn.execute(citus_layout.VERSION_TABLE)
            citus_applied = _apply_postgres(
                conn, available("citus"), citus_layout.VERSION_TABLE_NAME
            )
            return Migrated(applied, True, distributed, citus_applied)
    except psycopg.OperationalError as exc:
        raise StorageUnavailable(f"cannot migrate the database: {exc}") from exc


def postgres_schema_version(conn: psycopg.Connection[Any]) -> int:
    exists = conn.execute("SELECT to_regclass('statewright_schema_version') IS NOT NULL").fetchone()
    if exists is None or not exists[0]:
        return 0
    row = conn.execute(
        "SELECT coalesce(max(version), 0) FROM statewright_schema_version"
    ).fetchone()
    return int(row[0]) if row else 0


_SQLITE_VERSION_TABLE = _version_table("INTEGER", "TEXT", "INTEGER")


def sqlite_statements(sql: str) -> list[str]:
    """Split a script into statements (``executescript`` would commit on its own)."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        if not buffer and (not line.strip() or line.lstrip().startswith("--")):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    if buffer.strip():
        raise StoreError("migration ends with an incomplete statement")
    return statements


def connect_sqlite(path: str) -> sqlite3.Connection:
    # isolation_level=None: we issue BEGIN/COMMIT ourselves so transactions are explicit.
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    _enable_wal(conn)
    conn.execute("PRAGMA foreign_keys=ON")
    # FULL: in WAL mode NORMAL may lose the last commits on power loss; acknowledged
    # steps must be durable, the same promise synchronous_commit=on gives on PostgreSQL.
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    # Switching a new file to WAL needs a moment of exclusive access, and SQLite answers
    # "database is locked" at once rather than waiting on its busy timeout when several
    # processes (replicas starting together) open the file at the same time.
    for attempt in range(100):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == 99:
                raise
            time.sleep(0.05)


def _migrate_sqlite(path: str) -> list[int]:
    applied: list[int] = []
    try:
        conn = connect_sqlite(path)
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot open SQLite database {path!r}: {exc}") from exc
    try:
        # One write transaction for every pending migration: a second migrator waits for
        # the first to finish (busy_timeout) and then finds nothing to apply, and a failed
        # migration leaves the schema as it was.
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(_SQLITE_VERSION_TABLE)
            for migration in available("sqlite"):
                row = conn.execute(
                    "SELECT 1 FROM statewright_schema_version WHERE version = ?",
                    (migration.version,),
                ).fetchone()
                if row is None:
                    for statement in sqlite_statements(migration.sql):
                        conn.execute(statement)
                    conn.execute(
                        "INSERT INTO statewright_schema_version VALUES (?, ?, ?)",
                        (migration.version, migration.name, to_micros(datetime.now(UTC))),
                    )
                    applied.append(migration.version)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise StorageUnavailable(f"cannot migrate SQLite database {path!r}: {exc}") from exc
    finally:
        conn.close()
    return applied


def sqlite_schema_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'statewright_schema_version'"
    ).fetchone()
    if exists is None:
        return 0
    row = conn.execute(
        "SELECT coalesce(max(version), 0) FROM statewright_schema_version"
    ).fetchone()
    return int(row[0]) if row else 0
