"""PostgreSQL runs a read as its own statement, outside a transaction, and hands the
connection back to the pool in transactions: a writer never gets one that commits each
statement as it runs."""

from __future__ import annotations

import psycopg
import pytest

from statewrightd.errors import RecordNotFound
from statewrightd.store import open_repository
from statewrightd.store.postgres import PostgresRepository


def _one_connection(url: str) -> PostgresRepository:
    repo = open_repository(url, migrate=False, pool_size=1)
    assert isinstance(repo, PostgresRepository)
    return repo


def test_a_read_hands_its_connection_back_in_transactions(postgres_url: str) -> None:
    repo = _one_connection(postgres_url)
    try:
        with pytest.raises(RecordNotFound):
            repo.load("absent")
        with pytest.raises(RecordNotFound):
            repo.load_whole("absent")
        assert repo.open_tasks(["absent"]) == {}
        with repo._pooled(5.0) as conn:
            assert conn.autocommit is False
            conn.execute("SELECT 1")
            assert conn.info.transaction_status is psycopg.pq.TransactionStatus.INTRANS
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
