"""The goal run of ``make bench``: every performance goal measured in one run, as a table.

Not a test. bench/runtime_bench.py runs it by default (``--classic`` runs the older,
longer sequence instead). On one private PostgreSQL, on 127.0.0.1, in this order:

1. one server process (``serve --processes 1``) beside the bare grpc.aio echo:
   the echo and start-to-complete in closed loop (their throughput ratio), start-to-complete
   open loop at 100/s and at 10/s (server CPU per step), human in the loop (HITL) in closed
   loop (its maximum), then open loop at 60% and 25% of that maximum (p99), then up or
   down from 60% in steps of a tenth (at most four runs) for the highest offered rate whose
   p99 stays within the SLO, then HITL with 16 in flight (the peer comparison's shape);
2. the same HITL sequence with two server processes on one port (``--processes 2``);
3. the peers, each on its own best set-up, HITL with 16 in flight (bench/peers/run.py);
4. tasks: two replicas, four worker processes (bench/task_bench.py, one run each with
   workers in Go and in Python, the same servers); the goal lines read the Go workers'
   run, whose own CPU takes least of the cores the servers share, so that the figure is
   the service's; the Python workers' is shown beside it;
5. start-to-complete over TLS with JWT against plaintext (bench/security_bench.py, one
   round with each client on the same servers: bench/goload, then grpc.aio in Python);
   the goal line reads goload's, whose client costs least of the shared cores, so that
   the ratio is the server's; the Python clients' is shown beside it.

Steps 4 and 5 run as the scripts they are, on the same PostgreSQL, and are read from the
JSON report each prints (``--no-sidecars`` leaves them out).

Every window is bounded (warm-up plus a few seconds); every loop has a fixed number of
steps. CPU is read from /proc for each role: the server's whole process tree (supervisor
and server processes), PostgreSQL, the load process.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

# bench/ is a directory of scripts: import the siblings from the repository root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.loadgen import Plan
from bench.runtime_bench import (
    ROOT,
    Case,
    CpuProbe,
    Fleet,
    Outcome,
    Served,
    run_case,
    start_echo,
    start_statewrightd,
    wait_for_quiet,
)

PEERS_PYTHON = ROOT / ".cache" / "peers-venv" / "bin" / "python"
PEERS_RUN = ROOT / "bench" / "peers" / "run.py"
PEERS_TIMEOUT = 900.0

RATIO_GOAL = 0.45
CPU_AT_100_GOAL_MS = 1.2
CPU_AT_10_GOAL_MS = 2.0
TASK_STEPS_GOAL = 1000.0
TASK_CPU_GOAL_MS = 1.0
# The task goals read the first engine's run (its own CPU takes least of the shared cores);
# the second runs too, on the same servers, and is shown beside it.
TASK_ENGINES = ("go", "python")
# How the goal table names each engine's workers.
ENGINE_NAMES = {"go": "Go", "python": "Python", "java": "Java"}
TLS_RATIO_GOAL = 0.85
# The TLS goal reads the first client's run (goload: the least client CPU on the shared
# cores), the second beside it, both on the same servers in the same round.
TLS_CLIENTS = ("go", "python")
PEER_RATIO_GOAL = 10.0
SIDECAR_TIMEOUT = 600.0
P99_AT_60_GOAL_MS = 50.0
P99_AT_25_GOAL_MS = 20.0
SLO_MS = 50.0
PEER_LANES = 16
# The SLO search: up from 60% of the closed-loop maximum, or down, a tenth at a time.
SLO_UP = (0.7, 0.8, 0.9, 1.0)
SLO_DOWN = (0.5, 0.4, 0.3, 0.2)
# At 10/s a window of a few seconds holds too few steps for /proc's 10 ms CPU ticks.
LOW_RATE_WINDOW = 15.0


@dataclass
class Row:
    goal: str
    target: str
    measured: str
    met: bool

    def line(self) -> str:
        mark = "met" if self.met else "NOT MET"
        return f"| {self.goal} | {self.target} | {self.measured} | {mark} |"


@dataclass
class HitlFigures:
    processes: int
    closed_max: float
    at_60: Outcome
    at_25: Outcome
    slo_fraction: float  # of the closed-loop maximum: the highest tried with p99 <= SLO_MS
    slo_rate: float  # that offered rate (0: none passed)
    slo_tried: list[tuple[float, float]]  # (offered rate, p99 ms)
    at_16: Outcome


def _ok(outcome: Outcome, limit_ms: float) -> bool:
    s = outcome.summary
    return not s.errors and s.ops > 0 and s.p99_ms <= limit_ms


def _server_ms(outcome: Outcome) -> float:
    s = outcome.summary
    return 1000 * s.cpu.get("server", 0.0) / s.throughput if s.throughput else 0.0


class Runner:
    def __init__(self, args: argparse.Namespace, probe_pg_port: int) -> None:
        self.args = args
        self.pg_port = probe_pg_port
        self.outcomes: list[Outcome] = []
        self.base = Plan(
            target="",
            scenario="start",
            processes=args.processes,
            concurrency=args.concurrency,
            warmup=args.warmup,
            duration=args.duration,
            engine=args.loadgen,
        )
        self.open_cap = max(256, args.concurrency * 16)

    def run(
        self, label: str, against: str, plan: Plan, fleet: Fleet, *, by_cpu: bool = False
    ) -> Outcome:
        """The case ``--repeat`` times in a row; the run with the median figure stands for
        it (p99 in open loop, where the goals are latencies, or the server's CPU per step
        with ``by_cpu``; throughput in closed loop)."""
        probe = CpuProbe(fleet.servers, [], [fleet.echo_direct, fleet.echo_hop], self.pg_port)
        runs = []
        for _ in range(self.args.repeat):
            outcome = run_case(Case(label, against, plan), fleet, probe)
            self.outcomes.append(outcome)
            runs.append(outcome)
        if by_cpu:
            runs.sort(key=_server_ms)
        elif plan.rate > 0:
            runs.sort(key=lambda o: (bool(o.summary.errors), o.summary.p99_ms))
        else:
            runs.sort(key=lambda o: o.summary.throughput)
        return runs[len(runs) // 2]

    def open_plan(self, scenario: str, rate: float, duration: float | None = None) -> Plan:
        return replace(
            self.base,
            scenario=scenario,
            rate=rate,
            concurrency=self.open_cap,
            duration=duration or self.base.duration,
        )

    def hitl(self, fleet: Fleet, tag: str) -> HitlFigures:
        closed = self.run(
            f"(b) HITL closed loop, {tag}", "server", replace(self.base, scenario="hitl"), fleet
        )
        top = closed.summary.throughput
        runs: dict[float, Outcome] = {}  # by fraction of the closed-loop maximum

        def at(fraction: float) -> bool:
            rate = max(5.0, round(top * fraction))
            runs[fraction] = self.run(
                f"(b) HITL @ {fraction:.0%} of max ({rate:,.0f}/s), {tag}",
                "server",
                self.open_plan("hitl", rate),
                fleet,
            )
            return _ok(runs[fraction], SLO_MS)

        at(0.6)
        at(0.25)
        if _ok(runs[0.6], SLO_MS):
            for fraction in SLO_UP:
                if not at(fraction):
                    break
        else:
            for fraction in SLO_DOWN:
                if at(fraction):
                    break
        passing = [f for f, o in runs.items() if _ok(o, SLO_MS)]
        at_16 = self.run(
            f"(b) HITL, {PEER_LANES} in flight, {tag}",
            "server",
            replace(self.base, scenario="hitl", concurrency=PEER_LANES, processes=1),
            fleet,
        )
        best = max(passing, default=0.0)
        return HitlFigures(
            processes=fleet.pod_processes,
            closed_max=top,
            at_60=runs[0.6],
            at_25=runs[0.25],
            slo_fraction=best,
            slo_rate=runs[best].summary.offered_rate if passing else 0.0,
            slo_tried=sorted((o.summary.offered_rate, o.summary.p99_ms) for o in runs.values()),
            at_16=at_16,
        )


@contextlib.contextmanager
def server_fleet(
    database: str, logs: Path, processes: int, echoes: tuple[Served, Served], patches: list[str]
) -> Iterator[Fleet]:
    served = start_statewrightd(
        database, logs, index=processes, patches=patches, processes=processes
    )
    try:
        yield Fleet([served], [], echoes[0], echoes[1], pod_processes=processes)
    finally:
        served.stop()


def run_goals(args: argparse.Namespace, database: str, pg_port: int, logs: Path) -> dict[str, Any]:
    runner = Runner(args, pg_port)
    echoes = (start_echo("direct", logs), start_echo("hop", logs))
    try:
        with server_fleet(database, logs, 1, echoes, args.server_patch) as one:
            echo = runner.run("(c) echo", "echo-direct", replace(runner.base, scenario="echo"), one)
            start = runner.run("(a) start-to-complete, 1 process", "server", runner.base, one)
            at_100 = runner.run(
                "(a) start-to-complete @ 100/s, 1 process",
                "server",
                runner.open_plan("start", 100),
                one,
                by_cpu=True,
            )
            at_10 = runner.run(
                "(a) start-to-complete @ 10/s, 1 process",
                "server",
                runner.open_plan("start", 10, max(LOW_RATE_WINDOW, args.duration)),
                one,
                by_cpu=True,
            )
            hitl_one = runner.hitl(one, "1 process")
        hitls = [hitl_one]
        if args.two:
            with server_fleet(database, logs, 2, echoes, args.server_patch) as two:
                start_two = runner.run(
                    "(a) start-to-complete, 2 processes", "server", runner.base, two
                )
                hitls.append(runner.hitl(two, "2 processes"))
    finally:
        for echo_server in echoes:
            echo_server.stop()
    peers = run_peers(args, database) if args.peers else []
    sidecars = run_sidecars(args, database) if args.sidecars else {}
    rows = goal_rows(echo, start, at_100, at_10, hitls)
    rows += sidecar_rows(sidecars) + peer_rows(hitls[0], peers)
    return {
        "rows": [asdict(r) for r in rows],
        "table": goal_table(rows),
        "peers_table": peer_table(hitls, peers),
        "peers": peers,
        "extra": {
            "start_two_processes": start_two.summary.throughput if args.two else None,
            "slo_tried": {h.processes: h.slo_tried for h in hitls},
            "sidecars": sidecars,
        },
        "outcomes": runner.outcomes,
    }


def shown_ratio(value: float, goal: float) -> str:
    """``value`` to two places, or three when two would show the goal it does not meet
    (0.846 against 0.85)."""
    shown = f"{value:.2f}"
    return f"{value:.3f}" if shown == f"{goal:.2f}" and value < goal else shown


def goal_rows(
    echo: Outcome, start: Outcome, at_100: Outcome, at_10: Outcome, hitls: list[HitlFigures]
) -> list[Row]:
    e, s = echo.summary.throughput, start.summary.throughput
    ratio = s / e if e else 0.0
    rows = [
        Row(
            "start-to-complete throughput / bare echo, 1 process",
            f">= {RATIO_GOAL:.2f}",
            f"{shown_ratio(ratio, RATIO_GOAL)} ({s:,.0f} / {e:,.0f} per s)",
            ratio >= RATIO_GOAL,
        )
    ]
    for outcome, limit, rate in ((at_100, CPU_AT_100_GOAL_MS, 100), (at_10, CPU_AT_10_GOAL_MS, 10)):
        ms = _server_ms(outcome)
        served = outcome.summary.throughput
        rows.append(
            Row(
                f"server CPU per step at {rate}/s offered",
                f"<= {limit:.1f} ms",
                f"{ms:.2f} ms ({served:,.0f}/s served)",
                0 < ms <= limit and not outcome.summary.errors,
            )
        )
    for h in hitls:
        tag = f"{h.processes} process" + ("es" if h.processes > 1 else "")
        for name, outcome, limit in (
            ("60%", h.at_60, P99_AT_60_GOAL_MS),
            ("25%", h.at_25, P99_AT_25_GOAL_MS),
        ):
            sm = outcome.summary
            errors = f", errors {sm.errors}" if sm.errors else ""
            rows.append(
                Row(
                    f"HITL p99 at {name} of the closed-loop maximum, {tag}",
                    f"<= {limit:.0f} ms",
                    f"{sm.p99_ms:.1f} ms at {sm.offered_rate:,.0f}/s "
                    f"(max {h.closed_max:,.0f}/s){errors}",
                    _ok(outcome, limit),
                )
            )
    for h in hitls:
        tag = f"{h.processes} process" + ("es" if h.processes > 1 else "")
        rows.append(
            Row(
                f"HITL throughput at the SLO (p99 <= {SLO_MS:.0f} ms), {tag}",
                ">= 60% of the closed-loop maximum",
                f"{h.slo_rate:,.0f} workflows/s ({h.slo_fraction:.0%} of {h.closed_max:,.0f}/s)",
                h.slo_fraction >= 0.6,
            )
        )
    return rows


def goal_table(rows: list[Row]) -> str:
    lines = ["| goal | target | measured (this run) | |", "|---|---|---|---|"]
    lines += [row.line() for row in rows]
    met = sum(1 for r in rows if r.met)
    lines += ["", f"{met} of {len(rows)} goals met."]
    return "\n".join(lines)


def run_peers(args: argparse.Namespace, database: str) -> list[dict[str, Any]]:
    if not PEERS_PYTHON.exists():
        print("peers: not installed (bench/peers/install.sh): left out", flush=True)
        return [{"peer": "peers", "skipped": "bench/peers/install.sh has not been run"}]
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "peers.json"
        argv = [
            str(PEERS_PYTHON),
            str(PEERS_RUN),
            "--database",
            database,
            "--lanes",
            str(PEER_LANES),
            "--warmup",
            str(args.warmup),
            "--duration",
            str(args.duration),
            "--out",
            str(out),
        ]
        try:
            subprocess.run(argv, check=False, timeout=PEERS_TIMEOUT, cwd=ROOT)
        except subprocess.TimeoutExpired:
            return [{"peer": "peers", "skipped": f"not finished within {PEERS_TIMEOUT:.0f} s"}]
        if not out.exists():
            return [{"peer": "peers", "skipped": "bench/peers/run.py wrote no report"}]
        reports: list[dict[str, Any]] = json.loads(out.read_text())
        return reports


def _sidecar(script: str, argv: list[str], database: str) -> dict[str, Any]:
    """The JSON report ``script`` prints first on its standard output."""
    env = {**os.environ, "STATEWRIGHT_TEST_POSTGRES_URL": database}
    try:
        done = subprocess.run(
            [sys.executable, str(ROOT / "bench" / script), *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            timeout=SIDECAR_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"skipped": f"not finished within {SIDECAR_TIMEOUT:.0f} s"}
    try:
        report, _ = json.JSONDecoder().raw_decode(done.stdout.lstrip())
    except ValueError:
        return {"skipped": f"no report (exit {done.returncode})"}
    return dict(report)


def run_sidecars(args: argparse.Namespace, database: str) -> dict[str, dict[str, Any]]:
    quick = ["--quick"] if args.quick else []
    print("tasks: two replicas, four worker processes (bench/task_bench.py)", flush=True)
    engines = ["--worker-engine", ",".join(TASK_ENGINES)]
    tasks = _sidecar("task_bench.py", ["--repeat", "1", *engines, *quick], database)
    print("TLS + JWT against plaintext (bench/security_bench.py)", flush=True)
    clients = ["--engine", ",".join(TLS_CLIENTS)]
    tls = _sidecar("security_bench.py", ["--rounds", "1", *clients, *quick], database)
    return {"tasks": tasks, "tls": tls}


def _led_and_beside(
    report: dict[str, Any], key: str, engines: tuple[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A sidecar's runs of the two engines (by ``key``): the one its goal lines read and the
    one shown beside it; an empty dict for either that did not run."""
    by_engine = {r.get(key): r for r in report.get("runs") or []}
    return by_engine.get(engines[0], {}), by_engine.get(engines[1], {})


