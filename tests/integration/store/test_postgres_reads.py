"""PostgreSQL runs a read, and a write of one statement, as its own statement outside a
transaction block, and hands the connection back to the pool in transactions: a writer
of several statements never gets one that commits each statement as it runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from statewrightd.errors import RecordNotFound
from statewrightd.store import open_repository
from statewrightd.store.postgres import PostgresRepository


def _one_connection(url: str) -> PostgresRepository:
    repo = open_repository(url, migrate=False, pool_size=1)
    assert isinstance(repo, PostgresRepository)
    return repo


def _in_transactions(repo: PostgresRepository) -> None:
    """The pool's connection runs statements in a transaction block again."""
    with repo._pooled(5.0) as conn:
        assert conn.autocommit is False
        conn.execute("SELECT 1")
        assert conn.info.transaction_status is psycopg.pq.TransactionStatus.INTRANS


def test_a_read_hands_its_connection_back_in_transactions(postgres_url: str) -> None:
    repo = _one_connection(postgres_url)
    try:
        with pytest.raises(RecordNotFound):
            repo.load("absent")
        with pytest.raises(RecordNotFound):
            repo.load_whole("absent")
        assert repo.open_tasks(["absent"]) == {}
        _in_transactions(repo)
    finally:
        repo.close()


def test_a_read_that_fails_hands_its_connection_back_in_transactions_too(
    postgres_url: str,
) -> None:
    repo = _one_connection(postgres_url)
    try:
        with pytest.raises(psycopg.errors.UndefinedTable):
            repo._read_all("SELECT * FROM no_such_table")
        with repo._pooled(5.0) as conn:
            assert conn.autocommit is False
        with pytest.raises(RecordNotFound):
            repo.load("absent")  # and the connection still serves
    finally:
        repo.close()


def test_a_write_of_one_statement_runs_alone_and_hands_its_connection_back_in_transactions(
    postgres_url: str,
) -> None:
    repo = _one_connection(postgres_url)
    now = datetime.now(UTC)
    try:
        with repo._writing_one() as conn:
            conn.execute("SELECT 1")
            # No BEGIN went before it, so no COMMIT comes after.
            assert conn.info.transaction_status is psycopg.pq.TransactionStatus.IDLE
        assert repo.claim_timers(now, now + timedelta(seconds=30), 10) == []
        error = {"type": "X", "message": "", "details": {}}
        assert repo.retry_task("absent", "1", "t", now=now, available=now, error=error) is None
        with pytest.raises(psycopg.errors.UndefinedTable), repo._writing_one() as conn:
            conn.execute("UPDATE no_such_table SET x = 1")
        _in_transactions(repo)
    finally:
        repo.close()
