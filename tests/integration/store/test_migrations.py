"""Migrations: idempotent, safe when several replicas migrate at once, and visible to ping."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from statewrightd.errors import StorageUnavailable
from statewrightd.store import migrate, open_repository
from statewrightd.store.commands import migrate_command
from statewrightd.store.schema import available, backend_of


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
