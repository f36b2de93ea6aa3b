"""The runtime benchmark: statewrightd on PostgreSQL versus a bare grpc.aio echo.

Not a test. Starts, on 127.0.0.1 only, one ``statewrightd serve`` on the given PostgreSQL,
one echo server (bench/echo_server.py, canned answer) and one echo server with the thread
hand-off (``--mode hop``), then runs each scenario with bench/loadgen.py's load processes
and stops everything it started. Run it through bench/run.sh, which brings its own
PostgreSQL:

    bench/run.sh --classic            # the figures in bench/NOTES.md (earlier rounds)
    bench/run.sh --classic --quick              # shorter windows, a smoke run
    bench/run.sh --classic --profile DIR        # py-spy profiles of the server (scenarios a and b)
    bench/run.sh --classic --ab                 # plus (a) version pinned / with request ids
    bench/run.sh --classic --server-patch NAME  # a suggested change, prototyped (patched_server.py)
    bench/run.sh --classic --compare-patch NAME --repeat 3 --only start   # A/B of that change
    bench/run.sh --classic --server-processes 2 # two statewrightd replicas, each on its own port
    bench/run.sh --classic --server-processes 2 --shared-port   # the two on one port
    bench/run.sh --classic --loadgen python     # Python load processes instead of goload

Besides throughput and latency it records, over each measured window, the CPU each role
used (server, PostgreSQL, load processes, everything else on the machine) so a reader
can tell a saturated server from a crowded machine, and the server's own diagnostics
(group-commit batch size, save latency, EventLoop lag).

Several replicas (``--server-processes N``, N > 1): each statewrightd listens on its own
free port and the load processes get all N targets (``host:port,host:port``); they open
at least one channel per replica and route like a client that routes each workflow to one
replica (bench/loadgen.py: every call of one workflow through the same channel), so a
resume reaches the replica that started or parked its instance. ``--shared-port`` runs
them on one port instead, as ``serve --processes N`` (one supervisor's processes are all
that may share a port), with 4 x N channels per load process: the kernel hashes each
connection to a process, which can leave a process without any.
With several replicas, the server's CPU (per thread group too) is the sum over the
replicas; the diagnostics sum the counts (saves, batches, dispatches, conflicts) and take
the largest of the replicas' save latency percentiles, loop lag and queue depth (among
replicas that saved in the window); a table per replica follows (saves, batch, save
latency, lag, CPU). With ``--shared-port`` the orchestrator cannot address a replica, so
the diagnostics are those of the one replica its own connection lands on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import grpc
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

# bench/ is a directory of scripts, not an installed package: import the sibling from the
# repository root (the load processes, spawned, inherit this sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.loadgen import Plan, Summary

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
STARTUP_TIMEOUT = 60.0


# -- processes ----------------------------------------------------------------------------


@dataclass
class Served:
    """A server process this script started, and where it listens."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def _launch(
    name: str, argv: list[str], log: Path, pattern: str, env: dict[str, str] | None = None
) -> Served:
    """Start ``argv`` with output to ``log`` and wait for the line that names its port."""
    with log.open("wb") as out:
        # Output goes to a file, not a pipe, so a chatty server can never block on it.
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    regex = re.compile(pattern)
    while time.monotonic() < deadline:
        match = regex.search(log.read_text(errors="replace"))
        if match:
            return Served(name, process, int(match.group(1)), log)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{name} did not start; log:\n{log.read_text(errors='replace')[-3000:]}")


def statewrightd_command(patches: Sequence[str] = ()) -> list[str]:
    """The command that runs statewrightd: as installed, or with ``patches`` under
    bench/patched_server.py (suggested changes). "python=PATH" is no patch but the
    interpreter (another venv with the project installed, e.g. a newer Python)."""
    if not patches:
        return [str(VENV_BIN / "statewrightd")]
    pythons = [p.partition("=")[2] for p in patches if p.startswith("python=")]
    named = [p for p in patches if not p.startswith("python=")]
    python = pythons[-1] if pythons else sys.executable
    command = [python, str(ROOT / "bench" / "patched_server.py")]
    return command + [arg for patch in named for arg in ("--patch", patch)] + ["--"]


def start_statewrightd(
    database: str,
    logs: Path,
    port: int = 0,
    index: int = 0,
    patches: list[str] | None = None,
    *,
    processes: int = 1,
) -> Served:
    """``port`` 0 picks a free port; another process may then share it (SO_REUSEPORT).

    ``processes`` > 1 runs ``serve --processes N``: one supervisor, N server processes on
    one port (its CPU is read over the whole process tree). With ``patches`` the server
    runs under bench/patched_server.py (suggested changes), every server process patched.
    """
    argv = [
        *statewrightd_command(patches or ()),
        "serve",
        "--listen",
        f"127.0.0.1:{port}",
        "--database",
        database,
        "--definitions",
        str(ROOT / "examples" / "definitions"),
        "--log-level",
        "INFO",  # the "serving on" line is INFO; slow-dispatch warnings land in the log too
    ]
    log = logs / f"statewrightd-{index}.log"
    # The count through the environment, not a flag: a server from before --processes
    # (python=PATH pointing at an older tree, for a before/after) ignores it and runs one.
    env = {**os.environ, "STATEWRIGHT_PROCESSES": str(processes)}
    name = f"statewrightd-{index}"
    # With several processes the supervisor's line, once every one of them listens.
    return _launch(name, argv, log, r"serving on [\d.]+:(\d+)", env)


