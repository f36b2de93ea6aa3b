"""Backend parametrization: every contract test runs on PostgreSQL, SQLite and Citus, and
each that needs no database URL (to open a second repository on it, or to read its tables
around the repository) on the in-memory store the scenario runner uses too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statewrightd.store import Repository, open_repository
from statewrightd.store.memory import MemoryRepository
from statewrightd.store.postgres import PostgresRepository


@pytest.fixture(
    params=["postgres", "sqlite", pytest.param("citus", marks=pytest.mark.citus), "memory"]
)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database of the parametrized backend."""
    if backend == "memory":
        pytest.skip("the in-memory store has no URL: a test that opens one needs a database")
    if backend in ("postgres", "citus"):
        return str(request.getfixturevalue(f"{backend}_url"))
    from statewrightd.store.schema import migrate

    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(url)
    return url


@pytest.fixture
def empty_db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no schema yet, of the parametrized backend."""
    if backend == "memory":
        pytest.skip("the in-memory store has no schema")
    if backend in ("postgres", "citus"):
        return str(request.getfixturevalue(f"empty_{backend}_url"))
    return f"sqlite:///{tmp_path / 'empty.db'}"


@pytest.fixture
def repo(backend: str, request: pytest.FixtureRequest) -> Iterator[Repository]:
    if backend == "memory":
        memory = MemoryRepository()
        yield memory
        memory.close()
        return
    db_url = str(request.getfixturevalue("db_url"))
    if backend == "postgres":
        # Every batch of two steps or more takes the set-based statements here (a server
        # takes them from SET_BASED_FROM steps), and a single step its own: the contract's
        # batches cover the one form and its single steps the other.
        repository: Repository = PostgresRepository(db_url, pool_size=8, set_based_from=2)
    else:
        repository = open_repository(db_url, migrate=False, pool_size=8)
    yield repository
    repository.close()
