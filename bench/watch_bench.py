"""The WatchWorkflow benchmark: signal-to-watch delivery latency, watcher memory.

Not a test. Starts ``--server-processes`` statewrightd replicas (default 1), each on its
own port on 127.0.0.1, all on the given PostgreSQL and one definitions directory with a
small counter definition, then:

1. Delivery: ``--instances`` counters, instance i created on replica i % N, and
   ``--watchers`` watchers in total spread over them, while ``--rate`` signals per second go
   to the instances in turn, open loop, for ``--duration`` seconds. Each instance's streams
   and signals go to the replica that created it, which has it cached, as a client that
   routes each workflow to one replica would. Every signal carries the time it was due; a
   watcher that receives the step computes due-to-receive latency, which therefore includes
   the signal's own durable step and any lag of the sender. Reports p50/p99/max over all
   watchers, steps seen versus signals accepted, the CPU cores used over the signal window
   by the replicas (summed, and each with several), the load generator, PostgreSQL and the
   whole machine, and each replica's saves and mean group-commit batch (GetDiagnostics).

   ``--loadgen go`` (default): one bench/goload process in its watch scenario (built with
   ``go build`` into .cache/goload/) holds every stream and sends every signal.
   ``--loadgen python``: ``--watch-processes`` grpc.aio watcher processes and
   ``--signal-processes`` signal processes, which at 1,000 signals/s take about half of the
   machine's two cores from the server and PostgreSQL.
2. Idle watchers (skipped with ``--idle-watchers 0``): on replica 0 only, opens
   ``--idle-watchers`` streams (Python watcher processes) that receive nothing after their
   first message and reads that replica's resident memory before and after: memory per
   watcher, and any stream errors. Then, for ``--idle-window`` seconds (longer than the
   server's periodic look for lost hints, 30 s on PostgreSQL), the CPU the replica and
   PostgreSQL spend on streams that receive nothing: what watchers cost while idle.

Run through bench/run_watch.sh, which brings its own PostgreSQL:

    bench/run_watch.sh                  # 1,000 watchers, 1,000 signals/s, 5,000 idle
    bench/run_watch.sh --duration 5 --idle-watchers 0     # delivery only, shorter
    bench/run_watch.sh --server-processes 2               # two replicas
    bench/run_watch.sh --loadgen python                   # the Python watchers and signallers
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import re
import select
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.loadgen import goload_binary, percentile
from bench.runtime_bench import (
    ROOT,
    VENV_BIN,
    Diagnostics,
    Served,
    _launch,
    _machine_busy,
    _postgres_pids,
    _proc_cpu,
    diag_delta,
)

COUNTER = """\
name: bench-counter
version: 1
description: A live counter; each tick records the id it carried.
context:
  last:  {type: string, default: ""}
  count: {type: int, default: 0}
initial: open
states:
  open: {}
  closed: {}
transitions:
  - from: open
    on: tick
    to: open
    set: {last: "string(event.payload.id)", count: "context.count + 1"}
  - {from: open, on: close, to: closed}
