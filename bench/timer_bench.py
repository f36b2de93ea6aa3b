"""The timer benchmark: statewrightd firing durable timers on PostgreSQL.

Not a test. Run it through bench/run_timers.sh, which brings its own PostgreSQL. On
127.0.0.1 only, it:

1. starts one statewrightd and measures start-to-complete throughput (closed loop) with
   no timer in the database: the baseline;
2. seeds 100,000 timers armed a day ahead (rows written straight into the database,
   as 100,000 started instances would have left them) and measures the same throughput
   again: the ratio to the baseline is the cost of a large timer table to the hot path;
3. seeds timers coming due at ``--rate`` per second for ``--seconds`` and lets the
   server fire them, with one replica and then with two: fire lag (the committed step's
   time minus the due time) p50/p99, timers fired per second, server CPU per fired timer;
4. times the claim query alone against that table: its cost per claimed timer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import psycopg
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.runtime_bench import statewrightd_command

ROOT = Path(__file__).resolve().parents[1]
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
FAR = 100_000

DEFINITIONS = {
    "timed.yaml": """
name: timed
version: 1
context:
  due: {type: string, default: "2100-01-01T00:00:00Z"}
states:
  waiting:
    wait: true
  fired: {}
transitions:
  - {from: waiting, on: approve, to: __finish__}
  - {from: waiting, after_expr: "timestamp(context.due)", to: fired}
""",
    "instant.yaml": """
name: instant
version: 1
states:
  done: {}
""",
}


@contextmanager
def server(
    database: str,
    definitions: Path,
    logs: Path,
    name: str,
    extra: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    patches: Sequence[str] = (),
) -> Iterator[tuple[str, int]]:
    """A statewrightd serving on a free port; ``env``: its environment (None: this one's);
    ``patches``: run under bench/patched_server.py with these patches."""
    log = logs / f"{name}.log"
    # The statewrightd of the venv running this (PY=PATH in the run_*.sh scripts picks it).
    command = statewrightd_command(patches)
    argv = [*command, "serve", "--listen", "127.0.0.1:0", "--database", database]
    # One process, so that the pid's CPU is the server's (a later --processes in ``extra``
    # wins, and then the figures must add the pod's processes up).
    argv += ["--definitions", str(definitions), "--log-level", "INFO", "--grace", "5"]
    argv += ["--processes", "1", *extra]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=None if env is None else dict(env),
        )
    try:
        port = 0
        deadline = time.monotonic() + 60
        while not port and time.monotonic() < deadline:
            found = re.search(r"serving on [\d.]+:(\d+)", log.read_text(errors="replace"))
            port = int(found.group(1)) if found else 0
            if process.poll() is not None:
                raise RuntimeError(log.read_text(errors="replace")[-3000:])
            time.sleep(0.1)
        if not port:
            raise RuntimeError(f"{name} did not start")
        yield f"127.0.0.1:{port}", process.pid
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()


@contextmanager
def workspace(definitions: dict[str, str], prefix: str) -> Iterator[tuple[Path, Path]]:
    """A temporary directory with ``definitions`` (file name -> text) written into one
    folder, and another for the servers' logs."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        root = Path(tmp)
        (root / "definitions").mkdir()
        for name, text in definitions.items():
            (root / "definitions" / name).write_text(text)
        (root / "logs").mkdir()
        yield root / "definitions", root / "logs"


def cpu_seconds(pid: int) -> float:
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def postgres_cpu() -> float:
    """CPU seconds of every postgres process on the machine (the private server's; a
    backend that exits takes its share with it, so read it while the pools are open)."""
    total = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() != "postgres":
                    continue
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / CLOCK_TICKS


async def closed_loop(target: str, seconds: float, concurrency: int = 32) -> float:
    """Start-to-complete calls/s of ``instant`` over ``seconds``."""
    done = 0
    stop = time.monotonic() + seconds
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)

        async def worker() -> None:
            nonlocal done
            request = pb.StartWorkflowRequest(definition="instant", version=1)
            while time.monotonic() < stop:
                await stub.StartWorkflow(request, timeout=30)
                done += 1

        began = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return done / (time.monotonic() - began)


