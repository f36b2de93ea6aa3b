"""The PostgreSQL store's pooled connections, and how they come back after an outage.

psycopg_pool's ConnectionPool retries a lost connection after 1 s, 2 s, 4 s, ...: after an
outage of a minute its next attempt may come a minute after the database returned, and
until then the server stays not ready. So while the database is known down, the check
that finds it back (``pooled(probe=True)``) first tries a connection of its own, and once
one succeeds a new pool replaces the old one and connects at once.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg.errors
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

_log = logging.getLogger(__name__)

Conn = psycopg.Connection[tuple[Any, ...]]

# A deadlock or serialization failure rolls the whole transaction back: the database
# answered, and the connection is fine; a write is simply run again.
RETRYABLE = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
# A pooled connection returned this recently is handed out again without a liveness check.
_RECENT_S = 1.0
# A call waiting for a pooled connection looks this often whether the database has been
# found down meanwhile (``unreachable``): then it gives up instead of waiting on.
_WAIT_SLICE_S = 0.25
# The probe's own connection (libpq's shortest connect timeout), and how long the old
# pool's threads get to stop once it is replaced.
_PROBE_CONNECT_S = 2
_OLD_POOL_CLOSE_S = 1.0


class RenewingPool:
    """A ConnectionPool that a probe renews once the database answers again.

    ``configure`` sets up each new connection. ``troubles``: exceptions besides the
    driver's that mean a connection failed in use."""

    def __init__(
        self,
        url: str,
        *,
        size: int,
        connect_timeout: float,
        timeout: float,
        autocommit: bool,
        configure: Callable[[Conn], None],
        troubles: tuple[type[Exception], ...] = (),
    ) -> None:
        self._url = url
        self._size = size
        self._connect_timeout = connect_timeout
        self._timeout = timeout
        self._autocommit = autocommit
        self._set_up = configure
        self._troubles: tuple[type[Exception], ...] = (
            PoolTimeout,
            psycopg.OperationalError,
            psycopg.InterfaceError,
            *troubles,
        )
        # Server processes behind this pool's connections: this replica's own NOTIFY hints
        # come from them, and its watchers already heard of those steps locally.
        self.backend_pids: set[int] = set()
        # Set while the readiness check finds the database down: calls then fail at once.
        self.unreachable = False
        self._last_returned: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()
        self._trouble_at = 0.0
        self._answered_at = time.monotonic()
        self._closed = False
        self._pool = self._new_pool()

    def _new_pool(self) -> ConnectionPool[Conn]:
        pool: ConnectionPool[Conn] = ConnectionPool(
            self._url,
            min_size=1,
            max_size=max(1, self._size),
            kwargs={"connect_timeout": int(self._connect_timeout), "autocommit": self._autocommit},
            configure=self._configure,
            check=self._check,
            timeout=self._timeout,
            name="statewright-store",
            open=False,
        )
        # Not waiting: the service starts (and reports not-ready via ping) while the
        # database is still coming up.
        pool.open(wait=False)
        return pool

    def _configure(self, conn: Conn) -> None:
        self._set_up(conn)
        self.backend_pids.add(conn.info.backend_pid)

    def _check(self, conn: Conn) -> None:
        # After a database outage the idle connections are dead; checking one as it is
        # handed out (an empty round trip) keeps the outage from failing one more request
        # per pooled connection once the database is back. A connection that came back
        # from a successful use a moment ago is not checked again: under load that round
        # trip would be paid once per group-commit batch. ``_trouble_at`` (see pooled)
        # voids every mark made before a connection failed.
        last = self._last_returned.get(conn)
        if last is None or last < self._trouble_at or time.monotonic() - last > _RECENT_S:
            ConnectionPool.check_connection(conn)

    def answered_at(self) -> float:
        return self._answered_at

    def _renew_if_back(self) -> None:
        # Not when the pool answered since its last trouble (the database is up but not
        # ready, say a schema behind): its connections are fine. Its idle connections
        # from before an outage are not: checked one by one, with the pool's growing pause
        # between two, they could each keep the server not ready for another check.
        if self._closed or self._answered_at > self._trouble_at:
            return
        try:
            psycopg.connect(self._url, connect_timeout=_PROBE_CONNECT_S).close()
        except psycopg.Error:
            return
        _log.info("the database answers again: renewing the connection pool")
        # The old pool's connections are gone; their server processes' ids could be
        # given to other replicas' connections, whose hints would then be ignored.
        self.backend_pids.clear()
        old, self._pool = self._pool, self._new_pool()
        old.close(timeout=_OLD_POOL_CLOSE_S)
        if self._closed:  # closed meanwhile: the new pool goes too
            self._pool.close(timeout=_OLD_POOL_CLOSE_S)

    def _getconn(self, timeout: float, probe: bool) -> tuple[ConnectionPool[Conn], Conn]:
        """A connection within ``timeout``, with the pool it goes back to; at once
        PoolTimeout while the database is known down, unless this is the ``probe`` that
        finds it back."""
        if probe:
            if self.unreachable:
                self._renew_if_back()
            pool = self._pool
            return pool, pool.getconn(timeout=timeout)
        deadline = time.monotonic() + timeout
        while True:
            if self.unreachable:
                raise PoolTimeout("the database is known to be down")
            left = deadline - time.monotonic()
            if left <= 0:
                raise PoolTimeout(f"no connection came within {timeout:g}s")
            pool = self._pool
            try:
                return pool, pool.getconn(timeout=min(left, _WAIT_SLICE_S))
            except PoolTimeout:
                continue
            except PoolClosed:
                if pool is self._pool:
                    raise  # closing
                continue  # renewed meanwhile: ask the new pool

    @contextmanager
    def pooled(self, timeout: float, *, probe: bool = False) -> Iterator[Conn]:
        """A pooled connection, marked as alive when the block using it succeeds.

        The mark is what lets ``_check`` skip the liveness round trip. It is set here, not
        in the pool's ``reset`` callback: with that callback the pool returns every
        connection through one of its worker threads, a wake-up of another thread per
        transaction.
        """
        try:
            pool, conn = self._getconn(timeout, probe)
            try:
                with conn:  # commits when the block succeeds, as the pool's own would
                    yield conn
                    self._last_returned[conn] = self._answered_at = time.monotonic()
            finally:
                pool.putconn(conn)  # a renewed pool's old one closes it
        except RETRYABLE:
            raise  # the database answered: the connection is fine
        except self._troubles:
            # Once any connection has failed, every one returned before that is suspect.
            self._trouble_at = time.monotonic()
            raise

    def close(self) -> None:
        self._closed = True
        self._pool.close()
