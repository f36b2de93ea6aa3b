"""Migrations: idempotent, safe when several replicas migrate at once, and visible to ping."""

from __future__ import annotations

import json
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from statewrightd.domain import Status
from statewrightd.errors import StorageUnavailable
from statewrightd.store import migrate, open_repository
from statewrightd.store.commands import migrate_command
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord
from statewrightd.store.schema import available, backend_of

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_migrate_is_idempotent(empty_db_url: str) -> None:
    versions = [m.version for m in available(backend_of(empty_db_url))]
    assert versions and versions[0] == 1
    assert migrate(empty_db_url) == versions
    assert migrate(empty_db_url) == []


def test_concurrent_migrators_apply_each_version_once(empty_db_url: str) -> None:
    barrier = threading.Barrier(4, timeout=20)

    def run() -> list[int]:
        barrier.wait()
        return migrate(empty_db_url)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: run(), range(4)))
    applied = [r for r in results if r]
    assert applied == [[m.version for m in available(backend_of(empty_db_url))]]
    repo = open_repository(empty_db_url, migrate=False)
    try:
        repo.ping()
    finally:
        repo.close()


def test_ping_reports_an_unmigrated_database(empty_db_url: str) -> None:
    repo = open_repository(empty_db_url, migrate=False)
    try:
        with pytest.raises(StorageUnavailable) as exc:
            repo.ping()
        assert exc.value.reason == "SCHEMA_NOT_MIGRATED"
    finally:
        repo.close()


def test_migrate_command(empty_db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert migrate_command(empty_db_url) == 0
    assert "applied migrations 1" in capsys.readouterr().out
    assert migrate_command(empty_db_url) == 0
    assert "already at version" in capsys.readouterr().out


def test_migrate_command_rejects_an_unknown_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    assert migrate_command("mysql://nope") == 1
    assert "postgresql://" in capsys.readouterr().err


def _run_sql(url: str, *statements: str) -> list[tuple[object, ...]]:
    """Statements straight on the database; the last one's rows."""
    if url.startswith("postgresql://"):
        with psycopg.connect(url, autocommit=True) as conn:
            for sql in statements[:-1]:
                conn.execute(sql)
            return [tuple(r) for r in conn.execute(statements[-1]).fetchall()]
    lite = sqlite3.connect(Path(url.removeprefix("sqlite:///")), isolation_level=None)
    try:
        for sql in statements[:-1]:
            lite.execute(sql)
        return [tuple(r) for r in lite.execute(statements[-1]).fetchall()]
    finally:
        lite.close()


def test_finished_history_rows_get_their_context_back(empty_db_url: str) -> None:
    """Rows written while a finished instance's last history row kept no context (the
    instance row's was read instead) get it from the instance row: repairs step finished
    instances again, after which the instance row holds another context."""
    if "citus" in empty_db_url:
        pytest.skip("the migration is the PostgreSQL one; Citus runs it as it is")
    migrate(empty_db_url)
    repo = open_repository(empty_db_url, migrate=False)
    record = InstanceRecord(
        workflow_id="old-finished",
        definition="d",
        version=1,
        state="done",
        status=Status.COMPLETED,
        context={"kept": True},
        revision=1,
        error=None,
        create_time=T0,
        update_time=T0,
        expire_time=None,
    )
    history = HistoryRecord(
        "old-finished", 1, None, [], "done", Status.COMPLETED, record.context, None, T0
    )
    try:
        repo.create(Create(record, history))
    finally:
        repo.close()
    version = 18
    rows = _run_sql(
        empty_db_url,
        "UPDATE workflow_history SET context = NULL WHERE workflow_id = 'old-finished'",
        f"DELETE FROM statewright_schema_version WHERE version = {version}",
        "SELECT count(*) FROM workflow_history WHERE context IS NULL",
    )
    assert rows == [(1,)]
    assert migrate(empty_db_url) == [version]
    (stored,) = _run_sql(
        empty_db_url, "SELECT context FROM workflow_history WHERE workflow_id = 'old-finished'"
    )
    context = stored[0] if isinstance(stored[0], dict) else json.loads(str(stored[0]))
    assert context == {"kept": True}