def seed(database: str, prefix: str, start: datetime, count: int, spacing: timedelta) -> None:
    """``count`` instances of ``timed`` waiting with one armed timer each, as a start leaves
    them, due from ``start`` every ``spacing``; written in three statements."""
    params = {
        "prefix": prefix,
        "start": start,
        "step_us": spacing / timedelta(microseconds=1),
        "count": count,
    }
    series = """
        SELECT %(prefix)s || '-' || g AS wid,
               %(start)s::timestamptz + g * %(step_us)s * interval '1 microsecond' AS due
          FROM generate_series(0, %(count)s - 1) AS g"""
    with psycopg.connect(database) as conn:
        conn.execute(
            "INSERT INTO workflow_instances (workflow_id, definition, version, state, status,"
            " context, revision, error, create_time, update_time)"
            " SELECT wid, 'timed', 1, 'waiting', 'WAITING', jsonb_build_object('due', due),"
            " 1, NULL, now(), now() FROM (" + series + ") s",
            params,
        )
        conn.execute(
            "INSERT INTO workflow_history (workflow_id, revision, event, transitions, state,"
            " status, context, error, time)"
            " SELECT wid, 1, NULL, '[]', 'waiting', 'WAITING', jsonb_build_object('due', due),"
            " NULL, now() FROM (" + series + ") s",
            params,
        )
        conn.execute(
            "INSERT INTO workflow_timers (workflow_id, timer_id, revision, transition, target,"
            " after, due_time) SELECT wid, '1.1', 1, 1, 'fired', 'timestamp(context.due)', due"
            " FROM (" + series + ") s",
            params,
        )
        conn.commit()
    settle(database)


def unseed(database: str, prefix: str) -> None:
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute("DELETE FROM workflow_instances WHERE workflow_id LIKE %s", (f"{prefix}-%",))
    settle(database)


def settle(database: str) -> None:
    """Let a bulk change's aftermath (autovacuum and autoanalyze of the tables it touched, a
    checkpoint flushing its pages) happen now rather than inside the next measured window:
    the figure is the cost of a large table, not of having just written one."""
    with psycopg.connect(database, autocommit=True) as conn:
        for table in ("workflow_instances", "workflow_history", "workflow_timers"):
            conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("CHECKPOINT")


def fired_lags(database: str, prefix: str) -> list[float]:
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT extract(epoch FROM h.time - (i.context->>'due')::timestamptz)"
            "  FROM workflow_history h JOIN workflow_instances i USING (workflow_id)"
            " WHERE h.event = 'after' AND h.workflow_id LIKE %s",
            (f"{prefix}-%",),
        ).fetchall()
    return [float(r[0]) for r in rows]


def armed(database: str, prefix: str) -> int:
    with psycopg.connect(database) as conn:
        row = conn.execute(
            "SELECT count(*) FROM workflow_timers WHERE workflow_id LIKE %s", (f"{prefix}-%",)
        ).fetchone()
    return int(row[0]) if row else 0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def coming_due(
    database: str, definitions: Path, logs: Path, *, replicas: int, rate: int, seconds: int
) -> dict[str, Any]:
    prefix = f"due{replicas}"
    start = datetime.now(UTC) + timedelta(seconds=10)
    count = rate * seconds
    seed(database, prefix, start, count, timedelta(seconds=1 / rate))
    with contextlib_servers(database, definitions, logs, replicas, prefix) as pids:
        cpu_before = sum(cpu_seconds(p) for p in pids)
        end = start + timedelta(seconds=seconds)
        while datetime.now(UTC) < end + timedelta(seconds=2) or armed(database, prefix) > 0:
            if datetime.now(UTC) > end + timedelta(seconds=60):
                break
            time.sleep(0.5)
        cpu = sum(cpu_seconds(p) for p in pids) - cpu_before
    lags = fired_lags(database, prefix)
    return {
        "replicas": replicas,
        "due": count,
        "fired": len(lags),
        "lag_p50_ms": percentile(lags, 0.5) * 1000,
        "lag_p99_ms": percentile(lags, 0.99) * 1000,
        "lag_max_ms": max(lags) * 1000 if lags else float("nan"),
        "server_cpu_ms_per_timer": cpu / max(1, len(lags)) * 1000,
    }


