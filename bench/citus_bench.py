"""The Citus benchmark: what a step costs each node, on Citus and on one PostgreSQL.

Not a test. Run it through bench/run_citus.sh, which starts a private PostgreSQL and a
private Citus cluster (a coordinator and 1, 2 or 4 workers) for each invocation:

    bench/run_citus.sh                   # 1, 2 and 4 workers, about 8 minutes
    bench/run_citus.sh --quick           # shorter windows, a smoke run
    bench/run_citus.sh --rate 150        # both databases offered 150 steps/s (open loop)
    .venv/bin/python bench/citus_bench.py --report DIR   # the tables and the cost model

One invocation (one worker count) runs, on 127.0.0.1 only, one ``statewrightd serve`` on a
fresh database of the PostgreSQL and one on a fresh Citus database (Citus's default 32
shards per table), the scenarios start-to-complete (one step per operation) and human in
the loop (a start and a resume: two steps) against each, interleaved (PostgreSQL, Citus,
PostgreSQL, Citus, ...), closed loop with the Go load generator. Over each measured window
it reads the CPU each process tree used: statewrightd, the PostgreSQL, the coordinator and
each worker. Every node of this machine shares its two cores, so throughput here is no
scaling curve: what it measures is the CPU a step costs each node, which is what a cost
model for a real cluster needs. ``--report`` turns the runs' results into the tables of
BENCHMARKS.md and bench/NOTES.md and the cost model for 100,000 steps a second.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg

# bench/ is a directory of scripts: import its siblings (and the tests' Citus helpers,
# which make a database on every node) from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.runtime_bench import (
    _postgres_pids,
    _proc_cpu,
    _tree_cpu,
    background_cores,
    settle,
    start_statewrightd,
)
from tests.support import citus

SCENARIOS = {"start": 1, "hitl": 2}  # steps per operation
# Goal: the coordinator spends at most this share of what one PostgreSQL spends a step.
COORDINATOR_GOAL = 0.5
TARGET_STEPS = 100_000  # steps a second, for the cost model
NODE_CORES = 16  # cores of one database node in the cost model
REPLICA_CORES = 1.0  # a statewrightd process is one EventLoop: about a core at most


def _ports(admin_url: str) -> int:
    return int(admin_url.rsplit(":", 1)[1].split("/", 1)[0])


def _node_cpu(port: int) -> float:
    """CPU seconds of the PostgreSQL on ``port``: the postmaster, its live children, and
    the children it has reaped (their time is in the postmaster's cutime)."""
    pids = _postgres_pids(port)
    if not pids:
        return 0.0
    postmaster, children = pids[0], pids[1:]
    try:
        text = Path(f"/proc/{postmaster}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    own = sum(int(v) for v in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return own + sum(_proc_cpu(f"/proc/{pid}/stat") for pid in children)


class Probe:
    """Cumulative CPU seconds per role: the server and every database node."""

    def __init__(self, server_pid: int, nodes: dict[str, int]) -> None:
        self.server_pid = server_pid
        self.nodes = nodes

    def __call__(self) -> dict[str, float]:
        snap = {"server": _tree_cpu(self.server_pid)}
        for name, port in self.nodes.items():
            snap[name] = _node_cpu(port)
        return snap


def _fresh_postgres(admin: str) -> str:
    name = f"sw_bench_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return citus.with_database(admin, name)


def measure(
    kind: str, database: str, nodes: dict[str, int], args: argparse.Namespace, logs: Path
) -> list[dict[str, Any]]:
    """Every scenario against one statewrightd on ``database``."""
    served = start_statewrightd(database, logs, index=len(list(logs.iterdir())))
    results = []
    try:
        probe = Probe(served.process.pid, nodes)
        for scenario, steps in SCENARIOS.items():
            settle(served)
            plan = loadgen.Plan(
                target=served.target,
                scenario=scenario,
                processes=1,
                concurrency=args.concurrency,
                rate=args.rate / steps,
                duration=args.duration,
                warmup=args.warmup,
                engine="go",
            )
            summary = loadgen.run(plan, probe)
            step_rate = summary.throughput * steps
            per_step = {
                role: 1000 * cores / step_rate if step_rate else 0.0
                for role, cores in summary.cpu.items()
            }
            print(
                f"{kind:<9} {scenario:<6} {summary.throughput:7,.0f} ops/s "
                f"({step_rate:,.0f} steps/s)  p50 {summary.p50_ms:.1f} ms p99 "
                f"{summary.p99_ms:.1f} ms  CPU ms/step "
                + "  ".join(f"{r} {v:.3f}" for r, v in per_step.items())
                + (f"  errors {summary.errors}" if summary.errors else ""),
                flush=True,
            )
            results.append(
                {
                    "kind": kind,
                    "scenario": scenario,
                    "ops": summary.throughput,
                    "steps": step_rate,
                    "p50_ms": summary.p50_ms,
                    "p99_ms": summary.p99_ms,
                    "errors": summary.errors,
                    "cores": summary.cpu,
                    "ms_per_step": per_step,
                }
            )
    finally:
        served.process.terminate()
        served.process.wait(30)
    return results


def run(args: argparse.Namespace) -> None:
    pg_admin = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    citus_admin = citus.citus_admin_url()
    ports = [int(p) for p in os.environ["STATEWRIGHT_TEST_CITUS_PORTS"].split()]
    workers = len(ports) - 1
    citus_nodes = {"coordinator": ports[0]} | {f"worker{i}": p for i, p in enumerate(ports[1:], 1)}
    background = background_cores()
    out: dict[str, Any] = {
        "workers": workers,
        "background_cores": background,
        "load_before": os.getloadavg(),
        "offered_steps": args.rate,
        "runs": [],
    }
    print(f"citus bench: {workers} worker(s), {background:.2f} cores busy before", flush=True)
    with tempfile.TemporaryDirectory(prefix="citus-bench-") as tmp:
        logs = Path(tmp)
        for _round in range(args.rounds):
            for kind in ("postgres", "citus"):
                if kind == "postgres":
                    database = _fresh_postgres(pg_admin)
                    nodes = {"postgres": _ports(pg_admin)}
                else:
                    database = citus.create_database(citus_admin, shards=None)
                    nodes = citus_nodes
                out["runs"] += measure(kind, database, nodes, args, logs)
    out["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"citus-{workers}.json").write_text(json.dumps(out, indent=2))


# -- the report ---------------------------------------------------------------------------


def _median(runs: list[dict[str, Any]], key: str) -> float:
    values = [r["ms_per_step"].get(key, 0.0) for r in runs]
    return statistics.median(values) if values else 0.0


def report(directory: Path) -> str:
    lines: list[str] = []
    model: dict[int, dict[str, float]] = {}
    for path in sorted(directory.glob("citus-*.json")):
        data = json.loads(path.read_text())
        n = data["workers"]
        load = ", ".join(f"{v:.1f}" for v in data["load_before"])
        offered = data.get("offered_steps", 0.0)
        loop = f"{offered:,.0f} steps/s offered to each" if offered else "closed loop"
        lines.append(
            f"\n{n} worker(s), {loop} (load average before: {load}; "
            f"{data['background_cores']:.2f} cores busy with others' work)\n"
        )
        lines.append(
            "| scenario | database | steps/s | p50 / p99 ms | CPU ms per step: statewrightd | "
            "PostgreSQL or coordinator | workers (sum) | coordinator / PostgreSQL |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|")
        for scenario in SCENARIOS:
            runs = {
                kind: [r for r in data["runs"] if r["kind"] == kind and r["scenario"] == scenario]
                for kind in ("postgres", "citus")
            }
            pg = _median(runs["postgres"], "postgres")
            for kind in ("postgres", "citus"):
                rs = runs[kind]
                if not rs:
                    continue
                steps = statistics.median(r["steps"] for r in rs)
                p50 = statistics.median(r["p50_ms"] for r in rs)
                p99 = statistics.median(r["p99_ms"] for r in rs)
                server = _median(rs, "server")
                if kind == "postgres":
                    db, workers, ratio = pg, 0.0, ""
                else:
                    db = _median(rs, "coordinator")
                    workers = sum(_median(rs, f"worker{i}") for i in range(1, n + 1))
                    ratio = f"{db / pg:.2f}" if pg else ""
                    model.setdefault(n, {})[scenario] = 0.0
                    model[n] |= {
                        f"{scenario}:server": server,
                        f"{scenario}:coordinator": db,
                        f"{scenario}:workers": workers,
                        f"{scenario}:postgres": pg,
                    }
                lines.append(
                    f"| {scenario} | {kind} | {steps:,.0f} | {p50:.1f} / {p99:.1f} | "
                    f"{server:.3f} | {db:.3f} | {workers:.3f} | {ratio} |"
                )
    lines.append(_cost_model(model))
    return "\n".join(lines)


def _cost_model(model: dict[int, dict[str, float]]) -> str:
    """Cores and nodes for TARGET_STEPS steps a second, from the per-step costs of the
    largest cluster measured (the per-node cost of a step hardly depends on the count)."""
    if not model:
        return ""
    n = max(model)
    costs = model[n]
    lines = [
        f"\nCost model for {TARGET_STEPS:,} steps/s, from the {n}-worker figures "
        f"({NODE_CORES}-core database nodes, statewrightd at most {REPLICA_CORES:.0f} core "
        "a process):\n",
        "| scenario | statewrightd cores (processes) | coordinator cores | worker cores "
        "(nodes) | one PostgreSQL would need |",
        "|---|---:|---:|---:|---:|",
    ]
    for scenario in SCENARIOS:
        server = costs.get(f"{scenario}:server", 0.0) * TARGET_STEPS / 1000
        coordinator = costs.get(f"{scenario}:coordinator", 0.0) * TARGET_STEPS / 1000
        workers = costs.get(f"{scenario}:workers", 0.0) * TARGET_STEPS / 1000
        pg = costs.get(f"{scenario}:postgres", 0.0) * TARGET_STEPS / 1000
        lines.append(
            f"| {scenario} | {server:.0f} ({server / REPLICA_CORES:.0f}) | {coordinator:.1f} | "
            f"{workers:.0f} ({workers / NODE_CORES:.1f}) | {pg:.0f} cores on one node |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("build/bench-citus"))
    parser.add_argument("--report", type=Path, help="print the tables of a directory of runs")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--duration", type=float, default=12.0)
    parser.add_argument("--concurrency", type=int, default=48)
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="steps/s offered to both databases alike (open loop; 0: closed loop, each as fast "
        "as it goes, which gives the slower one smaller group commits)",
    )
    parser.add_argument("--quick", action="store_true", help="1 round, 1 s warmup, 5 s windows")
    args = parser.parse_args()
    if args.report is not None:
        text = report(args.report)
        print(text)
        (args.report / "results.md").write_text(text + "\n")
        return
    if args.quick:
        args.rounds, args.warmup, args.duration = 1, 1.0, 5.0
    started = time.monotonic()
    run(args)
    print(f"citus bench: done in {time.monotonic() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
