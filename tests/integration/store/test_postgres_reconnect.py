"""The store finds PostgreSQL back as soon as it is back, however long it was away.

The connection pool retries a lost connection with a doubling wait (1 s, 2 s, 4 s, ...),
so after an outage of some seconds its next attempt can be many seconds past the moment
the database returned. The readiness check must not wait for that attempt: the check that
follows the database's return finds it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from statewrightd.errors import StorageUnavailable
from statewrightd.store.postgres import PostgresRepository
from tests.support.pgproxy import PgProxy

# Outage long enough for the pool's doubling wait to reach 8 s: its attempts come about
# 1, 3 and 7 s in, the next about 15 s in, far more than a check waits after the return.
OUTAGE_S = 8.0
# How long a check waits for a connection (the repository's pool timeout, capped).
CHECK_WAIT_S = 2.0


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[PgProxy]:
    with PgProxy.for_url(postgres_url) as p:
        yield p


@pytest.fixture
def repo(proxy: PgProxy, postgres_url: str) -> Iterator[PostgresRepository]:
    repo = PostgresRepository(
        proxy.url_for(postgres_url),
        pool_size=2,
        pool_timeout=CHECK_WAIT_S,
        connect_timeout=CHECK_WAIT_S,
    )
    yield repo
    repo.close()


def _idle_connections(repo: PostgresRepository, count: int) -> None:
    """Leave ``count`` idle connections in the pool, as a replica has after some load."""
    with ExitStack() as held:
        for _ in range(count):
            held.enter_context(repo._pooled(CHECK_WAIT_S))


def _checks_during_outage(repo: PostgresRepository, seconds: float) -> int:
    """Check every second, as the readiness check does, recording each failure as it
    would; the number of checks that failed."""
    failed = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        with pytest.raises(StorageUnavailable):
            repo.ping()
        repo.set_unreachable(True)
        failed += 1
        time.sleep(max(0.0, min(1.0, until - time.monotonic())))
    return failed


def test_the_first_check_after_an_outage_finds_the_database_back(
    proxy: PgProxy, repo: PostgresRepository
) -> None:
    repo.ping()  # the pool's first connection is made
    proxy.go_dark()
    assert _checks_during_outage(repo, OUTAGE_S) >= 3
    proxy.heal()

    repo.ping()  # the first check after the return, not one a pool retry later
    repo.set_unreachable(False)
    assert repo.list_definitions() == []  # and the store serves again


def test_idle_connections_from_before_a_short_outage_do_not_delay_the_return(
    proxy: PgProxy, postgres_url: str
) -> None:
    # A quick restart: the readiness check found the database down once, and the pool
    # still holds idle connections from before it, all dead. Checking them one by one,
    # with the pool's growing pause between two, would outlast the check's wait.
    repo = PostgresRepository(
        proxy.url_for(postgres_url),
        pool_size=6,
        pool_timeout=CHECK_WAIT_S,
        connect_timeout=CHECK_WAIT_S,
    )
    try:
        _idle_connections(repo, 6)
        proxy.go_dark()
        assert _checks_during_outage(repo, 0.5) == 1
        proxy.heal()

        repo.ping()
        repo.set_unreachable(False)
        assert repo.list_definitions() == []
    finally:
        repo.close()


def test_a_check_while_the_database_stays_away_keeps_failing(
    proxy: PgProxy, repo: PostgresRepository
) -> None:
    repo.ping()
    proxy.go_dark()
    assert _checks_during_outage(repo, 3.0) >= 2
    with pytest.raises(StorageUnavailable):
        repo.ping()
    proxy.heal()
    repo.ping()
