"""What a direct write (a task's retry, a heartbeat, a schedule's record) tells its caller
when the connection fails: surely not applied, or perhaps applied (OUTCOME_UNKNOWN)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from statewrightd import errors
from statewrightd.store.citus import CitusRepository
from statewrightd.store.postgres import PostgresRepository


@dataclass
class Connection:
    broken: bool


class AutocommitRepository(PostgresRepository):
    AUTOCOMMIT = True  # as on Citus: each statement commits as it runs


def repository(cls: type[PostgresRepository], conn: Connection) -> PostgresRepository:
    repo = object.__new__(cls)  # no pool: the connection is this test's
    repo._pool_timeout = 1.0

    @contextmanager
    def pooled(timeout: float, probe: bool = False) -> Iterator[Any]:
        yield conn

    repo._pooled = pooled  # type: ignore[method-assign]
    return repo


def write(repo: PostgresRepository, failure: Exception) -> None:
    with repo._writing():
        raise failure


def test_a_connection_lost_while_an_autocommit_statement_ran_may_have_committed() -> None:
    repo = repository(AutocommitRepository, Connection(broken=True))
    lost = psycopg.OperationalError("terminating connection due to administrator command")
    with pytest.raises(errors.OutcomeUnknown):
        write(repo, lost)


def test_a_statement_refused_on_a_live_connection_was_not_applied() -> None:
    repo = repository(AutocommitRepository, Connection(broken=False))
    refused = psycopg.OperationalError("connection to the remote node failed: refused")
    with pytest.raises(errors.StorageUnavailable):
        write(repo, refused)


def test_in_a_transaction_a_connection_lost_before_commit_applied_nothing() -> None:
    repo = repository(PostgresRepository, Connection(broken=True))
    with pytest.raises(errors.StorageUnavailable) as raised:
        write(repo, psycopg.OperationalError("server closed the connection unexpectedly"))
    assert not isinstance(raised.value, errors.OutcomeUnknown)


@pytest.mark.parametrize(
    ("message", "unknown"),
    [
        ("failure on connection marked as essential: 127.0.0.1:5433", True),
        (
            "connection to the remote node postgres@127.0.0.1:5433 failed with the following"
            " error: Connection refused",
            False,
        ),
    ],
)
def test_on_citus_only_a_node_never_reached_surely_applied_nothing(
    message: str, unknown: bool
) -> None:
    repo = repository(CitusRepository, Connection(broken=False))
    with pytest.raises((errors.StorageUnavailable, errors.OutcomeUnknown)) as raised:
        write(repo, psycopg.InternalError(message))
    assert isinstance(raised.value, errors.OutcomeUnknown) is unknown