"""

CHANNELS_PER_PROCESS = 8
# The streams stay open this long after the last signal was due, for its step to arrive.
DRAIN_SECONDS = 3.0
# goload opens its streams at most 128 at a time and gives up after 90 s; this is longer.
GO_READY_BUDGET = 120.0


def start_servers(database: str, logs: Path, count: int) -> list[Served]:
    definitions = logs / "definitions"
    definitions.mkdir(exist_ok=True)
    (definitions / "bench-counter.yaml").write_text(COUNTER)
    servers: list[Served] = []
    try:
        for index in range(count):
            argv = [
                str(VENV_BIN / "statewrightd"),
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--database",
                database,
                "--definitions",
                str(definitions),
                # Each replica one process: the figures per replica stay what they were.
                "--processes",
                "1",
                # Every stream here comes from one caller; the idle phase alone opens
                # thousands on one replica.
                "--max-watches",
                "50000",
            ]
            log = logs / f"statewrightd-{index}.log"
            servers.append(_launch(f"statewrightd-{index}", argv, log, r"serving on [\d.]+:(\d+)"))
    except BaseException:
        for served in servers:
            served.stop()
        raise
    return servers


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Routes:
    """One process's grpc.aio channels, CHANNELS_PER_PROCESS spread evenly over the replicas.

    Instance i (its index among all the run's instances) lives on replica i % N; each call
    or stream for it takes that replica's next channel in turn.
    """

    def __init__(self, targets: list[str]) -> None:
        per_target = max(1, -(-CHANNELS_PER_PROCESS // len(targets)))
        self.channels = [
            [grpc.aio.insecure_channel(target) for _ in range(per_target)] for target in targets
        ]
        self.stubs = [[pb_grpc.WorkflowServiceStub(c) for c in row] for row in self.channels]
        self.turns = [0] * len(targets)

    def stub(self, instance: int) -> Any:
        replica = instance % len(self.stubs)
        row = self.stubs[replica]
        turn = self.turns[replica]
        self.turns[replica] = turn + 1
        return row[turn % len(row)]

    async def close(self) -> None:
        for row in self.channels:
            for channel in row:
                await channel.close()


# -- watcher processes (--loadgen python, and the idle phase) ------------------------------


@dataclass
class WatchReport:
    latencies_ms: list[float]
    steps: int
    errors: int


@dataclass
class WatchJob:
    targets: list[str]
    instances: list[tuple[int, str]]  # (index among all instances, workflow id)
    per_instance: int
    ready: Any  # a multiprocessing Event, set once every stream has its first message
    stop_at: float


async def _watch(job: WatchJob) -> WatchReport:
    routes = Routes(job.targets)
    latencies: list[float] = []
    steps = 0
    errors = 0
    opened = 0

    async def one(stub: Any, workflow_id: str) -> None:
        nonlocal steps, errors, opened
        call = stub.WatchWorkflow(pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}"))
        try:
            async for message in call:
                if message.type == pb.WATCH_EVENT_TYPE_CURRENT:
                    opened += 1
                    if opened == len(job.instances) * job.per_instance:
                        job.ready.set()
                    continue
                received = time.time_ns()
                steps += 1
                sent = message.workflow.context.fields["last"].string_value
                if sent.isdigit():
                    latencies.append((received - int(sent)) / 1e6)
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                errors += 1

    tasks = [
        asyncio.create_task(one(routes.stub(index), workflow_id))
        for index, workflow_id in job.instances
        for _ in range(job.per_instance)
    ]
    await asyncio.sleep(max(0.0, job.stop_at - time.time()))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await routes.close()
    return WatchReport(latencies, steps, errors)


def watcher_process(job: WatchJob, out: Any) -> None:
    out.put(asyncio.run(_watch(job)))


# -- signal processes (--loadgen python) ---------------------------------------------------


@dataclass
class SignalJob:
    targets: list[str]
    instances: list[tuple[int, str]]  # (index among all instances, workflow id)
    rate: float
    start_at: float
    duration: float


@dataclass
class SignalReport:
    accepted: int = 0
    not_accepted: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # by gRPC status code


async def _signal(job: SignalJob) -> SignalReport:
    instances, rate, duration = job.instances, job.rate, job.duration
    routes = Routes(job.targets)
    report = SignalReport()
    await asyncio.sleep(max(0.0, job.start_at - time.time()))
    begin = time.monotonic()
    begin_ns = time.time_ns()
    pending: set[asyncio.Task[None]] = set()

    async def send(n: int) -> None:
        index, workflow_id = instances[n % len(instances)]
        # The time the signal was due, not when this task got to run: a sender that falls
        # behind must show as latency (no coordinated omission), as in bench/goload.
        due_ns = begin_ns + round(n * 1e9 / rate)
        payload = struct_pb2.Struct()
        payload.update({"id": str(due_ns)})
        request = pb.SignalWorkflowRequest(
            name=f"workflows/{workflow_id}", event="tick", payload=payload
        )
        try:
            response = await routes.stub(index).SignalWorkflow(request, timeout=10)
        except grpc.aio.AioRpcError as err:
            code = err.code().name
            report.failed[code] = report.failed.get(code, 0) + 1
            return
        if response.accepted:
            report.accepted += 1
        else:
            report.not_accepted += 1

    n = 0
    while (elapsed := time.monotonic() - begin) < duration:
        due = int(elapsed * rate)
        while n < due:
            task = asyncio.create_task(send(n))
            pending.add(task)
            task.add_done_callback(pending.discard)
            n += 1
        await asyncio.sleep(0.002)
    await asyncio.gather(*pending, return_exceptions=True)
    await routes.close()
    return report


def signal_process(job: SignalJob, out: Any) -> None:
    out.put(asyncio.run(_signal(job)))


# -- measurements ------------------------------------------------------------------------


@dataclass
class Window:
    """What the orchestrator measures over the signal window, for either load generator."""

    servers: list[Served]
    load_pids: list[int]
    pg_port: int | None
    cores: dict[str, float] = field(default_factory=dict)

    def _snapshot(self, pg_pids: list[int]) -> dict[str, float]:
        snap = {
            f"server#{i}": _proc_cpu(f"/proc/{s.process.pid}/stat")
            for i, s in enumerate(self.servers)
        }
        snap["load"] = sum(_proc_cpu(f"/proc/{pid}/stat") for pid in self.load_pids)
        # Per PostgreSQL process: one that exits inside the window reads 0 at the end
        # and is left out rather than subtracted.
        snap |= {f"pg:{pid}": _proc_cpu(f"/proc/{pid}/stat") for pid in pg_pids}
        snap["machine"] = _machine_busy()
        return snap

    def measure(self, start_at: float, duration: float) -> None:
        """Sleeps through [start_at, start_at + duration] and keeps the cores each role used."""
        pg_pids = _postgres_pids(self.pg_port) if self.pg_port else []
        time.sleep(max(0.0, start_at - time.time()))
        before, began = self._snapshot(pg_pids), time.monotonic()
        time.sleep(max(0.0, start_at + duration - time.time()))
        after, elapsed = self._snapshot(pg_pids), time.monotonic() - began
        delta = {key: after[key] - before[key] for key in before}
        replicas = [delta[f"server#{i}"] / elapsed for i in range(len(self.servers))]
        self.cores = {
            "server": sum(replicas),
            "load": delta["load"] / elapsed,
            "postgres": sum(v for k, v in delta.items() if k.startswith("pg:") and v > 0) / elapsed,
            "machine": delta["machine"] / elapsed,
        }
        self.cores |= {f"server#{i}": cores for i, cores in enumerate(replicas)}


@dataclass
class Delivered:
    """One delivery run's outcome, whichever load generator produced it."""

    latencies_ms: list[float]
    steps: int
    watch_errors: int
    signals: SignalReport
    all_ready: bool
    # Each replica's GetDiagnostics just before the window, with the quiet servers.
    diagnostics_before: list[pb.GetDiagnosticsResponse]
    extra: dict[str, Any] = field(default_factory=dict)


# -- orchestration ------------------------------------------------------------------------


async def create_instances(targets: list[str], count: int, prefix: str) -> list[str]:
    """Starts ``count`` counters, instance i on replica i % len(targets)."""
    routes = Routes(targets)
    ids = [f"{prefix}-{i}" for i in range(count)]
    gate = asyncio.Semaphore(64)

    async def start(i: int) -> None:
        async with gate:
            await routes.stub(i).StartWorkflow(
                pb.StartWorkflowRequest(definition="bench-counter", workflow_id=ids[i]),
                timeout=30,
            )

    await asyncio.gather(*(start(i) for i in range(count)))
    await routes.close()
    return ids


def split(items: list[tuple[int, str]], parts: int) -> list[list[tuple[int, str]]]:
    return [items[i::parts] for i in range(parts)]


@dataclass
class Setup:
    """The delivery phase's instances and instruments, for either load generator."""

    args: argparse.Namespace
    targets: list[str]  # the replicas' addresses; instance i lives on targets[i % N]
    ids: list[str]
    per_instance: int  # watchers on each instance
    win: Window
    diagnostics: Diagnostics
    work: Path  # a scratch directory


def deliver_python(setup: Setup) -> Delivered:
    args, targets, ids, per_instance = setup.args, setup.targets, setup.ids, setup.per_instance
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 8.0  # watchers connect first
    stop_at = start_at + args.duration + DRAIN_SECONDS
    instances = list(enumerate(ids))
    readies = []
    watchers = []
    for chunk in split(instances, args.watch_processes):
        ready = ctx.Event()
        readies.append(ready)
        job = WatchJob(targets, chunk, per_instance, ready, stop_at)
        proc = ctx.Process(target=watcher_process, args=(job, out))
        proc.start()
        watchers.append(proc)
    signallers = []
    for chunk in split(instances, args.signal_processes):
        rate = args.rate / args.signal_processes
        signal_job = SignalJob(targets, chunk, rate, start_at, args.duration)
        proc = ctx.Process(target=signal_process, args=(signal_job, out))
        proc.start()
        signallers.append(proc)
    all_ready = all(ready.wait(max(0.1, start_at - time.time())) for ready in readies)
    before = setup.diagnostics.read()
    setup.win.load_pids = [proc.pid for proc in watchers + signallers if proc.pid is not None]
    setup.win.measure(start_at, args.duration)
    results = [out.get(timeout=args.duration + 60) for _ in watchers + signallers]
    for proc in watchers + signallers:
        proc.join(10)
    reports = [r for r in results if isinstance(r, WatchReport)]
    signals = SignalReport()
    for sent in (r for r in results if isinstance(r, SignalReport)):
        signals.accepted += sent.accepted
        signals.not_accepted += sent.not_accepted
        for code, count in sent.failed.items():
            signals.failed[code] = signals.failed.get(code, 0) + count
    return Delivered(
        latencies_ms=[x for r in reports for x in r.latencies_ms],
        steps=sum(r.steps for r in reports),
        watch_errors=sum(r.errors for r in reports),
        signals=signals,
        all_ready=all_ready,
        diagnostics_before=before,
    )


def _goload_failure(process: subprocess.Popen[bytes], err_path: Path, what: str) -> RuntimeError:
    try:
        process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)
    text = err_path.read_text(errors="replace").strip()[-2000:]
    return RuntimeError(f"goload {what} (exit status {process.returncode}): {text}")


