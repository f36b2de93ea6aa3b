"""The task benchmark: workflows of four task steps, worked by workers in other processes.

Not a test. Run it through bench/run_tasks.sh, which brings its own PostgreSQL. On
127.0.0.1 only, it starts ``--replicas`` statewrightd servers over one database and:

1. measures start-to-complete throughput of a one-state workflow (closed loop, spread over
   the replicas): the baseline the task figures are given as a ratio to;
2. runs ``--workers`` worker processes, each polling the replicas in turn and completing
   every task at once (no work of its own, so the figures are the service's). The load is
   a closed loop: ``--population`` instances of ``four-tasks`` are started up front, and
   a worker that completes an instance's last task starts a new one, so the number in
   flight stays constant. Over ``--seconds`` (after a warm-up) it reports task steps
   completed per second, schedule-to-start p50/p99 (the task's schedule time to the
   worker's receipt of it), end-to-end p50/p99 (an instance's creation to its last
   task's completion), and server CPU per task step.

``--worker-engine go`` runs the same worker loop in Go (bench/goload's ``tasks``
scenario), ``java`` in Java (bench/javaworker, on the Java client's stubs), ``all`` the
three in turn in each round: a Python worker spends about as much CPU a task as the
server does, on the same two cores.

Every run starts from an empty queue: the instances a run leaves in flight (its workers
stop, its population does not) are cancelled before the next run, and the run begins only
once the database holds no open task of the queue (the report says what was cancelled and
what was open at its start), so that a second run works ``--population`` instances, not
that many more.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import grpc
import psycopg
from google.protobuf import duration_pb2
from statewright.v1 import task_service_pb2 as tpb
from statewright.v1 import task_service_pb2_grpc as tpb_grpc
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.timer_bench import (
    closed_loop,
    cpu_seconds,
    percentile,
    postgres_cpu,
    server,
    workspace,
)

QUEUE = "bench.steps"
DEFINITIONS = {
    "four-tasks.yaml": f"""
name: four-tasks
version: 1
context:
  steps: {{type: int, default: 0}}
states:
  one:   {{task: {{queue: {QUEUE}, input: "{{'step': 1}}", apply: {{steps: "context.steps + 1"}}}}}}
  two:   {{task: {{queue: {QUEUE}, input: "{{'step': 2}}", apply: {{steps: "context.steps + 1"}}}}}}
  three: {{task: {{queue: {QUEUE}, input: "{{'step': 3}}", apply: {{steps: "context.steps + 1"}}}}}}
  four:  {{task: {{queue: {QUEUE}, input: "{{'step': 4}}", apply: {{steps: "context.steps + 1"}}}}}}
  done:  {{}}
transitions:
  - {{from: one, to: two}}
  - {{from: two, to: three}}
  - {{from: three, to: four}}
  - {{from: four, to: done}}
""",
    "instant.yaml": """
name: instant
version: 1
states:
  done: {}
