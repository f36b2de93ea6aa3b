"""The tracing benchmark: what exporting every span costs the steps, tracing on against off.

Not a test. Run it through bench/run_tracing.sh, which brings its own PostgreSQL. On
127.0.0.1 only, this process starts two statewrightd servers, each over a database of its
own: tracing off; tracing on, exporting every span by OTLP/gRPC to a collector that this
process serves (it counts what it receives and keeps nothing); and tracing on with a
``--sampled`` ratio of traces kept (``parentbased_traceidratio``, as production would
run it). It then measures each in turn, ``--rounds`` times, one after another so that
the machine's load falls on all:

- start-to-complete: closed-loop StartWorkflow calls of a one-state definition (one step
  span, one storage batch span and the RPC's span per call);
- task steps: ``--pollers`` asyncio pollers in this process complete every task of
  ``--population`` instances of a four-task definition at once, a completed instance
  replaced by a new one; per task step the server records the PollTasks and CompleteTask
  RPC spans, the step span with its links and the batch span, and keeps the task's trace
  context with it.

It prints each measurement and the ratios to "off" of the medians (the goal: at least
0.9), and beside them the server process's CPU time per call (per start, per task step)
over each window: on a machine shared with other work the calls per second swing with the
load, while what a call costs the server in CPU moves much less, and its ratio (off's CPU
per call over on's) is the throughput ratio a CPU-bound server would reach on its own.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from collections.abc import Coroutine
from concurrent import futures
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import grpc
import psycopg
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as otlp
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as otlp_grpc
from statewright.v1 import task_service_pb2 as tpb
from statewright.v1 import task_service_pb2_grpc as tpb_grpc
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.task_bench import DEFINITIONS, QUEUE
from bench.timer_bench import closed_loop, cpu_seconds, server, workspace


class Collector(otlp_grpc.TraceServiceServicer):
    """An OTLP trace collector that counts the spans it is sent."""

    def __init__(self) -> None:
        self.spans = 0
        self._lock = threading.Lock()

    def Export(
        self, request: otlp.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> otlp.ExportTraceServiceResponse:
        count = sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
        with self._lock:
            self.spans += count
        return otlp.ExportTraceServiceResponse()


async def task_steps(target: str, seconds: float, pollers: int, population: int) -> float:
    """Task steps completed per second over ``seconds``, closed loop."""
    done = 0
    stop = time.monotonic() + seconds
    async with grpc.aio.insecure_channel(target) as channel:
        workflows = pb_grpc.WorkflowServiceStub(channel)
        tasks = tpb_grpc.TaskServiceStub(channel)
        start = pb.StartWorkflowRequest(definition="four-tasks", version=1)
        await asyncio.gather(
            *(workflows.StartWorkflow(start, timeout=30) for _ in range(population))
        )

        async def poller(n: int) -> None:
            nonlocal done
            poll = tpb.PollTasksRequest(queue=QUEUE, identity=f"bench-{n}", max_tasks=16)
            poll.wait.FromSeconds(1)
            while time.monotonic() < stop:
                leased = await tasks.PollTasks(poll, timeout=30)
                for task in leased.tasks:
                    try:
                        answer = await tasks.CompleteTask(
                            tpb.CompleteTaskRequest(name=task.name, lease_token=task.lease_token),
                            timeout=30,
                        )
                    except grpc.aio.AioRpcError as err:
                        # On a machine loaded enough a lease can lapse before its completion:
                        # the task is offered again, and this one is not counted.
                        if err.code() is not grpc.StatusCode.FAILED_PRECONDITION:
                            raise
                        continue
                    done += 1
                    if answer.workflow.state == "done":  # keep the population constant
                        await workflows.StartWorkflow(start, timeout=30)

        began = time.monotonic()
        await asyncio.gather(*(poller(n) for n in range(pollers)))
        return done / (time.monotonic() - began)


def cancel_open(database: str) -> None:
    """Cancels what a task run leaves in flight, so that the next run starts from empty."""
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(
            "UPDATE workflow_tasks SET status = 'CANCELLED' "
            "WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF')"
        )
        conn.execute("UPDATE workflow_instances SET status = 'CANCELLED' WHERE status = 'RUNNING'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--population", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--sampled", type=float, default=0.1)
    args = parser.parse_args()
    modes = ("off", "on", "sampled")
    admin = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    databases = {}
    for mode in modes:
        name = f"tracing_bench_{mode}_{os.getpid()}"
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}".encode())
        databases[mode] = admin.rsplit("/", 1)[0] + "/" + name

    collector = Collector()
    sink = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    # The generated OTLP service stubs ship no type hints.
    otlp_grpc.add_TraceServiceServicer_to_server(collector, sink)  # type: ignore[no-untyped-call]
    port = sink.add_insecure_port("127.0.0.1:0")
    sink.start()
    base = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    exporting = {
        **base,
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
    }
    environments = {
        "off": base,
        "on": exporting,
        "sampled": {
            **exporting,
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio",
            "OTEL_TRACES_SAMPLER_ARG": str(args.sampled),
        },
    }
    starts: dict[str, list[float]] = {mode: [] for mode in modes}
    steps: dict[str, list[float]] = {mode: [] for mode in modes}
    # The server's CPU microseconds per start and per task step, by mode.
    start_cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    step_cpu: dict[str, list[float]] = {mode: [] for mode in modes}
    try:
        with ExitStack() as stack:
            folder, logs = stack.enter_context(workspace(DEFINITIONS, "tracing-bench-"))
            servers = {
                mode: stack.enter_context(
                    server(databases[mode], folder, logs, f"tracing-{mode}", env=environments[mode])
                )
                for mode in modes
            }
            for round_ in range(args.rounds):
                for mode in modes:
                    target, pid = servers[mode]
                    rate, cpu = _with_cpu(pid, closed_loop(target, args.seconds, args.concurrency))
                    starts[mode].append(rate)
                    start_cpu[mode].append(cpu)
                    rate, cpu = _with_cpu(
                        pid, task_steps(target, args.seconds, args.pollers, args.population)
                    )
                    steps[mode].append(rate)
                    step_cpu[mode].append(cpu)
                    cancel_open(databases[mode])
                    print(
                        f"round {round_ + 1} tracing {mode:>7}: "
                        f"{starts[mode][-1]:7,.0f} start-to-complete/s "
                        f"({start_cpu[mode][-1]:5,.0f} µs CPU each), "
                        f"{steps[mode][-1]:6,.0f} task steps/s ({step_cpu[mode][-1]:5,.0f} µs)",
                        flush=True,
                    )
            time.sleep(6)  # the batch processor exports every 5 s
    finally:
        sink.stop(None)
        with psycopg.connect(admin, autocommit=True) as conn:
            for database in databases.values():
                conn.execute(f"DROP DATABASE IF EXISTS {database.rsplit('/', 1)[1]}".encode())
    for label, rates, costs in (
        ("start-to-complete", starts, start_cpu),
        ("task steps", steps, step_cpu),
    ):
        off, on, sampled = (statistics.median(rates[m]) for m in modes)
        cpu_off, cpu_on, cpu_sampled = (statistics.median(costs[m]) for m in modes)
        print(
            f"{label}: off {off:,.0f}/s; on {on:,.0f}/s, ratio {on / off:.2f}; "
            f"{args.sampled:.0%} sampled {sampled:,.0f}/s, ratio {sampled / off:.2f}; "
            f"server CPU per call off {cpu_off:,.0f} µs, on {cpu_on:,.0f} µs "
            f"(ratio {cpu_off / cpu_on:.2f}), sampled {cpu_sampled:,.0f} µs "
            f"(ratio {cpu_off / cpu_sampled:.2f})"
        )
    print(f"spans received by the collector: {collector.spans:,}")


def _with_cpu(pid: int, measure: Coroutine[Any, Any, float]) -> tuple[float, float]:
    """Calls per second of ``measure``'s window, and the server's CPU µs per call in it."""
    began_cpu, began = cpu_seconds(pid), time.monotonic()
    rate = asyncio.run(measure)
    calls = rate * (time.monotonic() - began)  # a little over: the window's setup counts
    return rate, 1e6 * (cpu_seconds(pid) - began_cpu) / max(calls, 1.0)


if __name__ == "__main__":
    main()
