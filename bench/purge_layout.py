"""Which storage layout keeps the purge cheap: batched deletes, or dropping partitions.

Not a test. On a fresh database of the PostgreSQL named by ``--database`` (default: the
one ``scripts/with-postgres`` started) it measures, with rows shaped like the human-in-
the-loop workflow's (one instance, two history rows, two request records each):

1. **Batched deletes**, as the purge runs them (``Repository.purge_expired``, 500
   instances a statement, everything of theirs in the same statement): time and WAL per
   workflow removed, then the dead rows and the time of the VACUUM that reclaims them.
2. **Dropping a partition**: the same history rows in a table partitioned by day, one
   partition holding them all; the time and WAL of ``DROP TABLE`` on it.
3. **The compare-and-swap on a partitioned instance table**: the hot path updates an
   instance by its id, which does not name a partition. The mean time of that UPDATE on
   the plain table, and on the same rows spread over 30 daily partitions.

    bench/run_purge_layout.sh                   # 100,000 workflows
    bench/run_purge_layout.sh --workflows 20000 # a quicker run
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from statewrightd.store import open_repository
from statewrightd.store.schema import migrate

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CONTEXT = (
    '{"topic": "benchmark", "draft": "Dear team: benchmark", "approved": false,'
    ' "approver": "an unnamed approver", "sent": false, "notes": [], "meta": {}}'
)


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def fill(conn: psycopg.Connection[Any], count: int, history: str = "workflow_history") -> None:
    """``count`` finished workflows, due at T0, in the schema's tables (or ``history``)."""
    conn.execute(
        """
INSERT INTO workflow_instances (workflow_id, definition, version, state, status, context,
                                revision, error, create_time, update_time, expire_time)
SELECT md5(g::text), 'mail-approval', 1, 'send', 'COMPLETED', %(context)s::jsonb, 2, NULL,
       %(t0)s, %(t0)s, %(t0)s
  FROM generate_series(1, %(count)s) g
""",
        {"context": CONTEXT, "t0": T0, "count": count},
    )
    conn.execute(
        f"""
INSERT INTO {history} (workflow_id, revision, event, transitions, state, status, context,
                        error, time, timers)
SELECT md5(g::text), r, CASE WHEN r = 1 THEN NULL ELSE 'approve' END,
       to_jsonb(CASE WHEN r = 1 THEN 'draft>awaiting_approval'
                     ELSE 'awaiting_approval>send@approve send>__finish__' END),
       CASE WHEN r = 1 THEN 'awaiting_approval' ELSE 'send' END,
       CASE WHEN r = 1 THEN 'WAITING' ELSE 'COMPLETED' END,
       CASE WHEN r = 1 THEN %(context)s::jsonb END, NULL, %(t0)s, NULL
  FROM generate_series(1, %(count)s) g, generate_series(1, 2) r
""".encode(),
        {"context": CONTEXT, "t0": T0, "count": count},
    )
    if history == "workflow_history":
        conn.execute(
            """
INSERT INTO workflow_requests (request_id, workflow_id, method, fingerprint, response,
                               create_time)
SELECT md5(g::text || 'r' || r), md5(g::text), 'StartWorkflow', md5(g::text || 'f'),
       '{"revision": 1}'::bytea, %(t0)s
  FROM generate_series(1, %(count)s) g, generate_series(1, 2) r
""",
            {"t0": T0, "count": count},
        )