def deliver_go(setup: Setup) -> Delivered:
    args, work = setup.args, setup.work
    ids_file = work / "watch-ids.txt"
    ids_file.write_text("".join(f"{workflow_id}\n" for workflow_id in setup.ids))
    out_path, err_path = work / "goload.json", work / "goload.err"
    read_fd, write_fd = os.pipe()
    argv = [
        str(goload_binary()),
        "--scenario=watch",
        f"--target={','.join(setup.targets)}",
        f"--ids-file={ids_file}",
        f"--watchers-per-instance={setup.per_instance}",
        f"--rate={args.rate!r}",
        f"--duration={args.duration!r}",
        f"--channels={args.channels}",
        "--timeout=10",
        f"--ready-fd={write_fd}",
    ]
    try:
        # Output to files, not pipes: a large report must never block on a full pipe.
        with out_path.open("wb") as out, err_path.open("wb") as err:
            process = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=out, stderr=err, pass_fds=(write_fd,), cwd=ROOT
            )
    finally:
        os.close(write_fd)
    try:
        readable, _, _ = select.select([read_fd], [], [], GO_READY_BUDGET)
        if not readable:
            raise RuntimeError(f"goload: watch streams not open within {GO_READY_BUDGET:.0f} s")
        if not os.read(read_fd, 64).startswith(b"ready"):
            raise _goload_failure(process, err_path, "failed before the start")
        before = setup.diagnostics.read()
        start_at = time.time() + 0.5
        assert process.stdin is not None
        try:
            process.stdin.write(f"{start_at!r}\n".encode())
            process.stdin.close()
        except BrokenPipeError:
            raise _goload_failure(process, err_path, "failed before the start") from None
        setup.win.load_pids = [process.pid]
        setup.win.measure(start_at, args.duration)
        try:
            process.wait(args.duration + DRAIN_SECONDS + 60)
        except subprocess.TimeoutExpired:
            raise RuntimeError("goload did not finish in time") from None
        if process.returncode != 0:
            raise _goload_failure(process, err_path, "failed")
    finally:
        os.close(read_fd)
        if process.poll() is None:
            process.kill()
            process.wait(5)
    report = json.loads(out_path.read_bytes())
    signals = SignalReport(
        accepted=report["signals_accepted"],
        not_accepted=report["signals_not_accepted"],
        failed=report["signals_failed"],
    )
    return Delivered(
        latencies_ms=[float(x) for x in report["latencies_ms"]],
        steps=report["steps"],
        watch_errors=report["watch_errors"],
        signals=signals,
        all_ready=True,  # goload reports ready only once every stream is open
        diagnostics_before=before,
        extra={
            "watch_error_codes": report["watch_error_codes"],
            "signals_capped": report["capped"],
            "sender_behind_max_ms": round(report["behind_max"] * 1000, 1),
            # getrusage inside goload, over its own signal window: a check on loadgen_cores.
            "loadgen_self_reported_cores": round(report["cpu_seconds"] / report["window"], 2),
            "loadgen_channels": report["channels"],
        },
    )


