"""The WatchWorkflow benchmark of issue 6: signal-to-watch delivery latency, watcher memory.

Not a test. Starts statewrightd on the given PostgreSQL (127.0.0.1 only) with a small
counter definition, then:

1. Delivery: ``--instances`` counters, one watcher each (``--watchers`` in total, spread
   over the instances), while signal processes send ``--rate`` signals per second, open
   loop, for ``--duration`` seconds. Every signal carries its send time; a watcher that
   receives the step computes send-to-receive latency. Reports p50/p99/max and how many
   steps were seen versus signals accepted.
2. Idle watchers: opens ``--idle-watchers`` streams that receive nothing after their first
   message and reads the server's resident memory before and after: memory per watcher,
   and any stream errors.

Run through bench/run_watch.sh, which brings its own PostgreSQL:

    bench/run_watch.sh                  # 1,000 watchers, 1,000 signals/s, 5,000 idle
    bench/run_watch.sh --duration 5     # shorter
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.loadgen import percentile
from bench.runtime_bench import VENV_BIN, Served, _launch

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


def start_server(database: str, logs: Path) -> Served:
    definitions = logs / "definitions"
    definitions.mkdir(exist_ok=True)
    (definitions / "bench-counter.yaml").write_text(COUNTER)
    argv = [
        str(VENV_BIN / "statewrightd"),
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database",
        database,
        "--definitions",
        str(definitions),
    ]
    return _launch("statewrightd", argv, logs / "statewrightd.log", r"serving on [\d.]+:(\d+)")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _stubs(target: str) -> tuple[list[grpc.aio.Channel], list[Any]]:
    channels = [grpc.aio.insecure_channel(target) for _ in range(CHANNELS_PER_PROCESS)]
    return channels, [pb_grpc.WorkflowServiceStub(c) for c in channels]


# -- watcher processes --------------------------------------------------------------------


@dataclass
class WatchReport:
    latencies_ms: list[float]
    steps: int
    errors: int


async def _watch(
    target: str, ids: list[str], per_instance: int, ready: Any, stop_at: float
) -> WatchReport:
    channels, stubs = _stubs(target)
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
                    if opened == len(ids) * per_instance:
                        ready.set()
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
        asyncio.create_task(one(stubs[(i * per_instance + k) % len(stubs)], workflow_id))
        for i, workflow_id in enumerate(ids)
        for k in range(per_instance)
    ]
    await asyncio.sleep(max(0.0, stop_at - time.time()))
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for channel in channels:
        await channel.close()
    return WatchReport(latencies, steps, errors)


@dataclass
class WatchJob:
    target: str
    ids: list[str]
    per_instance: int
    ready: Any  # a multiprocessing Event, set once every stream has its first message
    stop_at: float


def watcher_process(job: WatchJob, out: Any) -> None:
    out.put(asyncio.run(_watch(job.target, job.ids, job.per_instance, job.ready, job.stop_at)))


# -- signal processes ---------------------------------------------------------------------


@dataclass
class SignalJob:
    target: str
    ids: list[str]
    rate: float
    start_at: float
    duration: float


async def _signal(job: SignalJob) -> tuple[int, int]:
    ids, rate, duration = job.ids, job.rate, job.duration
    channels, stubs = _stubs(job.target)
    accepted = 0
    failed = 0
    await asyncio.sleep(max(0.0, job.start_at - time.time()))
    begin = time.monotonic()
    pending: set[asyncio.Task[None]] = set()

    async def send(n: int) -> None:
        nonlocal accepted, failed
        payload = struct_pb2.Struct()
        payload.update({"id": str(time.time_ns())})
        request = pb.SignalWorkflowRequest(
            name=f"workflows/{ids[n % len(ids)]}", event="tick", payload=payload
        )
        try:
            response = await stubs[n % len(stubs)].SignalWorkflow(request, timeout=10)
            accepted += response.accepted
        except grpc.aio.AioRpcError:
            failed += 1

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
    for channel in channels:
        await channel.close()
    return accepted, failed


def signal_process(job: SignalJob, out: Any) -> None:
    out.put(asyncio.run(_signal(job)))


# -- orchestration ------------------------------------------------------------------------


async def create_instances(target: str, count: int, prefix: str) -> list[str]:
    channels, stubs = _stubs(target)
    ids = [f"{prefix}-{i}" for i in range(count)]
    gate = asyncio.Semaphore(64)

    async def start(i: int) -> None:
        async with gate:
            await stubs[i % len(stubs)].StartWorkflow(
                pb.StartWorkflowRequest(definition="bench-counter", workflow_id=ids[i]),
                timeout=30,
            )

    await asyncio.gather(*(start(i) for i in range(count)))
    for channel in channels:
        await channel.close()
    return ids


def split(items: list[str], parts: int) -> list[list[str]]:
    return [items[i::parts] for i in range(parts)]


def delivery(args: argparse.Namespace, server: Served) -> dict[str, Any]:
    ids = asyncio.run(create_instances(server.target, args.instances, "lat"))
    per_instance = max(1, args.watchers // args.instances)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 8.0  # watchers connect first
    stop_at = start_at + args.duration + 3.0
    readies = []
    watchers = []
    for chunk in split(ids, args.watch_processes):
        ready = ctx.Event()
        readies.append(ready)
        job = WatchJob(server.target, chunk, per_instance, ready, stop_at)
        proc = ctx.Process(target=watcher_process, args=(job, out))
        proc.start()
        watchers.append(proc)
    signallers = []
    for chunk in split(ids, args.signal_processes):
        rate = args.rate / args.signal_processes
        signal_job = SignalJob(server.target, chunk, rate, start_at, args.duration)
        proc = ctx.Process(target=signal_process, args=(signal_job, out))
        proc.start()
        signallers.append(proc)
    all_ready = all(ready.wait(max(0.1, start_at - time.time())) for ready in readies)
    results = [out.get(timeout=args.duration + 60) for _ in watchers + signallers]
    for proc in watchers + signallers:
        proc.join(10)
    reports = [r for r in results if isinstance(r, WatchReport)]
    sends = [r for r in results if isinstance(r, tuple)]
    latencies = sorted(x for r in reports for x in r.latencies_ms)
    accepted = sum(a for a, _ in sends)
    return {
        "watchers": per_instance * len(ids),
        "instances": len(ids),
        "offered_rate": args.rate,
        "duration_s": args.duration,
        "all_watchers_ready_before_load": all_ready,
        "signals_accepted": accepted,
        "signals_failed": sum(f for _, f in sends),
        "achieved_rate": round(accepted / args.duration, 1),
        "steps_delivered": sum(r.steps for r in reports),
        "expected_deliveries": accepted * per_instance,
        "watch_errors": sum(r.errors for r in reports),
        "latency_p50_ms": round(percentile(latencies, 0.50), 2),
        "latency_p99_ms": round(percentile(latencies, 0.99), 2),
        "latency_max_ms": round(latencies[-1], 2) if latencies else 0.0,
    }


def idle_memory(args: argparse.Namespace, server: Served) -> dict[str, Any]:
    instances = max(1, args.idle_watchers // 10)
    ids = asyncio.run(create_instances(server.target, instances, "idle"))
    time.sleep(2.0)
    before = rss_kib(server.process.pid)
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    hold = args.idle_hold
    stop_at = time.time() + hold + 15.0
    readies = []
    procs = []
    per_instance = args.idle_watchers // instances
    for chunk in split(ids, args.watch_processes):
        ready = ctx.Event()
        readies.append(ready)
        job = WatchJob(server.target, chunk, per_instance, ready, stop_at)
        proc = ctx.Process(target=watcher_process, args=(job, out))
        proc.start()
        procs.append(proc)
    all_open = all(ready.wait(max(0.1, stop_at - time.time() - 2)) for ready in readies)
    time.sleep(hold / 2)
    after = rss_kib(server.process.pid)
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
        "kib_per_watcher": round((after - before) / watchers, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database", default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL"))
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--watchers", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--idle-watchers", type=int, default=5000)
    parser.add_argument("--idle-hold", type=float, default=6.0)
    parser.add_argument("--watch-processes", type=int, default=2)
    parser.add_argument("--signal-processes", type=int, default=2)
    args = parser.parse_args()
    if not args.database:
        parser.error("--database (or STATEWRIGHT_TEST_POSTGRES_URL) is required")
    with tempfile.TemporaryDirectory(prefix="watch-bench-") as tmp:
        server = start_server(args.database, Path(tmp))
        try:
            result = {
                "delivery": delivery(args, server),
                "idle": idle_memory(args, server),
            }
        finally:
            server.stop()
    for section, values in result.items():
        print(f"== {section}")
        for key, value in values.items():
            print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
