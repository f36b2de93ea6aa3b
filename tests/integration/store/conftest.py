"""Backend parametrization: every contract test runs on PostgreSQL, SQLite and Citus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statewrightd.store import Repository, open_repository


@pytest.fixture(params=["postgres", "sqlite", pytest.param("citus", marks=pytest.mark.citus)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated, empty database of the parametrized backend."""
    if backend in ("postgres", "citus"):
        return str(request.getfixturevalue(f"{backend}_url"))
    from statewrightd.store.schema import migrate

    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(url)
    return url


@pytest.fixture
def empty_db_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database with no schema yet, of the parametrized backend."""
    if backend in ("postgres", "citus"):
        return str(request.getfixturevalue(f"empty_{backend}_url"))
    return f"sqlite:///{tmp_path / 'empty.db'}"


@pytest.fixture
def repo(db_url: str) -> Iterator[Repository]:
    repository = open_repository(db_url, migrate=False, pool_size=8)
    yield repository
    repository.close()