def sidecar_rows(sidecars: dict[str, dict[str, Any]]) -> list[Row]:
    rows: list[Row] = []
    tasks, tls = sidecars.get("tasks"), sidecars.get("tls")
    if tasks is not None:
        run, beside = _led_and_beside(tasks, "worker_engine", TASK_ENGINES)
        named, beside_named = (ENGINE_NAMES[e] for e in TASK_ENGINES)
        steps = float(run.get("task_steps_per_s", 0.0))
        cpu = float(run.get("server_cpu_ms_per_task_step", 0.0))
        left = tasks.get("skipped", "") or ("" if run else f"no run with {named} workers")
        rows += [
            Row(
                "task steps/s, 2 replicas, 4 worker processes",
                f">= {TASK_STEPS_GOAL:,.0f}",
                left
                or f"{steps:,.0f} with {named} workers ({run.get('errors', 0)} errors);"
                f" {beside_named} workers {beside.get('task_steps_per_s', 0.0):,.0f}",
                steps >= TASK_STEPS_GOAL,
            ),
            Row(
                "server CPU per task step",
                f"<= {TASK_CPU_GOAL_MS:.1f} ms",
                left
                or f"{cpu:.2f} ms with {named} workers; {beside_named} workers"
                f" {beside.get('server_cpu_ms_per_task_step', 0.0):.2f} ms",
                0 < cpu <= TASK_CPU_GOAL_MS,
            ),
        ]
    if tls is not None:
        led, beside_run = _led_and_beside(tls, "engine", TLS_CLIENTS)
        start, beside = led.get("start", {}), beside_run.get("start", {})
        named, beside_named = (ENGINE_NAMES[e] for e in TLS_CLIENTS)
        ratio = float(start.get("ratio", 0.0))
        left = tls.get("skipped", "") or ("" if start else f"no run with the {named} client")
        rows.append(
            Row(
                "start-to-complete with TLS + JWT / plaintext",
                f">= {TLS_RATIO_GOAL:.2f}",
                left
                or f"{shown_ratio(ratio, TLS_RATIO_GOAL)} ({start.get('tls_jwt_per_s', 0):,.0f} / "
                f"{start.get('plaintext_per_s', 0):,.0f} per s) with the {named} client;"
                f" {beside_named} clients {float(beside.get('ratio', 0.0)):.2f}",
                ratio >= TLS_RATIO_GOAL,
            ),
        )
    return rows


