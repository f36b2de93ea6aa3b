"""The schema on a Citus coordinator: distributed by workflow id, checked before and after.

``statewrightd migrate`` (and a server that starts on the database) applies the
PostgreSQL migrations on the coordinator as on any PostgreSQL, then distributes what they
created: every per-instance table by ``workflow_id``, colocated with the instances, so
that all rows of one instance live in one shard group on one node; a batch operation's
items by its ``batch_id``; the definitions, schedules and batch operations as reference
tables, on every node. Then it applies the Citus migrations (the shard functions
the store calls, see migrations/citus). Every part is idempotent: a second run finds each
table distributed and each Citus migration recorded, and does nothing. An existing
database distributes the same way: its rows are copied into the shards.

It refuses, before it changes anything, a server that loads Citus into a database that
has not created the extension, a node that is not the coordinator, a coordinator with
no worker (Statewright needs the shards on workers: that is what Citus is for), and
shards kept in more than one copy (the shard functions write one placement).
"""

from __future__ import annotations

from typing import Any

import psycopg

from statewrightd.errors import StoreError
from statewrightd.reasons import Reason

# Every table with one row set per instance, colocated with the instances (the first).
DISTRIBUTED = (
    "workflow_instances",
    "workflow_history",
    "workflow_timers",
    "workflow_tasks",
    "workflow_requests",
    "workflow_tombstones",
    "workflow_search",
    "workflow_children",
)
# Tables distributed by a batch's id, in the instances' colocation group (the hash of a
# batch id places it as a workflow id's would): each batch's items live on one shard, so
# every statement on them is a router query to one node.
BY_BATCH = ("batch_items",)
# Tables every node reads whole: the definitions, the schedules (not per instance: a
# schedule's claim and fire touch its row alone, and its starts go to their own shards)
# and the batches, whose claim locks one row with FOR UPDATE SKIP LOCKED, which Citus
# runs only within one shard: as a reference table, the whole table is one shard.
REFERENCE = ("workflow_definitions", "schedules", "batch_operations")

VERSION_TABLE_NAME = "statewright_citus_version"
VERSION_TABLE = f"""
CREATE TABLE IF NOT EXISTS {VERSION_TABLE_NAME} (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL
)
"""

Conn = psycopg.Connection[Any]


def is_citus(conn: Conn) -> bool:
    """Whether this database is a Citus coordinator Statewright can use; raises why not
    when it is Citus but not usable, and answers False for a plain PostgreSQL."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()
    if row is None:
        preload = conn.execute("SELECT current_setting('shared_preload_libraries')").fetchone()
        if preload is not None and "citus" in str(preload[0]):
            database = conn.info.dbname
            raise StoreError(
                f"this server loads Citus but database {database!r} has not created the "
                "extension: run CREATE EXTENSION citus in it (and add the workers with "
                "citus_add_node), then migrate again",
                reason=Reason.CITUS_EXTENSION_MISSING,
            )
        return False
    # Group 0 is the coordinator's (and a new node's, before it is added anywhere).
    group = conn.execute("SELECT groupid FROM pg_dist_local_group").fetchone()
    if group is None or group[0] != 0:
        raise StoreError(
            "this is a Citus worker node: point the database URL at the coordinator",
            reason=Reason.CITUS_NOT_COORDINATOR,
        )
    workers = conn.execute(
        "SELECT count(*) FROM pg_dist_node"
        " WHERE noderole = 'primary' AND isactive AND shouldhaveshards AND groupid <> 0"
    ).fetchone()
    if workers is None or workers[0] == 0:
        raise StoreError(
            "this Citus coordinator has no worker node to hold shards: add workers with "
            "SELECT citus_add_node('host', port) on the coordinator, then migrate again",
            reason=Reason.CITUS_NO_WORKERS,
        )
    return True


def distribute(conn: Conn) -> list[str]:
    """Distribute the tables that are not yet; return the names of those it distributed.

    Each table in its own transaction: the migrator's session lock keeps other
    migrators out meanwhile.
    """
    done = _distributed(conn)
    conn.commit()
    distributed: list[str] = []
    with conn.transaction():
        # create_distributed_table copies a table's rows into its shards; a table
        # created in this same run is empty, and an existing database's tables are not.
        for table in DISTRIBUTED:
            if table in done:
                continue
            colocate = "none" if table == DISTRIBUTED[0] else DISTRIBUTED[0]
            conn.execute(
                "SELECT create_distributed_table(%s, 'workflow_id', colocate_with => %s)",
                (table, colocate),
            )
            distributed.append(table)
        for table in BY_BATCH:
            if table not in done:
                conn.execute(
                    "SELECT create_distributed_table(%s, 'batch_id', colocate_with => %s)",
                    (table, DISTRIBUTED[0]),
                )
                distributed.append(table)
        for table in REFERENCE:
            if table not in done:
                conn.execute("SELECT create_reference_table(%s)", (table,))
                distributed.append(table)
    for table in distributed:
        # The rows copied into the shards stay behind in the coordinator's local table,
        # invisible: free their space.
        with conn.transaction():
            conn.execute("SELECT truncate_local_data_after_distributing_table(%s)", (table,))
    _check_single_placement(conn)
    conn.commit()
    return distributed


def _distributed(conn: Conn) -> set[str]:
    rows = conn.execute(
        "SELECT logicalrelid::regclass::text FROM pg_dist_partition"
        " WHERE logicalrelid::regclass::text = ANY(%s)",
        (list(DISTRIBUTED + BY_BATCH + REFERENCE),),
    ).fetchall()
    return {r[0] for r in rows}


def _check_single_placement(conn: Conn) -> None:
    row = conn.execute(
        "SELECT count(*) FROM (SELECT p.shardid FROM pg_dist_placement p"
        " JOIN pg_dist_shard s USING (shardid)"
        " WHERE s.logicalrelid = ANY(%s::regclass[]) GROUP BY p.shardid"
        " HAVING count(*) > 1) x",
        (list(DISTRIBUTED + BY_BATCH),),
    ).fetchone()
    if row is not None and row[0]:
        raise StoreError(
            "the workflow tables' shards are kept in more than one copy "
            "(citus.shard_replication_factor > 1): Statewright needs one placement per "
            "shard; make each node highly available with PostgreSQL streaming replication",
            reason=Reason.CITUS_SHARD_REPLICAS,
        )


def citus_schema_version(conn: Conn) -> int:
    exists = conn.execute("SELECT to_regclass('statewright_citus_version') IS NOT NULL").fetchone()
    if exists is None or not exists[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM statewright_citus_version").fetchone()
    return int(row[0]) if row else 0
