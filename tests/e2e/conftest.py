"""End-to-end fixtures: real server processes against the databases the test command starts.

Every PostgreSQL-backed test (or module, for module-scoped servers) gets a database of its
own, created empty on the server `scripts/with-postgres` runs; statewrightd migrates it at
start. SQLite-backed ones get a file in a temporary directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statewrightd.store.schema import migrate
from tests.support import citus
from tests.support.api import Client
from tests.support.databases import PostgresDatabases, postgres_admin_url
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

BACKENDS = ["postgresql", "sqlite"]
# For the modules whose features run on Citus too: a third backend, deselected with
# -m "not citus" (make test does so where Citus is not installed).
WITH_CITUS = [*BACKENDS, pytest.param("citus", marks=pytest.mark.citus)]


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[PostgresDatabases]:
    databases = PostgresDatabases(postgres_admin_url())
    yield databases
    databases.drop_all()


def _database_for(backend: str, request: pytest.FixtureRequest, directory: Path) -> str:
    if backend == "sqlite":
        return f"sqlite:///{directory / 'statewright.db'}"
    if backend == "citus":
        admin = citus.citus_admin_url()
        made = citus.create_database(admin)
        request.addfinalizer(lambda: citus.drop_database(admin, made))
        # Distributed before the server starts: on a loaded machine distributing takes
        # longer than a test waits for a server to come up (which then finds it done).
        migrate(made)
        return made
    databases: PostgresDatabases = request.getfixturevalue("postgres_databases")
    url = databases.create()
    request.addfinalizer(lambda: databases.drop_soon(url))
    return url


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of this test's own on the parametrized backend."""
    return _database_for(backend, request, tmp_path)


@pytest.fixture(scope="module", params=BACKENDS)
def module_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def module_database_url(
    module_backend: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A database shared by one module's tests on one backend."""
    return _database_for(module_backend, request, tmp_path_factory.mktemp(module_backend))


@pytest.fixture(
    scope="module", params=["postgresql", pytest.param("citus", marks=pytest.mark.citus)]
)
def module_server_database(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> str:
    """A database shared by one module's tests, on PostgreSQL and again on Citus: for the
    modules whose features are about the server's own database (SQLite has its own tests)."""
    backend = str(request.param)
    return _database_for(backend, request, tmp_path_factory.mktemp(backend))


@pytest.fixture(scope="module")
def module_server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """One server per module and backend, with the example and test definitions loaded."""
    root = tmp_path_factory.mktemp("server")
    definitions = definitions_dir(root / "definitions")
    with running_server(module_database_url, definitions, cwd=root) as server:
        yield server
    # Every failure the module provoked was an answered error, never an unhandled one.
    assert "Traceback" not in server.log(), server.log()


@pytest.fixture
def client(module_server: ServerProcess) -> Iterator[Client]:
    with Client(module_server.target) as c:
        yield c