def peer_rows(hitl: HitlFigures, peers: list[dict[str, Any]]) -> list[Row]:
    measured = [p for p in peers if "skipped" not in p and p.get("throughput")]
    if not measured:
        return []
    best = max(measured, key=lambda p: float(p["throughput"]))
    ours = hitl.at_16.summary.throughput
    ratio = ours / float(best["throughput"])
    return [
        Row(
            f"HITL workflows/s / best peer, {PEER_LANES} in flight, 1 process",
            f">= {PEER_RATIO_GOAL:.0f}x",
            f"{ratio:.1f}x ({ours:,.0f} against {best['peer']}'s {best['throughput']:,.0f})",
            ratio >= PEER_RATIO_GOAL,
        )
    ]


def peer_table(hitls: list[HitlFigures], peers: list[dict[str, Any]]) -> str:
    lines = [
        f"HITL (start, waiting point, resume, completed), {PEER_LANES} workflows in flight, "
        "closed loop, the same machine and PostgreSQL, one after the other:",
        "",
        "| system | set-up | workflows/s | p50 ms | p99 ms | CPU ms per workflow, all roles "
        "| by role |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for h in hitls:
        s = h.at_16.summary
        roles = {
            "server": s.cpu.get("server", 0.0),
            "postgres": s.cpu.get("postgres", 0.0),
            "load (Go)": s.client_cpu,
        }
        per = {k: 1000 * v / s.throughput for k, v in roles.items()} if s.throughput else {}
        shown = ", ".join(f"{k} {v:.2f}" for k, v in per.items())
        plural = "es" if h.processes > 1 else ""
        lines.append(
            f"| Statewright | {h.processes} server process{plural}, PostgreSQL | "
            f"{s.throughput:,.0f} | {s.p50_ms:.1f} | {s.p99_ms:.1f} | {sum(per.values()):.2f} "
            f"| {shown} |"
        )
    for p in peers:
        if "skipped" in p:
            lines.append(f"| {p['peer']} | left out: {p['skipped']} | | | | | |")
            continue
        per = p["cpu_ms_per_workflow"]
        shown = ", ".join(f"{k} {v:.2f}" for k, v in per.items() if k != "total")
        lines.append(
            f"| {p['peer']} | {p['setup']} | {p['throughput']:,.0f} | {p['p50_ms']:.1f} | "
            f"{p['p99_ms']:.1f} | {per.get('total', 0.0):.2f} | {shown} |"
        )
    return "\n".join(lines)


def other_cores(outcome: Outcome) -> float:
    """Cores the machine spent on anything but this run (other people's work)."""
    cpu, s = outcome.summary.cpu, outcome.summary
    ours = sum(cpu.get(k, 0.0) for k in ("server", "patched", "echo", "postgres")) + s.client_cpu
    return max(0.0, cpu.get("machine", 0.0) - ours)


def outcome_rows(outcomes: list[Outcome]) -> str:
    """Every case of the goal run, for the record."""
    lines = [
        "| case | shape | throughput /s | p50 ms | p99 ms | errors | server ms/op "
        "| postgres ms/op | load ms/op | server context switches/op | other cores |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        s = o.summary
        if not s.throughput:
            lines.append(f"| {o.case.label} | {s.shape} | 0 | | | {s.errors} | | | | | |")
            continue
        role = o.case.role
        per = [
            1000 * v / s.throughput
            for v in (s.cpu.get(role, 0.0), s.cpu.get("postgres", 0.0), s.client_cpu)
        ]
        switches = s.cpu.get(f"ctxsw:{role}", 0.0) / s.throughput
        errors = ", ".join(f"{k} {v}" for k, v in s.errors.items()) or "0"
        lines.append(
            f"| {o.case.label} | {s.shape} | {s.throughput:,.0f} | {s.p50_ms:.1f} "
            f"| {s.p99_ms:.1f} | "
            f"{errors} | {per[0]:.2f} | {per[1]:.2f} | {per[2]:.2f} | {switches:.1f} "
            f"| {other_cores(o):.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database",
        default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL", ""),
        help="postgresql:// URL (default $STATEWRIGHT_TEST_POSTGRES_URL, set by with-postgres)",
    )
    parser.add_argument("--loadgen", choices=loadgen.ENGINES, default="go")
    parser.add_argument("--processes", type=int, help="load processes (default: 1 go, 3 python)")
    parser.add_argument("--concurrency", type=int, help="closed-loop lanes each (48 in total)")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--quick", action="store_true", help="1 s warm-up, 4 s windows")
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="run each case this many times in a row; the median run stands for it",
    )
    parser.add_argument("--no-peers", dest="peers", action="store_false", help="skip the peers")
    parser.add_argument(
        "--no-sidecars",
        dest="sidecars",
        action="store_false",
        help="skip the task and TLS benchmarks (steps 4 and 5)",
    )
    parser.add_argument(
        "--one-process-only",
        dest="two",
        action="store_false",
        help="skip the two-process phase (e.g. a server from before serve --processes)",
    )
    parser.add_argument(
        "--server-patch",
        action="append",
        default=[],
        help="run every server under bench/patched_server.py with this patch (repeat)",
    )
    parser.add_argument("--out", type=Path, help="write results.md and results.json here")
    parser.add_argument("--wait-quiet", type=float, default=0.0)
    parser.add_argument("--quiet-below", type=float, default=0.3)
    args = parser.parse_args()
    processes, concurrency = loadgen.default_shape(args.loadgen)
    args.processes = args.processes or processes
    args.concurrency = args.concurrency or concurrency
    if args.quick:
        args.warmup, args.duration = 1.0, 4.0
    if not args.database.startswith("postgres"):
        raise SystemExit("needs --database postgresql://... (bench/run.sh provides one)")
    port = re.search(r":(\d+)/", args.database)
    if port is None:
        raise SystemExit("the database URL must name its port")
    background = wait_for_quiet(args.wait_quiet, args.quiet_below)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    ).stdout.strip()
    header = (
        f"Goal run {time.strftime('%Y-%m-%d %H:%M')} at {commit}, {os.cpu_count()} CPUs, "
        f"{background:.2f} cores busy before; {args.processes} {args.loadgen} load process(es), "
        f"{args.processes * args.concurrency} lanes in closed loop; windows "
        f"{args.warmup:g} s + {args.duration:g} s"
        + (f", each case {args.repeat} times (the median run shown)" if args.repeat > 1 else "")
        + (f"; server patches {args.server_patch}" if args.server_patch else "")
        + "."
    )
    print(header, flush=True)
    if args.loadgen == "go":
        loadgen.goload_binary()
    logs = Path(tempfile.mkdtemp(prefix="statewright-goals."))
    try:
        result = run_goals(args, args.database, int(port.group(1)), logs)
        text = "\n\n".join(
            [
                header,
                result["table"],
                result["peers_table"],
                "Every case:",
                outcome_rows(result["outcomes"]),
            ]
        )
        print()
        print(text, flush=True)
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "results.md").write_text(text + "\n")
            payload = {
                "header": header,
                "rows": result["rows"],
                "peers": result["peers"],
                "extra": result["extra"],
                "outcomes": [
                    {"label": o.case.label, "summary": asdict(o.summary), "server": o.server}
                    for o in result["outcomes"]
                ],
            }
            (args.out / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
            shutil.copytree(logs, args.out / "logs", dirs_exist_ok=True)
    finally:
        shutil.rmtree(logs, ignore_errors=True)


if __name__ == "__main__":
    main()
