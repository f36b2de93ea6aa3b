"""Opening a repository: the URL picks the backend, and the schema is migrated first."""

from __future__ import annotations

from datetime import timedelta

from statewrightd.store import schema
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.repository import Repository
from statewrightd.store.sqlite import SqliteRepository


def open_repository(
    url: str,
    *,
    migrate: bool = True,
    pool_size: int = 16,
    request_window: timedelta | None = None,
) -> Repository:
    """Open ``postgresql://...`` (connection pool) or ``sqlite:///path`` (embedded).

    ``request_window``: how long a request record answers retries of its request id; a
    step with an id recorded longer ago than that records it afresh (None: for ever)."""
    backend = schema.backend_of(url)
    if migrate:
        schema.migrate(url)
    if backend == "postgres":
        return PostgresRepository(url, pool_size=pool_size, request_window=request_window)
    return SqliteRepository(schema.sqlite_path(url), request_window=request_window)
