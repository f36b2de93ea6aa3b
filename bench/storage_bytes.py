"""Bytes per workflow in PostgreSQL: what each finished workflow leaves in every table.

Not a test. For each scenario it creates a fresh database on the PostgreSQL named by
``--database`` (default: the server ``scripts/with-postgres`` started), runs one
``statewrightd serve`` on it, drives workflows to their end with bench/goload (closed
loop, every call with a request id, as clients that retry safely send them), stops the
server, and measures every Statewright table (heap, TOAST and indexes) twice: as written,
and after ``VACUUM FULL`` (the same rows packed, without the dead row versions that
updates leave). It also reports the average stored size of each history column, which is
where a history row's bytes go.

    bench/run_storage.sh                         # both scenarios, ~20,000 workflows each
    bench/run_storage.sh --workflows 5000        # a quicker run
    bench/run_storage.sh --out DIR               # also DIR/storage.json

Scenarios: ``start`` is order-pricing (an automatic chain: one StartWorkflow, COMPLETED in
its first step); ``hitl`` is mail-approval (StartWorkflow, WAITING, then ResumeWorkflow to
COMPLETED: two revisions and two request records per workflow).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.loadgen import Plan
from bench.runtime_bench import start_statewrightd

TABLES = (
    "workflow_instances",
    "workflow_history",
    "workflow_requests",
    "workflow_timers",
    "workflow_tasks",
    "workflow_tombstones",
)
# A closed-loop run stops after this long even if the target count is not reached.
MAX_SECONDS = 240.0


def with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


def existing(conn: psycopg.Connection[Any]) -> list[str]:
    rows = conn.execute(
        "SELECT relname FROM pg_class WHERE relkind = 'r' AND relname = ANY(%s)", (list(TABLES),)
    ).fetchall()
    return sorted(r[0] for r in rows)


def table_bytes(conn: psycopg.Connection[Any]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for table in existing(conn):
        heap, total, rows = conn.execute(
            "SELECT pg_table_size(%s::regclass), pg_total_relation_size(%s::regclass),"
            f" (SELECT count(*) FROM {table})",
            (table, table),
        ).fetchone() or (0, 0, 0)
        out[table] = {"table": int(heap), "indexes": int(total - heap), "rows": int(rows)}
    return out


def history_columns(conn: psycopg.Connection[Any]) -> dict[str, float]:
    columns = [
        r[0]
        for r in conn.execute(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'workflow_history'::regclass"
            " AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
        ).fetchall()
    ]
    parts = ", ".join(f"avg(pg_column_size({c}))" for c in columns)
    values = conn.execute(
        f"SELECT avg(pg_column_size(h.*)), {parts} FROM workflow_history h"
    ).fetchone()
    assert values is not None
    out = {"(whole row)": float(values[0] or 0)}
    out.update({c: float(v or 0) for c, v in zip(columns, values[1:], strict=True)})
    return out


def run_scenario(server_url: str, scenario: str, workflows: int, logs: Path) -> dict[str, Any]:
    name = f"sw_bytes_{scenario}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = with_database(server_url, name)
    served = start_statewrightd(url, logs)
    try:
        done = 0
        began = time.monotonic()
        while done < workflows and time.monotonic() - began < MAX_SECONDS:
            plan = Plan(
                target=served.target,
                scenario=scenario,
                processes=1,
                concurrency=32,
                warmup=0.0,
                duration=5.0,
                request_ids=True,
                engine="go",
            )
            summary = loadgen.run(plan)
            with psycopg.connect(url) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM workflow_instances WHERE status = 'COMPLETED'"
                ).fetchone()
            done = int(row[0]) if row else 0
            print(f"  {scenario}: {done:,} workflows completed ({summary.line().strip()})")
    finally:
        served.stop()
    with psycopg.connect(url, autocommit=True) as conn:
        finished = conn.execute("SELECT count(*) FROM workflow_instances").fetchone()
        count = int(finished[0]) if finished else 0
        conn.execute("CHECKPOINT")
        written = table_bytes(conn)
        columns = history_columns(conn)
        for table in existing(conn):
            conn.execute(f"VACUUM FULL {table}".encode())
        packed = table_bytes(conn)
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    return {
        "scenario": scenario,
        "workflows": count,
        "written": written,
        "packed": packed,
        "history_columns": columns,
    }


def per_workflow(tables: dict[str, dict[str, int]], count: int) -> dict[str, float]:
    out = {t: (v["table"] + v["indexes"]) / count for t, v in tables.items()}
    out["total"] = sum(out.values())
    return out


def report(results: list[dict[str, Any]]) -> str:
    lines: list[str] = []
    for r in results:
        count = r["workflows"]
        lines.append(f"\n{r['scenario']}: {count:,} workflows")
        lines.append(f"  {'table':<22} {'written B/wf':>13} {'packed B/wf':>12} {'rows/wf':>8}")
        written = per_workflow(r["written"], count)
        packed = per_workflow(r["packed"], count)
        for table in [*r["written"], "total"]:
            rows = r["packed"][table]["rows"] / count if table in r["packed"] else None
            shown = f"{rows:>8.2f}" if rows is not None else ""
            lines.append(f"  {table:<22} {written[table]:>13,.0f} {packed[table]:>12,.0f} {shown}")
        lines.append("  history row, average stored bytes per column:")
        for column, size in r["history_columns"].items():
            lines.append(f"    {column:<14} {size:7.1f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL"))
    parser.add_argument("--workflows", type=int, default=20_000)
    parser.add_argument("--scenario", action="append", choices=("start", "hitl"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.database:
        parser.error("--database (or STATEWRIGHT_TEST_POSTGRES_URL) is required")
    results = []
    with tempfile.TemporaryDirectory(prefix="sw-bytes-") as tmp:
        for scenario in args.scenario or ["start", "hitl"]:
            results.append(run_scenario(args.database, scenario, args.workflows, Path(tmp)))
    text = report(results)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "storage.json").write_text(json.dumps(results, indent=2))
        (args.out / "storage.txt").write_text(text + "\n")


if __name__ == "__main__":
    main()
