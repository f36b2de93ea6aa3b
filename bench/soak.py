"""The retention soak: a flat database under hours of load, in 20 minutes.

Not a test. On a fresh database of the PostgreSQL named by ``--database`` (default: the
one ``scripts/with-postgres`` started) it runs one ``statewrightd serve`` with a retention
of 2 minutes and a request window of 1 minute, then:

1. **Capacity, before any purge work**: human in the loop (mail-approval: a start, then a
   resume to COMPLETED, every call with a request id) in a closed loop for 20 s; the
   maximum it reaches is M.
2. **The soak**: the same workflow open loop at M/2 (or ``--rate``) for 20 minutes (goload
   with ``--series-every``: completions and latencies per 10 s). Every 30 s the orchestrator
   reads the size of every Statewright table with its indexes and TOAST
   (``pg_total_relation_size``), the tables' live and dead rows and autovacuum counts,
   and the server's retention diagnostics.
3. **Capacity, with the purge at work**: the closed loop again for 20 s, while the purge
   removes what the soak finished two minutes before.

It reports: the size samples, and how far those after the first 5 minutes stray from
their mean (the goal: within ±10%); start-to-complete throughput and latency in the first
minute (nothing is old enough to purge: request records expire after 1 minute, instances
2 minutes after they finish) against minutes 5 to 20 (the purge removing as much as the
load adds), and the two capacities (goal: with purge ≥ 0.9 of without); the server's CPU
per workflow in both phases; bytes per workflow at steady state.

    bench/run_soak.sh                      # the whole run, ~24 minutes
    bench/run_soak.sh --minutes 6          # a shorter soak (the 5-minute mark still holds)
    bench/run_soak.sh --out DIR            # also DIR/soak.json and DIR/soak.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import grpc
import psycopg
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.loadgen import Plan
from bench.runtime_bench import (
    ROOT,
    Served,
    _launch,
    _machine_busy,
    _postgres_pids,
    _proc_cpu,
)
from bench.storage_bytes import with_database

RETENTION = "2m"
REQUEST_WINDOW = "1m"
SAMPLE_EVERY = 30.0
SERIES_EVERY = 10.0
STEADY_AFTER = 300.0  # seconds: the size goal holds from here on
QUIET_WINDOW = (10.0, 60.0)  # seconds of the soak with nothing old enough to purge
PROBE_SECONDS = 20.0
TABLES = (
    "workflow_instances",
    "workflow_history",
    "workflow_requests",
    "workflow_timers",
    "workflow_tasks",
    "workflow_tombstones",
    "workflow_definitions",
    "statewright_schema_version",
)


def start_server(database: str, logs: Path) -> Served:
    argv = [
        str(Path(sys.executable).parent / "statewrightd"),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database",
        database,
        "--definitions",
        str(ROOT / "examples" / "definitions"),
        "--retention",
        RETENTION,
        "--request-window",
        REQUEST_WINDOW,
        # One process, as every benchmark server: its CPU is then one /proc entry's.
        "--processes",
        "1",
        "--log-level",
        "INFO",  # the "serving on" line is INFO
    ]
    return _launch("statewrightd", argv, logs / "statewrightd.log", r"serving on [\d.]+:(\d+)")


class Usage:
    """Cumulative CPU seconds of the machine, of this server and of PostgreSQL: two
    snapshots give each one's cores over a window, and what other work took."""

    def __init__(self, server_pid: int, postgres_port: int) -> None:
        self._server = server_pid
        self._port = postgres_port

    def snapshot(self) -> dict[str, float]:
        postgres = sum(_proc_cpu(f"/proc/{pid}/stat") for pid in _postgres_pids(self._port))
        return {
            "at": time.monotonic(),
            "machine": _machine_busy(),
            "server": _proc_cpu(f"/proc/{self._server}/stat"),
            "postgres": postgres,
        }

    @staticmethod
    def cores(a: dict[str, float], b: dict[str, float], client: float) -> dict[str, float]:
        """Cores each used between snapshots ``a`` and ``b``; ``client``: the load's cores."""
        seconds = max(1e-9, b["at"] - a["at"])
        out = {k: (b[k] - a[k]) / seconds for k in ("machine", "server", "postgres")}
        out["client"] = client
        out["other"] = max(0.0, out["machine"] - out["server"] - out["postgres"] - client)
        return out


