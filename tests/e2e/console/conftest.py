"""A real server with its web console on a free port, on a PostgreSQL database of its own."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.console import Http, console_url
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def console_server(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    url = postgres_databases.create()
    root = tmp_path_factory.mktemp("console")
    definitions = definitions_dir(root / "definitions")
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(url, definitions, cwd=root, extra_args=args) as server:
        yield server
    postgres_databases.drop_soon(url)
    # Every refusal the module provoked was an answered error, never an unhandled one.
    assert "Traceback" not in server.log(), server.log()


@pytest.fixture(scope="module")
def base_url(console_server: ServerProcess) -> str:
    return console_url(console_server)


@pytest.fixture
def http(base_url: str) -> Http:
    return Http(base_url)
