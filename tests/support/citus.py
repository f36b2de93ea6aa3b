"""Throwaway databases on the Citus cluster that ``scripts/with-citus`` runs.

A Citus database is a database of the same name on every node, each with the extension;
the coordinator's knows the workers. Creating one costs every node a CREATE DATABASE, so
suites share one where they can.
"""

from __future__ import annotations

import os
import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg

ENV = "STATEWRIGHT_TEST_CITUS_URL"
# Shards per table in test databases: several shard groups on each worker, few enough
# that emptying a database between tests is quick. Production keeps Citus's default.
TEST_SHARDS = 4


def citus_admin_url() -> str:
    url = os.environ.get(ENV)
    if not url:
        raise RuntimeError(
            f"{ENV} is not set: run the tests through scripts/with-citus (or `make test`), "
            "which starts a private Citus cluster"
        )
    return url


def with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def nodes(admin_url: str) -> list[str]:
    """The maintenance URL of every node, the coordinator first."""
    parts = urlsplit(admin_url)
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=10) as conn:
        workers = conn.execute(
            "SELECT nodename, nodeport FROM pg_dist_node WHERE groupid <> 0 ORDER BY nodeid"
        ).fetchall()
    user = parts.username or "postgres"
    return [admin_url] + [
        urlunsplit(parts._replace(netloc=f"{user}@{host}:{port}")) for host, port in workers
    ]


def create_database(admin_url: str, *, shards: int | None = TEST_SHARDS) -> str:
    """A new Citus database, no schema; its coordinator URL. ``shards``: per table when
    the schema is distributed (None: Citus's default)."""
    name = f"sw_citus_{uuid.uuid4().hex[:12]}"
    every = nodes(admin_url)
    for node in every:
        with psycopg.connect(node, autocommit=True, connect_timeout=10) as conn:
            # Identifiers cannot be parameters; the name is ours and strictly [a-z0-9_].
            conn.execute(f"CREATE DATABASE {name}".encode())
        with psycopg.connect(with_database(node, name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION citus")
    coordinator = with_database(admin_url, name)
    parts = urlsplit(admin_url)
    with psycopg.connect(coordinator, autocommit=True) as conn:
        conn.execute("SELECT citus_set_coordinator_host(%s, %s)", (parts.hostname, parts.port))
        for node in every[1:]:
            worker = urlsplit(node)
            conn.execute("SELECT citus_add_node(%s, %s)", (worker.hostname, worker.port))
        if shards is not None:
            conn.execute(f"ALTER DATABASE {name} SET citus.shard_count = {int(shards)}".encode())
    return coordinator


def drop_database(admin_url: str, coordinator_url: str) -> None:
    name = urlsplit(coordinator_url).path.lstrip("/")
    for node in nodes(admin_url):
        with psycopg.connect(node, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