def capacity(target: str, usage: Usage) -> dict[str, Any]:
    plan = Plan(
        target=target,
        scenario="hitl",
        processes=1,
        concurrency=48,
        warmup=3.0,
        duration=PROBE_SECONDS,
        request_ids=True,
        engine="go",
    )
    before = usage.snapshot()
    summary = loadgen.run(plan)
    cores = Usage.cores(before, usage.snapshot(), summary.client_cpu)
    print(
        f"  capacity: {summary.line().strip()}  (other work on the machine: "
        f"{cores['other']:.2f} cores)",
        flush=True,
    )
    return {"throughput": summary.throughput, "p99_ms": summary.p99_ms, "cores": cores}


def sample(database: str, stub: pb_grpc.WorkflowServiceStub, began: float) -> dict[str, Any]:
    with psycopg.connect(database, autocommit=True) as conn:
        rows = conn.execute(
            """
SELECT c.relname, pg_table_size(c.oid), pg_total_relation_size(c.oid),
       coalesce(s.n_live_tup, 0), coalesce(s.n_dead_tup, 0), coalesce(s.autovacuum_count, 0)
  FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
 WHERE c.relkind = 'r' AND c.relname = ANY(%s)
""",
            (list(TABLES),),
        ).fetchall()
    retention = stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=10).retention
    tables = {
        r[0]: {
            "table": int(r[1]),
            "indexes": int(r[2] - r[1]),
            "live": int(r[3]),
            "dead": int(r[4]),
            "autovacuums": int(r[5]),
        }
        for r in rows
    }
    return {
        "at": time.monotonic() - began,
        "bytes": sum(t["table"] + t["indexes"] for t in tables.values()),
        "tables": tables,
        "purged_instances": retention.instances_purged,
        "purged_requests": retention.requests_purged,
        "overdue_instances": retention.overdue_instances,
        "oldest_overdue_s": retention.oldest_overdue_instance_age.ToTimedelta().total_seconds(),
    }


