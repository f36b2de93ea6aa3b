"""Opening a repository: the URL picks the backend, and the schema is migrated first."""

from __future__ import annotations

from statewrightd.store import schema
from statewrightd.store.citus import CitusRepository
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.repository import Repository
from statewrightd.store.sqlite import SqliteRepository


def open_repository(
    url: str,
    *,
    migrate: bool = True,
    pool_size: int = 16,
) -> Repository:
    """Open ``postgresql://...`` (connection pool; a Citus coordinator is recognised by its
    extension) or ``sqlite:///path`` (embedded)."""
    backend = schema.backend_of(url)
    citus = False
    if migrate:
        citus = schema.migrate_database(url).citus
    elif backend == "postgres":
        citus = schema.is_citus(url)
    if citus:
        return CitusRepository(url, pool_size=pool_size)
    if backend == "postgres":
        return PostgresRepository(url, pool_size=pool_size)
    return SqliteRepository(schema.sqlite_path(url))