def start_echo(mode: str, logs: Path, extra: Sequence[str] = (), name: str = "") -> Served:
    """The bare echo (bench/echo_server.py); ``extra``: more of its flags (--tls-cert...)."""
    argv = [sys.executable, str(ROOT / "bench" / "echo_server.py"), "--mode", mode, *extra]
    name = name or f"echo-{mode}"
    return _launch(name, argv, logs / f"{name}.log", r"serving on [\d.]+:(\d+)")


# -- CPU accounting -----------------------------------------------------------------------


def _proc_cpu(path: str) -> float:
    """utime + stime of a /proc stat file, in seconds (0 if the process is gone)."""
    try:
        text = Path(path).read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (a supervisor and its server processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            children.setdefault(int(stat[stat.rindex(")") + 2 :].split()[1]), []).append(
                int(entry.name)
            )
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def _tree_cpu(pid: int) -> float:
    return sum(_proc_cpu(f"/proc/{p}/stat") for p in process_tree(pid))


def _context_switches(pid: int) -> float:
    """Voluntary + involuntary context switches of every thread of ``pid`` so far.

    Per operation, this counts the thread wake-ups (hand-offs, GIL passes, I/O waits)
    that an operation costs, which CPU time alone does not show.
    """
    total = 0
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                for line in (task / "status").read_text().splitlines():
                    if "ctxt_switches:" in line:
                        total += int(line.split(":")[1])
    return float(total)


def _machine_busy() -> float:
    """CPU seconds the whole machine spent not idle (all cores), from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / CLOCK_TICKS


_POSTMASTERS: dict[int, int] = {}  # port -> pid, found once: it lives as long as the run


def _postgres_pids(port: int) -> list[int]:
    """The postmaster listening on ``port`` and its children (backends, writer, WAL...)."""
    parents: dict[int, int] = {}
    postmaster = _POSTMASTERS.get(port, 0)
    if postmaster and not Path(f"/proc/{postmaster}").exists():
        postmaster = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            if postmaster:
                continue
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if b"-p" in cmdline and str(port).encode() in cmdline and b"postgres" in cmdline[0]:
            postmaster = int(entry.name)
    if not postmaster:
        return []
    _POSTMASTERS[port] = postmaster
    return [postmaster] + [pid for pid, parent in parents.items() if parent == postmaster]


def background_cores(seconds: float = 3.0) -> float:
    """Cores the machine is busy with over ``seconds``, measured before the run starts."""
    before = _machine_busy()
    time.sleep(seconds)
    return (_machine_busy() - before) / seconds


def wait_for_quiet(limit: float, threshold: float) -> float:
    """On a shared machine, wait (up to ``limit`` s) for others' load to drop; return it."""
    deadline = time.monotonic() + limit
    busy = background_cores()
    while busy > threshold and time.monotonic() < deadline:
        print(f"waiting for a quieter machine: {busy:.2f} cores busy", flush=True)
        time.sleep(10)
        busy = background_cores()
    return busy


class CpuProbe:
    """Snapshots of cumulative CPU seconds per role; loadgen diffs two of them."""

    def __init__(
        self, servers: list[Served], patched: list[Served], echoes: list[Served], pg_port: int
    ) -> None:
        self.servers = servers
        self.patched = patched
        self.echoes = echoes
        self.pg_port = pg_port
        self.on_first: Callable[[], None] | None = None  # e.g. start a profiler

    def __call__(self) -> dict[str, float]:
        if self.on_first is not None:
            hook, self.on_first = self.on_first, None
            hook()

        def cpu(served: list[Served]) -> float:
            return sum(_tree_cpu(s.process.pid) for s in served)

        def switches(served: list[Served]) -> float:
            return sum(_context_switches(p) for s in served for p in process_tree(s.process.pid))

        snap = {
            "machine": _machine_busy(),
            "server": cpu(self.servers),
            "patched": cpu(self.patched),
            "echo": cpu(self.echoes),
            "ctxsw:server": switches(self.servers),
            "ctxsw:patched": switches(self.patched),
            "ctxsw:echo": switches(self.echoes),
        }
        if len(self.servers) > 1:
            # Each replica's own CPU, to show how the load spread over them.
            for index, served in enumerate(self.servers):
                snap[f"server#{index}"] = cpu([served])
        # Per PostgreSQL process, so that a backend that exits during the window (its
        # CPU would vanish from a sum) is left out of the difference instead.
        for pid in _postgres_pids(self.pg_port):
            snap[f"pg:{pid}"] = _proc_cpu(f"/proc/{pid}/stat")
        for pid in [p for s in self.servers + self.patched for p in process_tree(s.process.pid)]:
            with contextlib.suppress(OSError):
                for task in Path(f"/proc/{pid}/task").iterdir():
                    snap[f"thread:{task.name}"] = _proc_cpu(str(task / "stat"))
        return snap


def thread_names(pids: list[int]) -> dict[str, str]:
    """Native thread id -> Python thread name (py-spy dump), else the kernel's comm."""
    names: dict[str, str] = {}
    for pid in pids:
        for member in process_tree(pid):
            names.update(_thread_names(member))
    return names


def _thread_names(pid: int) -> dict[str, str]:
    names: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            names[task.name] = (task / "comm").read_text().strip()
    spy = shutil.which("py-spy", path=str(VENV_BIN)) or shutil.which("py-spy")
    if spy:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            dump = subprocess.run(
                [spy, "dump", "--pid", str(pid)],
                check=False,
                capture_output=True,
                text=True,
                timeout=20,
            ).stdout
            for tid, name in re.findall(r'^Thread (\d+) \([^)]*\): "([^"]*)"', dump, re.M):
                names[tid] = name
    return names


def thread_group(name: str) -> str:
    """Group the server's threads into the roles that matter for the profile."""
    if name == "MainThread":
        return "asyncio main (grpc.aio + servicer)"
    if "_poll_wrapper" in name:
        return "grpc.aio poller"
    if name == "eventloop":
        return "EventLoop"
    if name == "statewright-group-commit":
        return "group-commit writer"
    if name.startswith("statewright-io"):
        return "I/O pool (loads)"
    if name.startswith("statewright-read"):
        return "read pool (Get/List/replay)"
    if name.startswith(("statewright-store", "pool-")) or "psycopg" in name.lower():
        return "psycopg pool"
    return f"other ({name})"


def group_threads(cpu: dict[str, float], names: dict[str, str]) -> dict[str, float]:
    groups: dict[str, float] = {}
    for key, cores in cpu.items():
        if key.startswith("thread:"):
            group = thread_group(names.get(key[7:], "?"))
            groups[group] = groups.get(group, 0.0) + cores
    return dict(sorted(groups.items(), key=lambda kv: -kv[1]))


# -- server diagnostics -------------------------------------------------------------------


def _get_diagnostics(channel: grpc.Channel) -> pb.GetDiagnosticsResponse:
    stub = pb_grpc.WorkflowServiceStub(channel)
    response: pb.GetDiagnosticsResponse = stub.GetDiagnostics(
        pb.GetDiagnosticsRequest(), timeout=10
    )
    return response


class Diagnostics:
    """GetDiagnostics of each target (replica), a channel per reading as before.

    With ``keep_open`` (a shared SO_REUSEPORT port) one channel per target stays open for
    the case instead: a kept connection stays on one server process, so the readings before
    and after come from the same replica.
    """

    def __init__(self, targets: list[str], *, keep_open: bool = False) -> None:
        self.targets = targets
        self.kept = [grpc.insecure_channel(target) for target in targets] if keep_open else []

    def read(self) -> list[pb.GetDiagnosticsResponse]:
        if self.kept:
            return [_get_diagnostics(channel) for channel in self.kept]
        responses: list[pb.GetDiagnosticsResponse] = []
        for target in self.targets:
            with grpc.insecure_channel(target) as channel:
                responses.append(_get_diagnostics(channel))
        return responses

    def close(self) -> None:
        for channel in self.kept:
            channel.close()


def diag_delta(
    before: pb.GetDiagnosticsResponse, after: pb.GetDiagnosticsResponse
) -> dict[str, Any]:
    """What the server reports about one scenario: batch size, save latency, loop lag."""
    p0, p1 = before.persistence, after.persistence
    batches = p1.batches - p0.batches
    saves = p1.saves - p0.saves
    return {
        "saves": saves,
        "batches": batches,
        "mean_batch": saves / batches if batches else 0.0,
        # The writer's percentiles cover its last 4,096 saves: the end of this scenario.
        "save_p50_ms": p1.save_latency_p50.ToNanoseconds() / 1e6,
        "save_p99_ms": p1.save_latency_p99.ToNanoseconds() / 1e6,
        "loop_dispatches": after.event_loop.dispatch_count - before.event_loop.dispatch_count,
        "loop_slow": after.event_loop.slow_dispatch_count - before.event_loop.slow_dispatch_count,
        "loop_lag_max_ms": after.event_loop.lag_max.ToNanoseconds() / 1e6,
        "loop_max_depth": after.event_loop.max_queue_depth,
        "conflicts": p1.conflicts - p0.conflicts,
        "unknown": p1.unknown_outcomes - p0.unknown_outcomes,
    }


SUMMED = ("saves", "batches", "loop_dispatches", "loop_slow", "conflicts", "unknown")
LARGEST = ("save_p50_ms", "save_p99_ms", "loop_lag_max_ms", "loop_max_depth")


def combine_replicas(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """Several replicas' diagnostics as one: counts summed, latencies and lag the largest
    (of the replicas that saved in the window: an idle one's percentiles are older), and
    each replica's own under "replicas". One replica's is returned as it is."""
    if len(deltas) == 1:
        return deltas[0]
    busy = [d for d in deltas if d["saves"]] or deltas
    out: dict[str, Any] = {key: sum(d[key] for d in deltas) for key in SUMMED}
    out |= {key: max(d[key] for d in busy) for key in LARGEST}
    out["mean_batch"] = out["saves"] / out["batches"] if out["batches"] else 0.0
    out["replicas"] = deltas
    return out


# -- scenarios ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    label: str  # as in BENCHMARKS.md
    against: str  # "server", "patched", "echo-direct" or "echo-hop"

    @property
    def role(self) -> str:
        """Which CPU probe key is the serving side of this case."""
        if self.against.startswith("echo"):
            return "echo"
        return self.against

    plan: Plan


def cases(args: argparse.Namespace, done: list[Outcome]) -> Iterator[Case]:
    """The cases in order; later ones are sized from what earlier ones measured."""
    base = Plan(
        target="",
        scenario="start",
        processes=args.processes,
        concurrency=args.concurrency,
        warmup=args.warmup,
        duration=args.duration,
        engine=args.loadgen,
    )
    span = args.warmup + args.duration
    open_cap = max(256, args.concurrency * 16)  # in-flight cap per process in open loop

    def measured(label: str, default: float) -> float:
        found = [o.summary.throughput for o in done if o.case.label == label and o.summary.ops]
        return found[-1] if found else default

    def wanted(label: str) -> bool:
        return not args.only or any(word in label for word in args.only)

    def case(label: str, against: str, plan: Plan) -> Iterator[Case]:
        if wanted(label):
            yield Case(label, against, plan)
            if against == "server" and args.compare_patch:
                # The same load against the patched server, right after: an A/B pair.
                patches = ", ".join(args.compare_patch)
                yield Case(f"{label} [patched: {patches}]", "patched", plan)

    def open_plan(scenario: str, rate: float, capacity: float) -> Plan:
        # A parked instance is taken per send; sends stop at the in-flight cap, so the
        # run uses at most what the server completes plus what is in flight.
        pool = int((min(rate, 1.3 * capacity) * span * 1.1 + open_cap) / args.processes)
        return replace(
            base,
            scenario=scenario,
            rate=rate,
            concurrency=open_cap,
            prepare=pool if scenario == "resume" else 0,
        )

    yield from case("(c) echo", "echo-direct", replace(base, scenario="echo"))
    yield from case("(c) echo + thread hop", "echo-hop", replace(base, scenario="echo"))
    yield from case("(a) start-to-complete", "server", replace(base, scenario="start"))
    yield from case("(b) human in the loop", "server", replace(base, scenario="hitl"))
    # A resume step costs less than an order-pricing start: size the parked pool for
    # up to twice the start rate, and end the window early (flagged) if it still runs dry.
    resume_capacity = max(300.0, 2.0 * measured("(a) start-to-complete", 1000.0))
    pool = int(resume_capacity * span * 1.1 / args.processes)
    yield from case("(b) resume only", "server", replace(base, scenario="resume", prepare=pool))
    resume_capacity = measured("(b) resume only", resume_capacity)
    start_capacity = measured("(a) start-to-complete", 1000.0)
    rate = args.rate
    if rate > 0:
        yield from case(
            f"(c) echo @ {rate:,.0f}/s",
            "echo-direct",
            replace(base, scenario="echo", rate=rate, concurrency=open_cap),
        )
        yield from case(
            f"(a) start-to-complete @ {rate:,.0f}/s",
            "server",
            open_plan("start", rate, start_capacity),
        )
        yield from case(
            f"(b) resume only @ {rate:,.0f}/s",
            "server",
            open_plan("resume", rate, resume_capacity),
        )
        yield from case(
            f"(b) human in the loop @ {rate / 2:,.0f} workflows/s",
            "server",
            open_plan("hitl", rate / 2, start_capacity),
        )
    if args.half_load:
        # Latency where the server is not saturated: half its closed-loop maximum.
        for label, scenario, capacity in (
            ("(a) start-to-complete", "start", start_capacity),
            ("(b) resume only", "resume", resume_capacity),
        ):
            half = max(10.0, round(capacity / 2 / 10) * 10)
            if rate <= 0 or half < rate:
                yield from case(
                    # The rate is in the shape column; a fixed label lets repeats aggregate.
                    f"{label} @ half of closed-loop max",
                    "server",
                    open_plan(scenario, half, capacity),
                )
    if args.ab:
        # Evidence for the profile's suggestions, each against plain (a): the same load
        # with one thing changed on the client side, no server change needed.
        yield from case(
            "(a) start-to-complete, version pinned",
            "server",
            replace(base, scenario="start", version=1),
        )
        yield from case(
            "(a) start-to-complete, with request_id",
            "server",
            replace(base, scenario="start", request_ids=True),
        )


@dataclass
class Outcome:
    case: Case
    summary: Summary
    server: dict[str, Any]  # diagnostics delta (server cases only)
    threads: dict[str, float]  # server CPU by thread group, in cores


def settle(served: Served, limit: float = 60.0) -> None:
    """Wait until the serving process is idle: an overloaded case leaves a backlog
    (queued saves, in-flight steps) that would otherwise be measured in the next case."""
    pid = served.process.pid
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        before = _tree_cpu(pid)
        time.sleep(0.5)
        if (_tree_cpu(pid) - before) / 0.5 < 0.05:
            return
    print(f"{served.name} still busy after {limit:.0f} s; measuring anyway", flush=True)


def run_case(
    case: Case,
    fleet: Fleet,
    probe: CpuProbe,
    at_window_start: Callable[[], None] | None = None,
) -> Outcome:
    served = fleet.target_of(case.against)
    for busy in fleet.servers + fleet.patched:
        settle(busy)
    targets = fleet.targets_of(case.against)
    plan = replace(case.plan, target=",".join(targets))
    pod = case.against == "server" and fleet.pod_processes > 1
    if pod:
        # One port, N processes: enough connections that the kernel spreads them (each
        # workflow's calls stay on one connection, so on one process).
        plan = replace(plan, channels=max(plan.channels, 4 * fleet.pod_processes))
    elif case.against == "server" and len(fleet.servers) > 1:
        # Own ports: at least one channel per replica (the load processes route each
        # workflow to one channel).
        plan = replace(plan, channels=max(plan.channels, len(targets)))
    # Diagnostics of every replica (of a pod: of the process this connection reaches).
    is_server = case.role in ("server", "patched")
    reader = Diagnostics(targets, keep_open=pod) if is_server else None
    try:
        before = reader.read() if reader is not None else []
        probe.on_first = at_window_start
        summary = loadgen.run(plan, probe)
        after = reader.read() if reader is not None else []
    finally:
        if reader is not None:
            reader.close()
    server: dict[str, Any] = {}
    threads: dict[str, float] = {}
    if is_server:
        server = combine_replicas([diag_delta(b, a) for b, a in zip(before, after, strict=True)])
        # Named after the run: pool threads start lazily, during the first busy case.
        # With several replicas, each group is the sum over them.
        pids = fleet.server_pids if case.role == "server" else [served.process.pid]
        names = thread_names(pids)
        cpu = {k: v for k, v in summary.cpu.items() if k[7:] in names}
        threads = group_threads(cpu, names)
    summary.cpu["postgres"] = sum(v for k, v in summary.cpu.items() if k.startswith("pg:"))
    summary.cpu = {k: v for k, v in summary.cpu.items() if not k.startswith(("thread:", "pg:"))}
    print(f"{case.label:<42} {summary.line()}", flush=True)
    return Outcome(case, summary, server, threads)


# -- reporting ------------------------------------------------------------------------------


def _cores(summary: Summary, outcome: Outcome) -> str:
    cpu = summary.cpu
    role = outcome.case.role
    # Everything this run started counts as ours, idle servers included; the rest is
    # other people's work on the shared machine.
    ours = sum(cpu.get(k, 0.0) for k in ("server", "patched", "echo", "postgres"))
    other = max(0.0, cpu.get("machine", 0.0) - ours - summary.client_cpu)
    return (
        f"{cpu.get(role, 0.0):.2f} / {cpu.get('postgres', 0.0):.2f} / "
        f"{summary.client_cpu:.2f} / {other:.2f}"
    )


def markdown(outcomes: list[Outcome], meta: dict[str, Any]) -> str:
    lines = [
        f"Run {meta['when']} at {meta['commit']}, {meta['cpus']} CPUs, load average before: "
        f"{meta['loadavg']}, busy before: {meta['background_cores']} cores; "
        f"{meta['processes']} {meta['loadgen']} load processes, {meta['concurrency']} lanes "
        f"each (closed loop), {meta['server_processes']} statewrightd process(es)"
        + _replica_note(meta)
        + f", windows {meta['warmup']:g} s warmup + {meta['duration']:g} s measured"
        + (f", server patches {meta['server_patches']}." if meta["server_patches"] else "."),
        "",
        "| scenario | shape | throughput /s | p50 ms | p99 ms | resume /s | resume p50 / p99 ms "
        "| errors | CPU cores: server-or-echo / postgres / load / other |",
        "|---|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for o in outcomes:
        s = o.summary
        resume = f"{s.resume_rate:,.0f}" if s.resume_rate else ""
        resume_lat = f"{s.resume_p50_ms:.1f} / {s.resume_p99_ms:.1f}" if s.resume_rate else ""
        errors = ", ".join(f"{k} {v}" for k, v in s.errors.items()) or "0"
        lines.append(
            f"| {o.case.label} | {s.shape} | {s.throughput:,.0f} | {s.p50_ms:.1f} | "
            f"{s.p99_ms:.1f} | {resume} | {resume_lat} | {errors} | {_cores(s, o)} |"
        )
    lines += [
        "",
        "CPU per operation, in ms (CPU seconds of each role over the window / operations; an "
        "operation is a workflow for (a) and human in the loop, a resume for resume only, a "
        "call for the echo):",
        "",
        "| scenario | server-or-echo | postgres | load processes | total | "
        "server-or-echo context switches per op |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for o in outcomes:
        s = o.summary
        if not s.throughput:
            continue
        per = [s.cpu.get(o.case.role, 0.0), s.cpu.get("postgres", 0.0), s.client_cpu]
        ms = [1000 * v / s.throughput for v in per]
        switches = s.cpu.get(f"ctxsw:{o.case.role}", 0.0) / s.throughput
        lines.append(
            f"| {o.case.label} | {ms[0]:.2f} | {ms[1]:.2f} | {ms[2]:.2f} | {sum(ms):.2f} | "
            f"{switches:.1f} |"
        )
    lines += ["", "Server side (from GetDiagnostics; CPU by thread in cores):", ""]
    lines += [
        "| scenario | saves | mean batch | save p50 / p99 ms | loop lag max ms | "
        "server CPU by thread |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for o in outcomes:
        if not o.server:
            continue
        d = o.server
        threads = ", ".join(f"{k} {v:.2f}" for k, v in o.threads.items() if v >= 0.01)
        lines.append(
            f"| {o.case.label} | {d['saves']:,} | {d['mean_batch']:.1f} | "
            f"{d['save_p50_ms']:.1f} / {d['save_p99_ms']:.1f} | {d['loop_lag_max_ms']:.1f} | "
            f"{threads} |"
        )
    lines += _per_replica(outcomes)
    return "\n".join(lines)


def _replica_note(meta: dict[str, Any]) -> str:
    if meta["server_processes"] <= 1:
        return ""
    if meta.get("shared_port"):
        return (
            " sharing one port as one `serve --processes N` (diagnostics from the process "
            "the orchestrator's connection reaches; server CPU summed over the processes)"
        )
    return (
        " each on its own port, load routed per workflow (every call of a workflow to one "
        "replica); server CPU, per thread group too, summed over the replicas; diagnostics: "
        "saves and batches summed, save latency and loop lag the largest replica's"
    )


def _per_replica(outcomes: list[Outcome]) -> list[str]:
    """Each replica's saves, batch, save latency, lag and CPU (several replicas only)."""
    rows = [o for o in outcomes if "replicas" in o.server]
    if not rows:
        return []
    lines = [
        "",
        "Per replica (from each one's GetDiagnostics; CPU in cores):",
        "",
        "| scenario | replica | saves | mean batch | save p50 / p99 ms | loop lag max ms | "
        "CPU cores |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for o in rows:
        for index, d in enumerate(o.server["replicas"]):
            cores = o.summary.cpu.get(f"server#{index}", 0.0)
            lines.append(
                f"| {o.case.label} | {index} | {d['saves']:,} | {d['mean_batch']:.1f} | "
                f"{d['save_p50_ms']:.1f} / {d['save_p99_ms']:.1f} | "
                f"{d['loop_lag_max_ms']:.1f} | {cores:.2f} |"
            )
    return lines


def medians(outcomes: list[Outcome]) -> str:
    """Per label over the repeats: median throughput, spread, median CPU per operation."""
    by_label: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_label.setdefault(o.case.label, []).append(o)
    lines = [
        "Medians over the repeats (min..max in brackets):",
        "",
        "| scenario | runs | throughput /s | p99 ms | serving-side CPU ms/op | postgres ms/op |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for label, runs in by_label.items():
        rate = sorted(o.summary.throughput for o in runs)
        p99 = sorted(o.summary.p99_ms for o in runs)
        serving = sorted(
            1000 * o.summary.cpu.get(o.case.role, 0.0) / o.summary.throughput
            for o in runs
            if o.summary.throughput
        )
        pg = sorted(
            1000 * o.summary.cpu.get("postgres", 0.0) / o.summary.throughput
            for o in runs
            if o.summary.throughput
        )
        lines.append(
            f"| {label} | {len(runs)} | {statistics.median(rate):,.0f} "
            f"[{rate[0]:,.0f}..{rate[-1]:,.0f}] | {statistics.median(p99):.1f} | "
            f"{statistics.median(serving):.2f} [{serving[0]:.2f}..{serving[-1]:.2f}] | "
            f"{statistics.median(pg):.2f} |"
        )
    return "\n".join(lines)


def ratios(outcomes: list[Outcome]) -> dict[str, float]:
    by_label = {o.case.label: o.summary.throughput for o in outcomes}
    echo = by_label.get("(c) echo", 0.0)
    if not echo:
        return {}
    out = {"echo + thread hop / echo": by_label.get("(c) echo + thread hop", 0.0) / echo}
    out["start-to-complete / echo"] = by_label.get("(a) start-to-complete", 0.0) / echo
    out["resume only / echo"] = by_label.get("(b) resume only", 0.0) / echo
    return out


# -- profiling ------------------------------------------------------------------------------


class Profiler:
    """Attaches py-spy to the server for the measured window of the profiled cases."""

    def __init__(self, out: Path, duration: float, rate: int) -> None:
        spy = shutil.which("py-spy", path=str(VENV_BIN)) or shutil.which("py-spy")
        if spy is None:
            raise SystemExit("--profile needs py-spy: .venv/bin/pip install py-spy")
        self.spy = spy
        self.out = out
        self.duration = duration
        self.rate = rate
        self.running: list[subprocess.Popen[bytes]] = []

    def hook(self, case: Case, kind: str, pid: int) -> Callable[[], None]:
        slug = re.sub(r"[^a-z0-9]+", "-", case.label.lower()).strip("-")

        def start() -> None:
            argv = [
                self.spy,
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(int(self.duration)),
                "--rate",
                str(self.rate),
                "--format",
                "raw",
                "--threads",
                # Sampling without pausing the server keeps the profile from slowing it.
                "--nonblocking",
                "-o",
                str(self.out / f"{slug}.{kind}.txt"),
            ]
            if kind == "gil":
                argv.append("--gil")  # only samples of the thread holding the GIL
            log = (self.out / f"{slug}.{kind}.log").open("wb")
            self.running.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT))

        return start

    def wait(self) -> None:
        for process in self.running:
            process.wait(60)
        self.running.clear()


# -- main -----------------------------------------------------------------------------------


@dataclass
class Fleet:
    """Everything this run started: the statewrightd processes (each on its own port, or
    one pod of ``pod_processes`` on one port) and the echoes."""

    servers: list[Served]
    patched: list[Served]  # at most one: the A/B twin running --compare-patch patches
    echo_direct: Served
    echo_hop: Served
    pod_processes: int = 1  # serve --processes N: one Served, N server processes, one port

    def target_of(self, against: str) -> Served:
        """The (first) process serving ``against``: the one profiled."""
        if against == "patched":
            return self.patched[0]
        return {"server": self.servers[0], "echo-direct": self.echo_direct}.get(
            against, self.echo_hop
        )

    def targets_of(self, against: str) -> list[str]:
        """Where the load goes: every replica's address for "server"."""
        if against == "server":
            return [served.target for served in self.servers]
        return [self.target_of(against).target]

    @property
    def server_pids(self) -> list[int]:
        return [s.process.pid for s in self.servers]


@contextlib.contextmanager
def fleet_up(
    database: str,
    logs: Path,
    server_processes: int,
    patches: list[str],
    compare_patches: list[str],
    *,
    shared_port: bool = False,
) -> Iterator[Fleet]:
    started: list[Served] = []
    # Only one supervisor's processes share a port: N processes on one port is a pod.
    pod = server_processes if shared_port else 1
    try:
        first = start_statewrightd(database, logs, patches=patches, processes=pod)
        started.append(first)
        for index in range(1, 1 if shared_port else server_processes):
            started.append(start_statewrightd(database, logs, index=index, patches=patches))
        servers = list(started)
        patched = []
        if compare_patches:
            patched.append(start_statewrightd(database, logs, index=99, patches=compare_patches))
            started.append(patched[0])
        started.append(start_echo("direct", logs))
        started.append(start_echo("hop", logs))
        yield Fleet(servers, patched, started[-2], started[-1], pod_processes=pod)
    finally:
        for served in reversed(started):
            served.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--database",
        default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL", ""),
        help="postgresql:// URL (default $STATEWRIGHT_TEST_POSTGRES_URL, set by with-postgres)",
    )
    parser.add_argument(
        "--loadgen",
        choices=loadgen.ENGINES,
        # Go by default: a Python grpc.aio client spends 0.3-0.5 ms of CPU a call, taken
        # from the same two cores as the server it measures; bench/goload about 0.1 ms.
        default="go",
        help="what runs the load processes: bench/goload in Go, or grpc.aio in Python",
    )
    parser.add_argument("--processes", type=int, help="load processes (default: 3 python, 1 go)")
    parser.add_argument(
        "--concurrency",
        type=int,
        help="closed-loop lanes each (default: 16 python, 48 go: 48 in total either way)",
    )
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--rate", type=float, default=1000.0, help="open-loop rate; 0: none")
    parser.add_argument(
        "--no-half-load",
        dest="half_load",
        action="store_false",
        help="skip the open-loop runs at half the closed-loop maximum",
    )
    parser.add_argument("--only", nargs="*", help="run only cases whose label has a word")
    parser.add_argument(
        "--ab", action="store_true", help="add (a) with the version pinned, with request ids"
    )
    parser.add_argument(
        "--server-patch",
        action="append",
        default=[],
        help="run statewrightd under bench/patched_server.py with this patch (repeat)",
    )
    parser.add_argument(
        "--compare-patch",
        action="append",
        default=[],
        help="also start a statewrightd with this patch and run every server case on both",
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="run the sequence this many times, interleaved"
    )
    parser.add_argument(
        "--server-processes",
        type=int,
        default=1,
        help="statewrightd replicas, each on its own port (see --shared-port)",
    )
    parser.add_argument(
        "--shared-port",
        action="store_true",
        help="with --server-processes N > 1: all on one port (SO_REUSEPORT), 2N channels",
    )
    parser.add_argument("--quick", action="store_true", help="1 s warmup, 4 s windows")
    parser.add_argument("--profile", type=Path, help="write py-spy profiles here")
    parser.add_argument("--profile-rate", type=int, default=250)
    parser.add_argument("--out", type=Path, help="write results JSON and markdown here")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        help="wait up to this many seconds for other processes' load to drop first",
    )
    parser.add_argument(
        "--quiet-below", type=float, default=0.3, help="cores busy that count as quiet"
    )
    args = parser.parse_args()
    processes, concurrency = loadgen.default_shape(args.loadgen)
    args.processes = args.processes or processes
    args.concurrency = args.concurrency or concurrency
    if not args.database.startswith("postgres"):
        raise SystemExit("needs --database postgresql://... (bench/run.sh provides one)")
    if args.quick:
        args.warmup, args.duration = 1.0, 4.0
    port_match = re.search(r":(\d+)/", args.database)
    if port_match is None:
        raise SystemExit("the database URL must name its port")
    pg_port = int(port_match.group(1))

    background = wait_for_quiet(args.wait_quiet, args.quiet_below)
    meta = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "cpus": os.cpu_count(),
        "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3]),
        "background_cores": round(background, 2),
        "loadgen": args.loadgen,
        "processes": args.processes,
        "concurrency": args.concurrency,
        "warmup": args.warmup,
        "duration": args.duration,
        "server_processes": args.server_processes,
        "shared_port": args.shared_port,
        "server_patches": args.server_patch,
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
        ).stdout.strip(),
    }
    print(
        f"runtime benchmark: {meta['cpus']} CPUs, load average {meta['loadavg']}, "
        f"{meta['background_cores']} cores busy before, "
        f"{args.processes} {args.loadgen} load processes, windows "
        f"{args.warmup:g}+{args.duration:g} s",
        flush=True,
    )
    if args.loadgen == "go":
        # Built before anything is measured, and a broken build fails the run at once.
        loadgen.goload_binary()
    logs = Path(tempfile.mkdtemp(prefix="statewright-bench."))
    outcomes: list[Outcome] = []
    with fleet_up(
        args.database,
        logs,
        args.server_processes,
        args.server_patch,
        args.compare_patch,
        shared_port=args.shared_port,
    ) as fleet:
        probe = CpuProbe(fleet.servers, fleet.patched, [fleet.echo_direct, fleet.echo_hop], pg_port)
        profiler: Profiler | None = None
        # Repeats run the whole sequence again (interleaved, not back to back), so that a
        # burst of someone else's load on the shared machine hits every case alike.
        selected: Iterator[Case] = (c for _ in range(args.repeat) for c in cases(args, outcomes))
        if args.profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
            profiler = Profiler(args.profile, args.duration, args.profile_rate)
            # The profile runs are separate runs of (a), (b) and the echo: py-spy costs CPU
            # too. The echo's profile is the floor: what grpc.aio alone costs per call.
            profiled = ("(a) start-to-complete", "(b) human in the loop", "(c) echo")
            selected = (c for c in selected if c.label in profiled)
        for case in selected:
            if profiler is None:
                outcomes.append(run_case(case, fleet, probe))
                continue
            pid = fleet.target_of(case.against).process.pid
            for kind in ("cpu", "gil"):
                outcome = run_case(case, fleet, probe, profiler.hook(case, kind, pid))
                profiler.wait()
                outcome.case = replace(case, label=f"{case.label} [{kind} profile]")
                outcomes.append(outcome)
        slow = sum(
            s.log.read_text(errors="replace").count("slow event loop dispatch")
            for s in fleet.servers
        )
    meta["slow_dispatch_warnings"] = slow
    table = markdown(outcomes, meta)
    if args.repeat > 1:
        table += "\n\n" + medians(outcomes)
    print()
    print(table)
    for name, value in ratios(outcomes).items():
        print(f"{name}: {value:.2f}")
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.md").write_text(table + "\n")
        payload = {
            "meta": meta,
            "ratios": ratios(outcomes),
            "outcomes": [
                {
                    "label": o.case.label,
                    "summary": asdict(o.summary),
                    "server": o.server,
                    "threads": o.threads,
                }
                for o in outcomes
            ],
        }
        (args.out / "results.json").write_text(json.dumps(payload, indent=2) + "\n")
    if args.out is not None:
        # The servers' logs (slow dispatches, gc-log pauses) stay with the results.
        shutil.copytree(logs, args.out / "logs", dirs_exist_ok=True)
    shutil.rmtree(logs, ignore_errors=True)


if __name__ == "__main__":
    main()