def soak(target: str, rate: float, seconds: float) -> subprocess.Popen[bytes]:
    argv = [
        str(loadgen.goload_binary()),
        "--target",
        target,
        "--scenario",
        "hitl",
        "--rate",
        f"{rate:.1f}",
        "--concurrency",
        "256",
        "--warmup",
        "0",
        "--duration",
        f"{seconds:.0f}",
        "--request-ids",
        "--series-every",
        f"{SERIES_EVERY:g}",
    ]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def phase(series: list[dict[str, Any]], start: float, end: float) -> dict[str, float]:
    buckets = [
        b
        for i, b in enumerate(series)
        if start <= i * SERIES_EVERY and (i + 1) * SERIES_EVERY <= end
    ]
    latencies = [x for b in buckets for x in b["latencies"]]
    window = len(buckets) * SERIES_EVERY
    return {
        "seconds": window,
        "workflows": sum(b["ops"] for b in buckets),
        "throughput": sum(b["ops"] for b in buckets) / window if window else 0.0,
        "p50_ms": percentile(latencies, 0.5) * 1000,
        "p99_ms": percentile(latencies, 0.99) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL"))
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument(
        "--settle",
        type=float,
        default=150.0,
        help="seconds between the first capacity probe and the soak, for the probe's "
        "workflows to expire and go (default 150)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        help="the soak's offered rate, workflows/s (default: half the first capacity probe's "
        "throughput; on a shared machine that probe may run while others' work takes cores, "
        "so a rate from a quiet probe of another run can be given instead)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not args.database:
        parser.error("--database (or STATEWRIGHT_TEST_POSTGRES_URL) is required")
    seconds = args.minutes * 60
    name = f"sw_soak_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.database, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    url = with_database(args.database, name)
    result: dict[str, Any] = {"retention": RETENTION, "request_window": REQUEST_WINDOW}
    with tempfile.TemporaryDirectory(prefix="sw-soak-") as tmp:
        served = start_server(url, Path(tmp))
        channel = grpc.insecure_channel(served.target)
        stub = pb_grpc.WorkflowServiceStub(channel)
        usage = Usage(served.process.pid, urlsplit(args.database).port or 5432)
        try:
            print("capacity before the soak (nothing to purge yet)", flush=True)
            before = capacity(served.target, usage)
            rate = args.rate or before["throughput"] / 2
            result.update(capacity_before=before, rate=rate, minutes=args.minutes)
            # Let the probe's workflows expire and be purged before the soak starts from a
            # clean slate: the soak's first minute is then a minute without purge work.
            time.sleep(args.settle)
            print(f"soak: {rate:.0f} workflows/s for {args.minutes:g} minutes", flush=True)
            began = time.monotonic()
            cpu_at: dict[str, float] = {}
            load = soak(served.target, rate, seconds)
            samples: list[dict[str, Any]] = []
            stop = threading.Event()

            snapshots: dict[str, dict[str, float]] = {}

            def cpu_mark(name: str, at: float) -> None:
                stop.wait(max(0.0, began + at - time.monotonic()))
                snapshots[name] = usage.snapshot()
                cpu_at[name] = snapshots[name]["server"]

            marks = [
                threading.Thread(target=cpu_mark, args=(n, t), daemon=True)
                for n, t in (
                    ("quiet_start", QUIET_WINDOW[0]),
                    ("quiet_end", QUIET_WINDOW[1]),
                    ("steady_start", STEADY_AFTER),
                    ("steady_end", seconds),
                )
            ]
            for mark in marks:
                mark.start()
            for n in range(int(seconds // SAMPLE_EVERY) + 1):
                stop.wait(max(0.0, began + n * SAMPLE_EVERY - time.monotonic()))
                if load.poll() is not None and n * SAMPLE_EVERY < seconds:
                    break
                samples.append(sample(url, stub, began))
                last = samples[-1]
                print(
                    f"  {last['at']:6.0f} s  {last['bytes'] / 1e6:7.1f} MB  purged "
                    f"{last['purged_instances']:,} instances  overdue "
                    f"{last['overdue_instances']:,} (oldest {last['oldest_overdue_s']:.1f} s)",
                    flush=True,
                )
            out, err = load.communicate(timeout=seconds + 120)
            if load.returncode != 0:
                raise RuntimeError(f"goload failed: {err.decode()[-2000:]}")
            report = json.loads(out)
            for mark in marks:
                mark.join(5)
            print("capacity after the soak (the purge at work)", flush=True)
            after = capacity(served.target, usage)
            # Once the soak's workflows are gone, the same probe without purge work again:
            # on a shared machine the two probes without it bracket the one with it.
            time.sleep(args.settle)
            print("capacity once everything has expired (nothing to purge)", flush=True)
            again = capacity(served.target, usage)
            result.update(
                capacity_after=after,
                capacity_again=again,
                samples=samples,
                errors=report["errors"],
                offered=rate,
            )
            series = report["series"]
            result["quiet"] = phase(series, *QUIET_WINDOW)
            result["steady"] = phase(series, STEADY_AFTER, seconds)
            for key, (a, b) in {
                "quiet": ("quiet_start", "quiet_end"),
                "steady": ("steady_start", "steady_end"),
            }.items():
                if a in cpu_at and b in cpu_at and result[key]["workflows"]:
                    cpu = cpu_at[b] - cpu_at[a]
                    result[key]["server_cpu_ms_per_workflow"] = (
                        cpu / result[key]["workflows"] * 1000
                    )
        finally:
            channel.close()
            served.stop()
    with psycopg.connect(args.database, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    if args.out:
        # The figures first: a report can be made again from them (summarize()).
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "soak.json").write_text(json.dumps(result, indent=2))
    text = summarize(result)
    print(text)
    if args.out:
        (args.out / "soak.md").write_text(text + "\n")


def summarize(r: dict[str, Any]) -> str:
    steady = [s for s in r["samples"] if s["at"] >= STEADY_AFTER]
    sizes = [s["bytes"] for s in steady]
    mean = statistics.mean(sizes) if sizes else 0.0
    spread = (min(sizes) / mean - 1, max(sizes) / mean - 1) if sizes else (0.0, 0.0)
    quiet, busy = r["quiet"], r["steady"]
    # Workflows the database holds at steady state: those finished within the retention
    # (plus the purge's lag), and their request records for the window.
    held = steady[-1]["tables"]["workflow_instances"]["live"] if steady else 0
    lines = [
        f"retention {r['retention']}, request window {r['request_window']}; "
        f"HITL open loop at {r['rate']:.0f}/s (the first probe reached "
        f"{r['capacity_before']['throughput']:.0f}/s) for "
        f"{r['minutes']:g} min",
        "",
        "| at (s) | size (MB) | instances | history | requests | dead rows | autovacuums |"
        " purged | overdue |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in r["samples"]:
        t = s["tables"]
        dead = sum(v["dead"] for v in t.values())
        vacuums = sum(v["autovacuums"] for v in t.values())
        lines.append(
            f"| {s['at']:.0f} | {s['bytes'] / 1e6:.1f} | {t['workflow_instances']['live']:,} |"
            f" {t['workflow_history']['live']:,} | {t['workflow_requests']['live']:,} |"
            f" {dead:,} | {vacuums} | {s['purged_instances']:,} | {s['overdue_instances']:,} |"
        )
    ratio = busy["throughput"] / quiet["throughput"] if quiet["throughput"] else 0.0
    without = (r["capacity_before"]["throughput"] + r["capacity_again"]["throughput"]) / 2
    capacity_ratio = r["capacity_after"]["throughput"] / without if without else 0.0
    lines += [
        "",
        f"size after {STEADY_AFTER / 60:g} min: mean {mean / 1e6:.1f} MB, "
        f"{spread[0]:+.1%} .. {spread[1]:+.1%} of it over {len(sizes)} samples "
        f"({'within' if max(abs(x) for x in spread) <= 0.10 else 'OUTSIDE'} ±10%)",
        f"throughput: first minute (nothing to purge) {quiet['throughput']:.1f}/s "
        f"(p50 {quiet['p50_ms']:.1f} ms, p99 {quiet['p99_ms']:.1f} ms); minutes "
        f"{STEADY_AFTER / 60:g}-{r['minutes']:g} (purging) {busy['throughput']:.1f}/s "
        f"(p50 {busy['p50_ms']:.1f} ms, p99 {busy['p99_ms']:.1f} ms): ratio {ratio:.3f}",
        f"capacity (closed loop, 20 s each): before {r['capacity_before']['throughput']:.0f}/s, "
        f"with the purge at work {r['capacity_after']['throughput']:.0f}/s, once all is gone "
        f"{r['capacity_again']['throughput']:.0f}/s: with / mean of without {capacity_ratio:.3f}"
        " (other work on the machine: "
        + ", ".join(
            f"{r[k]['cores']['other']:.2f}"
            for k in ("capacity_before", "capacity_after", "capacity_again")
        )
        + " cores)",
        f"server CPU per workflow: {quiet.get('server_cpu_ms_per_workflow', 0):.2f} ms without "
        f"purge work, {busy.get('server_cpu_ms_per_workflow', 0):.2f} ms with",
        f"errors: {r['errors'] or 'none'}",
    ]
    if held:
        lines.append(
            f"steady state: {held:,} instances held, {mean / held:,.0f} bytes of database per "
            "instance held (its history, its request records for the window, free space)"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