""",
}
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED
RUNNING = workflow_pb2.WORKFLOW_STATUS_RUNNING
SAMPLE = 20_000  # latencies kept per worker
EMPTY_WAIT = 30.0  # seconds the queue may take to empty before a run, at most


# -- the worker process ------------------------------------------------------------------


async def work(
    targets: list[str], begin: float, end: float, stop: float, pollers: int
) -> dict[str, Any]:
    """Complete tasks until ``stop`` (wall clock); count what happened in [begin, end)."""
    channels = [grpc.aio.insecure_channel(t) for t in targets]
    tasks = [tpb_grpc.TaskServiceStub(c) for c in channels]
    flows = [pb_grpc.WorkflowServiceStub(c) for c in channels]
    rng = random.Random()
    counted = {"steps": 0, "completed_workflows": 0, "errors": 0}
    to_start: list[float] = []
    end_to_end: list[float] = []

    async def complete(n: int, task: Any) -> None:
        received = time.time()
        try:
            answer = await tasks[n].CompleteTask(
                tpb.CompleteTaskRequest(
                    name=task.name, lease_token=task.lease_token, request_id=f"{task.name}#c"
                ),
                timeout=30,
            )
        except grpc.aio.AioRpcError:
            if begin <= received < end:
                counted["errors"] += 1
            return
        now = time.time()
        if begin <= now < end:
            counted["steps"] += 1
            if len(to_start) < SAMPLE:
                to_start.append(received - task.schedule_time.ToNanoseconds() / 1e9)
        workflow = answer.workflow
        if workflow.status == COMPLETED:
            if begin <= now < end:
                counted["completed_workflows"] += 1
                if len(end_to_end) < SAMPLE:
                    end_to_end.append(now - workflow.create_time.ToNanoseconds() / 1e9)
            if now < stop:
                await flows[n].StartWorkflow(
                    pb.StartWorkflowRequest(definition="four-tasks", version=1), timeout=30
                )

    async def poller(p: int) -> None:
        n = p % len(targets)
        request = tpb.PollTasksRequest(
            queue=QUEUE,
            identity=f"bench-{os.getpid()}-{p}",
            max_tasks=16,
            wait=duration_pb2.Duration(seconds=1),
        )
        while time.time() < stop:
            try:
                polled = await tasks[n].PollTasks(request, timeout=10)
            except grpc.aio.AioRpcError:
                await asyncio.sleep(0.05 + rng.random() * 0.05)
                continue
            batch = [asyncio.ensure_future(complete(n, t)) for t in polled.tasks]
            if batch:
                await asyncio.gather(*batch)

    await asyncio.gather(*(poller(p) for p in range(pollers)))
    for channel in channels:
        await channel.close()
    return {**counted, "to_start": to_start, "end_to_end": end_to_end}


# -- the benchmark -----------------------------------------------------------------------


def start_population(targets: list[str], count: int) -> None:
    async def run() -> None:
        channels = [grpc.aio.insecure_channel(t) for t in targets]
        stubs = [pb_grpc.WorkflowServiceStub(c) for c in channels]
        request = pb.StartWorkflowRequest(definition="four-tasks", version=1)
        for first in range(0, count, 200):
            await asyncio.gather(
                *(
                    stubs[i % len(stubs)].StartWorkflow(request, timeout=30)
                    for i in range(first, min(count, first + 200))
                )
            )
        for channel in channels:
            await channel.close()

    asyncio.run(run())


def cancel_in_flight(targets: list[str]) -> int:
    """Cancel every ``four-tasks`` instance still running (what an earlier run left), and
    say how many were."""

    async def run() -> int:
        channels = [grpc.aio.insecure_channel(t) for t in targets]
        stubs = [pb_grpc.WorkflowServiceStub(c) for c in channels]
        names: list[str] = []
        token = ""
        while True:
            page = await stubs[0].ListWorkflows(
                pb.ListWorkflowsRequest(
                    definition="four-tasks", status=RUNNING, page_size=500, page_token=token
                ),
                timeout=30,
            )
            names += [w.name for w in page.workflows]
            token = page.next_page_token
            if not token:
                break
        for first in range(0, len(names), 200):
            # One that completed meanwhile is refused (ALREADY_TERMINAL): as good.
            await asyncio.gather(
                *(
                    stubs[i % len(stubs)].CancelWorkflow(
                        pb.CancelWorkflowRequest(name=name, reason="bench: between runs"),
                        timeout=30,
                    )
                    for i, name in enumerate(names[first : first + 200], first)
                ),
                return_exceptions=True,
            )
        for channel in channels:
            await channel.close()
        return len(names)

    return asyncio.run(run())


def open_tasks(database: str) -> dict[str, int]:
    """The queue's tasks that are not finished, by status, as the database holds them."""
    with psycopg.connect(database, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT status, count(*) FROM workflow_tasks WHERE queue = %s"
            " AND status IN ('SCHEDULED', 'LEASED', 'BACKOFF') GROUP BY status",
            (QUEUE,),
        ).fetchall()
    return {str(status): int(count) for status, count in rows}


