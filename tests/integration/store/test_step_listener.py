"""The LISTEN thread listens only while this replica has watchers, on a real PostgreSQL."""

from __future__ import annotations

import queue
import threading

import psycopg

from statewrightd.store import sql_postgres as q
from statewrightd.store.notifications import Hint, step_listener


def _listening(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'LISTEN %%'"
            " AND pid <> pg_backend_pid()"
        ).fetchone()
    return bool(row and row[0])


def _notify(url: str, payload: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(q.NOTIFY_STEPS, (q.STEPS_CHANNEL, payload))


def test_hints_flow_only_while_watchers_want_them(empty_postgres_url: str) -> None:
    url = empty_postgres_url
    wanted = threading.Event()
    hints: queue.Queue[list[Hint]] = queue.Queue()
    connected: queue.Queue[bool] = queue.Queue()
    listener = step_listener(
        url, hints.put, on_connected=lambda: connected.put(True), wanted=wanted.is_set
    )
    listener.POLL_SECONDS = 0.05
    listener.LINGER_SECONDS = 0.2
    listener.start()
    try:
        # No watchers: no LISTEN, so NOTIFYs cost this replica nothing.
        _notify(url, "early:1")
        assert not listener.connected.wait(0.3)
        assert not _listening(url)

        wanted.set()
        listener.wake()
        # Listening (re)started: the watchers are told to re-read history, which covers
        # "early:1" and anything else sent while nobody listened.
        assert connected.get(timeout=5)
        assert listener.connected.wait(5)
        _notify(url, "w1:2,w2:7")
        assert hints.get(timeout=5) == [("w1", 2), ("w2", 7)]

        # The last watcher left: after the linger time the replica stops listening.
        wanted.clear()
        for _ in range(100):
            if not listener.connected.is_set():
                break
            threading.Event().wait(0.05)
        assert not listener.connected.is_set()
        _notify(url, "late:3")

        # A new watcher: listening again, with another re-read, and only new hints.
        wanted.set()
        listener.wake()
        assert connected.get(timeout=5)
        _notify(url, "w3:4")
        assert hints.get(timeout=5) == [("w3", 4)]
        assert hints.empty()
    finally:
        listener.stop()
