"""PostgreSQL fixtures for integration tests: the real server `scripts/with-postgres` starts.

Every test that asks for a database gets its own, freshly created, so tests never see
each other's rows and may run in any order.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from tests.support import citus

ENV = "STATEWRIGHT_TEST_POSTGRES_URL"


def with_database(url: str, database: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


@pytest.fixture(scope="session")
def postgres_server_url() -> str:
    """The maintenance URL of the test server; a run without it fails, never skips."""
    url = os.environ.get(ENV)
    if not url:
        pytest.fail(
            f"{ENV} is not set: PostgreSQL tests need a real server. Run them as "
            "`scripts/with-postgres .venv/bin/pytest ...` (or set the variable).",
            pytrace=False,
        )
    try:
        with psycopg.connect(url, connect_timeout=5, autocommit=True) as conn:
            conn.execute("SELECT 1")
    except psycopg.OperationalError as exc:
        pytest.fail(f"{ENV}={url} is not reachable: {exc}", pytrace=False)
    return url


def _create_database(server_url: str, template: str | None = None) -> str:
    name = f"sw_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        # Identifiers cannot be parameters; the name is ours and strictly [a-z0-9_].
        suffix = f" TEMPLATE {template}" if template else ""
        conn.execute(f"CREATE DATABASE {name}{suffix}".encode())
    return name


def _drop_database(server_url: str, name: str) -> None:
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


@pytest.fixture
def empty_postgres_url(postgres_server_url: str) -> Iterator[str]:
    """A brand-new database with no schema (for migration tests)."""
    name = _create_database(postgres_server_url)
    yield with_database(postgres_server_url, name)
    _drop_database(postgres_server_url, name)


@pytest.fixture(scope="session")
def migrated_template(postgres_server_url: str) -> Iterator[str]:
    """A migrated database used only as a template, so each test's copy is cheap."""
    from statewrightd.store.schema import migrate

    name = _create_database(postgres_server_url)
    migrate(with_database(postgres_server_url, name))
    yield name
    _drop_database(postgres_server_url, name)


@pytest.fixture
def postgres_url(postgres_server_url: str, migrated_template: str) -> Iterator[str]:
    """A fresh, fully migrated database of this test's own."""
    name = _create_database(postgres_server_url, template=migrated_template)
    yield with_database(postgres_server_url, name)
    _drop_database(postgres_server_url, name)


# -- Citus: the coordinator and workers `scripts/with-citus` starts ------------------------

_CITUS_TABLES = (
    "workflow_instances, workflow_history, workflow_timers, workflow_tasks, workflow_requests,"
    " workflow_tombstones, workflow_search, workflow_definitions, schedules,"
    " batch_operations, batch_items"
)


@pytest.fixture(scope="session")
def citus_server_url() -> str:
    """The coordinator's maintenance URL; a run without it fails, never skips (deselect
    the Citus tests with ``-m "not citus"``)."""
    url = os.environ.get(citus.ENV)
    if not url:
        pytest.fail(
            f"{citus.ENV} is not set: the Citus tests need a real cluster. Run them as "
            "`scripts/with-citus .venv/bin/pytest ...` (make test does), or deselect them "
            'with -m "not citus".',
            pytrace=False,
        )
    return url


@pytest.fixture(scope="session")
def citus_database(citus_server_url: str) -> Iterator[str]:
    """One migrated, distributed database for the session's Citus tests."""
    from statewrightd.store.schema import migrate

    url = citus.create_database(citus_server_url)
    migrate(url)
    yield url
    citus.drop_database(citus_server_url, url)


@pytest.fixture
def citus_url(citus_database: str) -> str:
    """The session's Citus database, emptied for this test (a database per test, made on
    every node, would cost seconds each)."""
    with psycopg.connect(citus_database, autocommit=True) as conn:
        conn.execute(f"TRUNCATE {_CITUS_TABLES}".encode())
        # The queue configs and keys: plain tables on the coordinator.
        conn.execute("TRUNCATE task_queues, task_queue_keys")
    return citus_database


@pytest.fixture
def empty_citus_url(citus_server_url: str) -> Iterator[str]:
    """A brand-new Citus database with no schema (for migration tests)."""
    url = citus.create_database(citus_server_url)
    yield url
    citus.drop_database(citus_server_url, url)