def empty_queue(targets: list[str], database: str) -> dict[str, Any]:
    """Cancel what an earlier run left in flight and wait until no task of the queue is
    open; refuse to measure on top of a backlog."""
    cancelled = cancel_in_flight(targets)
    deadline = time.monotonic() + EMPTY_WAIT
    while (left := open_tasks(database)) and time.monotonic() < deadline:
        time.sleep(0.2)
    if left:
        raise SystemExit(f"the queue did not empty before the run: {left} open tasks")
    return {"cancelled_before": cancelled, "open_tasks_at_start": 0}


def baseline(targets: list[str], seconds: float) -> float:
    async def run() -> float:
        rates = await asyncio.gather(*(closed_loop(t, seconds, concurrency=16) for t in targets))
        return float(sum(rates))

    asyncio.run(run())  # warm-up
    return asyncio.run(run())


@functools.cache
def java_classpath() -> str:
    """Build the Java worker once (bench/javaworker/build.sh) and return its classpath."""
    built = subprocess.run(
        ["bash", str(Path(__file__).resolve().parent / "javaworker" / "build.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if built.returncode != 0:
        raise SystemExit(f"the Java worker did not build:\n{built.stderr[-3000:]}")
    return built.stdout.strip()


def worker_argv(
    engine: str,
    targets: list[str],
    window: tuple[float, float, float],
    pollers: int,
    fail_first: bool = False,
) -> list[str]:
    """One worker process's command line: this file's ``work`` (python), or the same loop
    in Go (bench/goload's tasks scenario), whose own CPU leaves the machine's cores to the
    service. ``fail_first`` (Go only): each task's first attempt is failed."""
    begin, end, stop = window
    if engine == "java":
        return [
            "java",
            "-cp",
            java_classpath(),
            "TaskWorker",
            ",".join(targets),
            repr(begin),
            repr(end),
            repr(stop),
            str(pollers),
            QUEUE,
            "four-tasks",
        ]
    if engine == "go":
        return [
            str(loadgen.goload_binary()),
            "--scenario",
            "tasks",
            "--target",
            ",".join(targets),
            "--task-window",
            f"{begin!r},{end!r},{stop!r}",
            "--pollers",
            str(pollers),
            "--task-queue",
            QUEUE,
            *(["--task-fail-first"] if fail_first else []),
        ]
    return [
        sys.executable,
        __file__,
        "--worker",
        ",".join(targets),
        "--begin",
        str(begin),
        "--end",
        str(end),
        "--stop",
        str(stop),
        "--pollers",
        str(pollers),
    ]


def tasks_run(
    args: argparse.Namespace, targets: list[str], pids: list[int], database: str, engine: str
) -> dict[str, Any]:
    emptied = empty_queue(targets, database)
    start_population(targets, args.population)
    begin = time.time() + args.warmup
    end = begin + args.seconds
    stop = end + 1.0
    procs = []
    for w in range(args.workers):
        rotated = targets[w % len(targets) :] + targets[: w % len(targets)]
        procs.append(
            subprocess.Popen(
                worker_argv(engine, rotated, (begin, end, stop), args.pollers, args.fail_first),
                stdout=subprocess.PIPE,
                text=True,
            )
        )
    time.sleep(max(0.0, begin - time.time()))
    cpu_before = sum(cpu_seconds(p) for p in pids)
    worker_cpu_before = sum(cpu_seconds(p.pid) for p in procs)
    database_cpu_before = postgres_cpu()
    time.sleep(max(0.0, end - time.time()))
    cpu = sum(cpu_seconds(p) for p in pids) - cpu_before
    worker_cpu = sum(cpu_seconds(p.pid) for p in procs) - worker_cpu_before
    database_cpu = postgres_cpu() - database_cpu_before
    results = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    steps = sum(r["steps"] for r in results)
    failures = sum(r.get("failures", 0) for r in results)
    to_start = [x for r in results for x in r["to_start"]]
    e2e = [x for r in results for x in r["end_to_end"]]
    return {
        **emptied,
        "worker_engine": engine,
        "task_steps_per_s": steps / args.seconds,
        "workflows_per_s": sum(r["completed_workflows"] for r in results) / args.seconds,
        "errors": sum(r["errors"] for r in results),
        "schedule_to_start_ms": {
            "p50": percentile(to_start, 0.5) * 1000,
            "p99": percentile(to_start, 0.99) * 1000,
        },
        "end_to_end_ms": {"p50": percentile(e2e, 0.5) * 1000, "p99": percentile(e2e, 0.99) * 1000},
        "server_cpu_ms_per_task_step": cpu / max(1, steps) * 1000,
        "worker_cpu_ms_per_task_step": worker_cpu / max(1, steps) * 1000,
        "database_cpu_ms_per_task_step": database_cpu / max(1, steps) * 1000,
        "server_cpu_cores": cpu / args.seconds,
        # With --fail-first: failed attempts a second, and the CPU of a report (either).
        "failures_per_s": failures / args.seconds,
        "server_cpu_ms_per_task_report": cpu / max(1, steps + failures) * 1000,
    }


ENGINES = ("python", "go", "java")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--workers", type=int, default=4, help="worker processes")
    parser.add_argument("--pollers", type=int, default=4, help="concurrent polls per worker")
    parser.add_argument("--population", type=int, default=400, help="instances in flight")
    parser.add_argument("--seconds", type=float, default=20.0, help="measurement window")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=2, help="runs of each measurement")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 5 s windows, once")
    parser.add_argument(
        "--worker-engine",
        type=functools.partial(loadgen.engine_list, known=ENGINES),
        default=["python"],
        help="the workers: grpc.aio in Python, Go (bench/goload), Java (bench/javaworker);"
        " several, comma-separated (or all), in turn in each round",
    )
    parser.add_argument(
        "--server-patch",
        action="append",
        default=[],
        help="run the replicas under bench/patched_server.py with this patch (repeat)",
    )
    parser.add_argument(
        "--fail-first",
        action="store_true",
        help="Go workers fail each task's first attempt (retried at once): FailTask's cost",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--begin", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--end", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--stop", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = asyncio.run(
            work(args.worker.split(","), args.begin, args.end, args.stop, args.pollers)
        )
        print(json.dumps(result))
        return
    if args.fail_first and args.worker_engine != ["go"]:
        parser.error("--fail-first needs --worker-engine go")
    if args.quick:
        args.seconds, args.warmup, args.repeat, args.population = 5.0, 2.0, 1, 200
    database = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    report: dict[str, Any] = {
        "replicas": args.replicas,
        "workers": args.workers,
        "population": args.population,
        "seconds": args.seconds,
        "runs": [],
    }
    with workspace(DEFINITIONS, "task-bench-") as (definitions, logs), ExitStack() as stack:
        started = [
            stack.enter_context(
                server(database, definitions, logs, f"replica-{n}", patches=args.server_patch)
            )
            for n in range(args.replicas)
        ]
        targets = [t for t, _ in started]
        pids = [p for _, p in started]
        engines = args.worker_engine
        # Built before any window opens: a build inside one would eat its warm-up.
        if "go" in engines:
            loadgen.goload_binary()
        if "java" in engines:
            java_classpath()
        # Interleaved, so that a drift of the machine's speed hits both alike.
        for _ in range(args.repeat):
            base = baseline(targets, args.seconds)
            for engine in engines:
                run = tasks_run(args, targets, pids, database, engine)
                run["start_to_complete_per_s"] = base
                run["ratio_task_steps_to_start_to_complete"] = run["task_steps_per_s"] / base
                report["runs"].append(run)
                print(json.dumps(run), file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))
    for engine in engines:
        runs = [r for r in report["runs"] if r["worker_engine"] == engine]
        rate = statistics.median(r["task_steps_per_s"] for r in runs)
        ratio = statistics.median(r["ratio_task_steps_to_start_to_complete"] for r in runs)
        cpu = statistics.median(r["server_cpu_ms_per_task_step"] for r in runs)
        database = statistics.median(r["database_cpu_ms_per_task_step"] for r in runs)
        verdict = "met" if rate >= 1000 else "NOT met"
        print(
            f"{engine} workers: goal >= 1,000 task steps/s with {args.replicas} replicas:"
            f" {rate:.0f}/s: {verdict} (ratio to start-to-complete {ratio:.2f},"
            f" server CPU {cpu:.2f} ms per task step, PostgreSQL's {database:.2f})"
        )


if __name__ == "__main__":
    main()