@contextmanager
def contextlib_servers(
    database: str, definitions: Path, logs: Path, count: int, prefix: str
) -> Iterator[list[int]]:
    stack = [server(database, definitions, logs, f"{prefix}-server-{n}") for n in range(count)]
    pids = [ctx.__enter__()[1] for ctx in stack]
    try:
        yield pids
    finally:
        for ctx in reversed(stack):
            ctx.__exit__(None, None, None)


def claim_cost(database: str, batches: int = 20, limit: int = 256) -> float:
    """Microseconds of PostgreSQL per claimed timer, the claims rolled back each time."""
    now = datetime.now(UTC) + timedelta(days=2)  # everything seeded is due by then
    timings = []
    with psycopg.connect(database) as conn:
        sql = (
            "UPDATE workflow_timers t SET claimed_until = %(until)s FROM (SELECT workflow_id,"
            " timer_id FROM workflow_timers WHERE due_time <= %(now)s AND (claimed_until IS NULL"
            " OR claimed_until <= %(now)s) ORDER BY due_time LIMIT %(limit)s FOR UPDATE SKIP"
            " LOCKED) due WHERE t.workflow_id = due.workflow_id AND t.timer_id = due.timer_id"
            " RETURNING t.workflow_id"
        )
        for _ in range(batches):
            began = time.perf_counter()
            got = conn.execute(sql, {"now": now, "until": now, "limit": limit}).fetchall()
            timings.append((time.perf_counter() - began) / max(1, len(got)))
            conn.rollback()
    return statistics.median(timings) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=1000, help="timers coming due per second")
    parser.add_argument("--seconds", type=int, default=30, help="for how long")
    parser.add_argument("--window", type=float, default=10.0, help="throughput window, s")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 200/s for 5 s")
    args = parser.parse_args()
    if args.quick:
        args.rate, args.seconds, args.window = 200, 5, 3.0
    database = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    results: dict[str, Any] = {"rate": args.rate, "seconds": args.seconds}
    with workspace(DEFINITIONS, "timer-bench-") as (definitions, logs):
        with server(database, definitions, logs, "baseline") as (target, _):
            asyncio.run(closed_loop(target, args.window))  # warm-up
            plain: list[float] = []
            armed_100k: list[float] = []
            # Interleaved, so that a drift of the machine's speed hits both alike.
            for _ in range(2):
                plain.append(asyncio.run(closed_loop(target, args.window)))
                far = datetime.now(UTC) + timedelta(days=1)
                seed(database, "far", far, FAR, timedelta(milliseconds=1))
                asyncio.run(closed_loop(target, 2.0))  # warm-up on the grown tables
                armed_100k.append(asyncio.run(closed_loop(target, args.window)))
                unseed(database, "far")
                asyncio.run(closed_loop(target, 2.0))
            seed(database, "far", datetime.now(UTC) + timedelta(days=1), FAR, timedelta(0))
        results["start_to_complete_per_s"] = {
            "no_timers": plain,
            "with_100k_armed": armed_100k,
            "ratio": statistics.mean(armed_100k) / statistics.mean(plain),
        }
        for replicas, key in ((1, "one_replica"), (2, "two_replicas")):
            results[key] = coming_due(
                database, definitions, logs, replicas=replicas, rate=args.rate, seconds=args.seconds
            )
        results["claim_us_per_timer"] = claim_cost(database)
    print(json.dumps(results, indent=2))
    ratio = results["start_to_complete_per_s"]["ratio"]
    p99 = max(results["one_replica"]["lag_p99_ms"], results["two_replicas"]["lag_p99_ms"])
    print(f"goal p99 fire lag <= 1000 ms: {p99:.0f} ms: {'met' if p99 <= 1000 else 'NOT met'}")
    print(f"goal 100k armed ratio >= 0.95: {ratio:.2f}: {'met' if ratio >= 0.95 else 'NOT met'}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
