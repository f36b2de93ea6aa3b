"""A real server with its web console on a free port, on a PostgreSQL database of its own."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver

from tests.support.browser import new_chrome
from tests.support.console import Http, console_url
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def console_server_env() -> dict[str, str]:
    """Extra environment of the module's server; a module overrides it (a test hook)."""
    return {}


@pytest.fixture(scope="module")
def console_definitions() -> dict[str, str]:
    """Definition files (name -> text) the module's server serves besides the examples and
    the test definitions (a test hook, as above)."""
    return {}


@pytest.fixture(scope="module")
def console_server(
    postgres_databases: PostgresDatabases,
    tmp_path_factory: pytest.TempPathFactory,
    console_server_env: dict[str, str],
    console_definitions: dict[str, str],
) -> Iterator[ServerProcess]:
    url = postgres_databases.create()
    root = tmp_path_factory.mktemp("console")
    definitions = definitions_dir(root / "definitions", extra=console_definitions)
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(
        url, definitions, cwd=root, extra_args=args, env=console_server_env
    ) as server:
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


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[webdriver.Chrome]:
    chrome = new_chrome(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chrome
    finally:
        chrome.quit()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the pages' screenshots go: STATEWRIGHT_SCREENSHOTS when set (`make
    console-screenshots` sets docs/images), else the test's scratch directory."""
    wanted = os.environ.get("STATEWRIGHT_SCREENSHOTS")
    target = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    target.mkdir(parents=True, exist_ok=True)
    return target