def wal(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn").fetchone()
    return int(row[0]) if row else 0


def dead_rows(conn: psycopg.Connection[Any]) -> dict[str, int]:
    conn.execute("SELECT pg_stat_force_next_flush()")
    rows = conn.execute(
        "SELECT relname, n_dead_tup FROM pg_stat_user_tables WHERE relname LIKE 'workflow_%'"
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows if r[1]}


def batched_deletes(url: str, count: int) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        fill(conn, count)
        conn.execute("VACUUM ANALYZE")
        size_before = total_size(conn)
        wal_before = wal(conn)
    repo = open_repository(url, migrate=False, pool_size=2)
    statements, removed = 0, 0
    began = time.perf_counter()
    try:
        for _ in range(count):  # bounded: each statement removes up to 500
            batch = repo.purge_expired(T0 + timedelta(days=1), 500)
            statements += 1
            removed += len(batch.workflow_ids)
            if not batch.workflow_ids:
                break
    finally:
        repo.close()
    seconds = time.perf_counter() - began
    with psycopg.connect(url, autocommit=True) as conn:
        wal_bytes = wal(conn) - wal_before
        time.sleep(1.0)
        dead = dead_rows(conn)
        vacuum_began = time.perf_counter()
        conn.execute("VACUUM")
        vacuum_seconds = time.perf_counter() - vacuum_began
        size_after = total_size(conn)
    return {
        "workflows": removed,
        "statements": statements,
        "seconds": seconds,
        "ms_per_1000_workflows": seconds / removed * 1e6,
        "wal_bytes_per_workflow": wal_bytes / removed,
        "dead_rows_before_vacuum": dead,
        "vacuum_seconds": vacuum_seconds,
        "size_before": size_before,
        "size_after_vacuum": size_after,
    }


def total_size(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT sum(pg_total_relation_size(oid)) FROM pg_class"
        " WHERE relkind = 'r' AND relname LIKE 'workflow_%'"
    ).fetchone()
    return int(row[0] or 0) if row else 0


def dropped_partition(url: str, count: int) -> dict[str, Any]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("""
CREATE TABLE history_by_day (LIKE workflow_history INCLUDING DEFAULTS)
    PARTITION BY RANGE (time)""")
        conn.execute("""
CREATE TABLE history_day_1 PARTITION OF history_by_day
    FOR VALUES FROM ('2026-01-01') TO ('2026-01-02')""")
        conn.execute("""
CREATE TABLE history_day_2 PARTITION OF history_by_day
    FOR VALUES FROM ('2026-01-02') TO ('2026-01-03')""")
        # The primary key of a partitioned table must hold the partition key: the hot
        # path's (workflow_id, revision) is no longer unique on its own.
        conn.execute("ALTER TABLE history_by_day ADD PRIMARY KEY (workflow_id, revision, time)")
        began = time.perf_counter()
        fill_history_only(conn, count)
        insert_seconds = time.perf_counter() - began
        conn.execute("VACUUM ANALYZE history_by_day")
        wal_before = wal(conn)
        began = time.perf_counter()
        conn.execute("DROP TABLE history_day_1")
        seconds = time.perf_counter() - began
        wal_bytes = wal(conn) - wal_before
        conn.execute("DROP TABLE history_by_day")
    return {
        "workflows": count,
        "drop_seconds": seconds,
        "wal_bytes": wal_bytes,
        "insert_seconds_partitioned": insert_seconds,
    }


def fill_history_only(conn: psycopg.Connection[Any], count: int) -> None:
    conn.execute(
        """
INSERT INTO history_by_day (workflow_id, revision, event, transitions, state, status,
                            context, error, time, timers)
SELECT md5(g::text), r, NULL, to_jsonb('draft>awaiting_approval'::text), 'send', 'COMPLETED',
       %(context)s::jsonb, NULL, %(t0)s, NULL
  FROM generate_series(1, %(count)s) g, generate_series(1, 2) r
""",
        {"context": CONTEXT, "t0": T0, "count": count},
    )


def cas_update(url: str, count: int, partitions: int, updates: int) -> dict[str, float]:
    """Mean seconds of the hot path's UPDATE ... WHERE workflow_id = $1 AND revision = $2,
    on a plain table and on one partitioned by creation day."""
    out: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("""
CREATE TABLE cas_plain (workflow_id text PRIMARY KEY, revision bigint, context jsonb,
                        create_time timestamptz)""")
        conn.execute("""
CREATE TABLE cas_parted (workflow_id text, revision bigint, context jsonb,
                         create_time timestamptz) PARTITION BY RANGE (create_time)""")
        for day in range(partitions):
            low, high = T0 + timedelta(days=day), T0 + timedelta(days=day + 1)
            conn.execute(
                f"CREATE TABLE cas_parted_{day} PARTITION OF cas_parted"
                f" FOR VALUES FROM ('{low.isoformat()}') TO ('{high.isoformat()}')".encode()
            )
        # Unique per partition only: a partitioned table's unique index needs the key.
        conn.execute("CREATE INDEX ON cas_parted (workflow_id)")
        for table in ("cas_plain", "cas_parted"):
            conn.execute(
                f"""
INSERT INTO {table} SELECT md5(g::text), 1, %(context)s::jsonb,
       %(t0)s + (g %% %(partitions)s) * interval '1 day'
  FROM generate_series(1, %(count)s) g""".encode(),
                {"context": CONTEXT, "t0": T0, "partitions": partitions, "count": count},
            )
        conn.execute("VACUUM ANALYZE cas_plain")
        conn.execute("VACUUM ANALYZE cas_parted")
        for table in ("cas_plain", "cas_parted"):
            sql = (
                f"UPDATE {table} SET revision = revision + 1, context = %s::jsonb"
                " WHERE workflow_id = %s AND revision >= 1"
            ).encode()
            ids = [_md5(f"{i}") for i in range(1, updates + 1)]
            # One transaction: the COMMIT's flush would otherwise be most of what is timed.
            with conn.transaction(), conn.cursor() as cur:
                for _ in range(10):  # past psycopg's and the server's generic-plan points
                    cur.execute(sql, (CONTEXT, "warm"), prepare=True)
                began = time.perf_counter()
                for wid in ids:
                    cur.execute(sql, (CONTEXT, wid), prepare=True)
                out[table] = (time.perf_counter() - began) / len(ids)
        conn.execute("DROP TABLE cas_plain")
        conn.execute("DROP TABLE cas_parted")
    return out


def _md5(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL"))
    parser.add_argument("--workflows", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.database:
        parser.error("--database (or STATEWRIGHT_TEST_POSTGRES_URL) is required")
    name = f"sw_layout_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = with_database(args.database, name)
    try:
        migrate(url)
        results = {
            "batched_deletes": batched_deletes(url, args.workflows),
            "dropped_partition": dropped_partition(url, args.workflows),
            "cas_update_seconds": cas_update(url, args.workflows, 30, 3000),
        }
    finally:
        with psycopg.connect(args.database, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    print(json.dumps(results, indent=2))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "purge_layout.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
