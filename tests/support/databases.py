"""Throwaway databases for end-to-end tests, and direct reads of what a server stored.

Each PostgreSQL database is created on the server that ``scripts/with-postgres`` runs and
dropped at the end of the session; the statewrightd under test migrates it at start.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

ENV = "STATEWRIGHT_TEST_POSTGRES_URL"


def postgres_admin_url() -> str:
    url = os.environ.get(ENV)
    if not url:
        raise RuntimeError(
            f"{ENV} is not set: run the tests through scripts/with-postgres (or `make test`), "
            "which starts a private PostgreSQL"
        )
    return url


def with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


class PostgresDatabases:
    """Creates empty databases on demand; drops them in the background once released
    (``drop_soon``), and the rest on ``drop_all``. Dropping costs the database server a
    moment each, which a background thread overlaps with the tests still running."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self._names: list[str] = []
        self._lock = threading.Lock()
        self._dropper = ThreadPoolExecutor(1, thread_name_prefix="drop-database")

    def create(self) -> str:
        name = f"sw_e2e_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            # Identifiers cannot be parameters; the name is ours and strictly [a-z0-9_].
            conn.execute(f"CREATE DATABASE {name}".encode())
        with self._lock:
            self._names.append(name)
        return with_database(self.admin_url, name)

    def drop_soon(self, url: str) -> None:
        name = urlsplit(url).path.lstrip("/")
        with self._lock:
            if name not in self._names:
                return
            self._names.remove(name)
        self._dropper.submit(self._drop, [name])

    def drop_all(self) -> None:
        with self._lock:
            names, self._names = self._names, []
        self._dropper.submit(self._drop, names)
        self._dropper.shutdown(wait=True)

    def _drop(self, names: list[str]) -> None:
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            for name in names:
                conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


@dataclass(frozen=True)
class HistoryRow:
    revision: int
    event: str | None
    state: str
    status: str
    context: dict[str, Any]


def _sqlite_path(url: str) -> str:
    assert url.startswith("sqlite:///"), url
    return url[len("sqlite:///") :]


def read_history(database_url: str, workflow_id: str) -> list[HistoryRow]:
    """Every stored history row of one instance, by revision, read straight from the table
    (a finished instance's last row keeps no context of its own: it is the instance's)."""
    sql = (
        "SELECT h.revision, h.event, h.state, h.status, coalesce(h.context, w.context)"
        " FROM workflow_history h JOIN workflow_instances w ON w.workflow_id = h.workflow_id"
        " WHERE h.workflow_id = {p} ORDER BY h.revision"
    )
    if database_url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(_sqlite_path(database_url), timeout=10)) as conn:
            rows = conn.execute(sql.format(p="?"), (workflow_id,)).fetchall()
        return [HistoryRow(r[0], r[1], r[2], r[3], json.loads(r[4])) for r in rows]
    with psycopg.connect(database_url, connect_timeout=10) as pg:
        pg_rows = pg.execute(sql.format(p="%s").encode(), (workflow_id,)).fetchall()
    return [HistoryRow(r[0], r[1], r[2], r[3], r[4]) for r in pg_rows]


def read_all_history(database_url: str) -> dict[str, list[HistoryRow]]:
    """Every history row of every instance, grouped by instance, each list by revision."""
    sql = (
        "SELECT h.workflow_id, h.revision, h.event, h.state, h.status,"
        " coalesce(h.context, w.context)"
        " FROM workflow_history h JOIN workflow_instances w ON w.workflow_id = h.workflow_id"
        " ORDER BY h.workflow_id, h.revision"
    )
    out: dict[str, list[HistoryRow]] = {}
    if database_url.startswith("sqlite:///"):
        with contextlib.closing(sqlite3.connect(_sqlite_path(database_url), timeout=10)) as conn:
            for r in conn.execute(sql).fetchall():
                row = HistoryRow(r[1], r[2], r[3], r[4], json.loads(r[5]))
                out.setdefault(r[0], []).append(row)
        return out
    with psycopg.connect(database_url, connect_timeout=10) as pg:
        for r in pg.execute(sql.encode()).fetchall():
            out.setdefault(r[0], []).append(HistoryRow(r[1], r[2], r[3], r[4], r[5]))
    return out