def delivery(args: argparse.Namespace, servers: list[Served], work: Path) -> dict[str, Any]:
    targets = [served.target for served in servers]
    ids = asyncio.run(create_instances(targets, args.instances, "lat"))
    per_instance = max(1, args.watchers // args.instances)
    win = Window(servers, [], args.pg_port)
    diagnostics = Diagnostics(targets)
    setup = Setup(args, targets, ids, per_instance, win, diagnostics, work)
    run = deliver_go(setup) if args.loadgen == "go" else deliver_python(setup)
    after = diagnostics.read()
    latencies = sorted(run.latencies_ms)
    accepted = run.signals.accepted
    cores = win.cores
    result: dict[str, Any] = {
        "loadgen": args.loadgen,
        "server_processes": len(servers),
        "watchers": per_instance * len(ids),
        "instances": len(ids),
        "offered_rate": args.rate,
        "duration_s": args.duration,
        "all_watchers_ready_before_load": run.all_ready,
        "signals_accepted": accepted,
        "signals_not_accepted": run.signals.not_accepted,
        "signals_failed": sum(run.signals.failed.values()),
        "signals_failed_by_code": run.signals.failed,
        "achieved_rate": round(accepted / args.duration, 1),
        "steps_delivered": run.steps,
        "expected_deliveries": accepted * per_instance,
        "watch_errors": run.watch_errors,
        "latency_p50_ms": round(percentile(latencies, 0.50), 2),
        "latency_p99_ms": round(percentile(latencies, 0.99), 2),
        "latency_max_ms": round(latencies[-1], 2) if latencies else 0.0,
        "server_cores": round(cores["server"], 2),
        "loadgen_cores": round(cores["load"], 2),
        "postgres_cores": round(cores["postgres"], 2),
        # The machine's busy time that no process of the run was charged with: other people's
        # work on the shared machine, and kernel time such as loopback softirqs.
        "other_cores": round(
            max(0.0, cores["machine"] - cores["server"] - cores["load"] - cores["postgres"]), 2
        ),
    }
    if len(servers) > 1:
        result["server_cores_per_replica"] = [
            round(cores[f"server#{i}"], 2) for i in range(len(servers))
        ]
    result |= run.extra
    # From just before the window to after the drain: every save the signals caused.
    result["diagnostics_per_replica"] = [
        {
            "saves": d["saves"],
            "mean_batch": round(d["mean_batch"], 1),
            "save_p99_ms": round(d["save_p99_ms"], 1),
            "loop_lag_max_ms": round(d["loop_lag_max_ms"], 1),
        }
        for d in (diag_delta(b, a) for b, a in zip(run.diagnostics_before, after, strict=True))
    ]
    return result


def idle_memory(args: argparse.Namespace, server: Served) -> dict[str, Any]:
    instances = max(1, args.idle_watchers // 10)
    ids = asyncio.run(create_instances([server.target], instances, "idle"))
    time.sleep(2.0)
    before = rss_kib(server.process.pid)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    hold = max(args.idle_hold, args.idle_window + 4.0)
    stop_at = time.time() + hold + 30.0
    readies = []
    procs = []
    per_instance = args.idle_watchers // instances
    for chunk in split(list(enumerate(ids)), args.watch_processes):
        ready = ctx.Event()
        readies.append(ready)
        job = WatchJob([server.target], chunk, per_instance, ready, stop_at)
        proc = ctx.Process(target=watcher_process, args=(job, out))
        proc.start()
        procs.append(proc)
    all_open = all(ready.wait(max(0.1, stop_at - time.time() - 2)) for ready in readies)
    time.sleep(min(hold / 2, 3.0))
    after = rss_kib(server.process.pid)
    pg_pids = _postgres_pids(args.pg_port) if args.pg_port else []
    server_cpu, pg_cpu = _proc_cpu(f"/proc/{server.process.pid}/stat"), _pg_cpu(pg_pids)
    time.sleep(args.idle_window)
    server_cpu = _proc_cpu(f"/proc/{server.process.pid}/stat") - server_cpu
    pg_after = _pg_cpu(pg_pids)
    # A backend that exits inside the window reads 0 at the end: left out, not subtracted.
    pg_used = sum(pg_after[pid] - pg_cpu[pid] for pid in pg_after if pg_after[pid] > 0)
    diag = pb_grpc.WorkflowServiceStub(grpc.insecure_channel(server.target)).GetDiagnostics(
        pb.GetDiagnosticsRequest(), timeout=10
    )
    reports = [out.get(timeout=hold + 60) for _ in procs]
    for proc in procs:
        proc.join(10)
    watchers = per_instance * len(ids)
    return {
        "idle_watchers": watchers,
        "all_open": all_open,
        "active_watchers_reported": diag.watchers.active_watchers,
        "errors": sum(r.errors for r in reports),
        "rss_before_mib": round(before / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "kib_per_watcher": round((after - before) / max(1, watchers), 2),
        "idle_window_s": args.idle_window,
        "idle_server_cpu_ms_per_s": round(1000 * server_cpu / args.idle_window, 1),
        "idle_postgres_cpu_ms_per_s": round(1000 * pg_used / args.idle_window, 1),
    }


def _pg_cpu(pids: list[int]) -> dict[int, float]:
    """CPU seconds of each PostgreSQL process so far (0 once it has exited)."""
    return {pid: _proc_cpu(f"/proc/{pid}/stat") for pid in pids}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--database", default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL"))
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument(
        "--loadgen",
        choices=("python", "go"),
        default="go",
        help="delivery phase: one bench/goload process (go) or Python processes",
    )
    parser.add_argument(
        "--server-processes",
        type=int,
        default=1,
        help="statewrightd replicas, each on its own port; instance i lives on replica i %% N",
    )
    parser.add_argument(
        "--channels", type=int, default=8, help="go: connections, spread over the replicas"
    )
    parser.add_argument("--idle-watchers", type=int, default=5000, help="0 skips the idle phase")
    parser.add_argument("--idle-hold", type=float, default=6.0)
    parser.add_argument(
        "--idle-window", type=float, default=40.0, help="seconds of idle CPU measured"
    )
    parser.add_argument("--watch-processes", type=int, default=2)
    parser.add_argument("--signal-processes", type=int, default=2, help="python only")
    args = parser.parse_args()
    if not args.database:
        parser.error("--database (or STATEWRIGHT_TEST_POSTGRES_URL) is required")
    if args.server_processes < 1 or args.channels < 1 or args.instances < 1:
        parser.error("--server-processes, --channels and --instances must be at least 1")
    port = re.search(r":(\d+)/", args.database)
    args.pg_port = int(port.group(1)) if port else None  # PostgreSQL's CPU, when known
    if args.loadgen == "go":
        goload_binary()  # a build failure should stop the run before anything starts
    result: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        servers = start_servers(args.database, Path(tmp), args.server_processes)
        try:
            result["delivery"] = delivery(args, servers, Path(tmp))
            if args.idle_watchers > 0:
                result["idle"] = idle_memory(args, servers[0])
        finally:
            for served in servers:
                served.stop()
    for section, values in result.items():
        print(f"== {section}")
        for key, value in values.items():
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
