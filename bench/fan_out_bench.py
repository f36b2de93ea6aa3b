"""The fan-out benchmark: what a `map` state's items cost against single-task workflows.

Not a test. Run it through bench/run_fan_out.sh, which brings its own PostgreSQL. One
statewrightd on 127.0.0.1 and ``--pollers`` asyncio pollers in this process (bench/flow_bench.py's,
completing each task at once with an empty result). In the same run, alternating:

- ``single``: ``--items`` instances of a one-task workflow, started up front, then worked
  off: task steps completed per second;
- ``map``: one instance whose task state maps over a list of ``--items`` elements with
  ``max_concurrency: --concurrency``: the time of its entering step (the start call, which
  writes every item), then items completed per second until the join has run (each item's
  end is a step of the one instance, so they are serialised where single-task workflows
  are not).

The report gives both rates and their ratio (map / single).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

import grpc
import psycopg
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.flow_bench import work_off
from bench.timer_bench import server, workspace

DEFINITIONS = {
    "fan-single.yaml": """
name: fan-single
version: 1
states:
  work:
    task: {queue: bench.single}
transitions:
  - {from: work, to: __finish__}
""",
    "fan-map.yaml": """
name: fan-map
version: 1
context:
  items:   {type: list, default: []}
  results: {type: list, default: []}
states:
  work:
    task:
      queue: bench.map
      map: "context.items"
      input: "{'n': index}"
      max_concurrency: MAX
      apply: {results: "results"}
transitions:
  - {from: work, to: __finish__}
""",
}


async def start_singles(target: str, n: int) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        todo = iter(range(n))

        async def starter() -> None:
            for _ in todo:
                await stub.StartWorkflow(
                    pb.StartWorkflowRequest(definition="fan-single"), timeout=60
                )

        await asyncio.gather(*(starter() for _ in range(16)))


def run_map(target: str, items: int, pollers: int) -> tuple[float, float]:
    """(seconds of the entering step, items completed per second until the join)."""
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        request = pb.StartWorkflowRequest(definition="fan-map")
        request.input.update({"items": [{"i": i} for i in range(items)]})
        began = time.monotonic()
        wid = stub.StartWorkflow(request, timeout=120).workflow.workflow_id
        entered = time.monotonic() - began
        seconds = items / asyncio.run(work_off(target, "bench.map", items, pollers))
        deadline = time.monotonic() + 120
        get = pb.GetWorkflowRequest(name=f"workflows/{wid}")
        while stub.GetWorkflow(get, timeout=30).workflow.status != (
            workflow_pb2.WORKFLOW_STATUS_COMPLETED
        ):
            if time.monotonic() > deadline:
                raise RuntimeError("the map did not join in time")
            time.sleep(0.05)
        seconds = max(seconds, time.monotonic() - began - entered)
    return entered, items / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--pollers", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    admin = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    name = f"fan_out_bench_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    database = admin.rsplit("/", 1)[0] + "/" + name
    definitions = dict(DEFINITIONS)
    definitions["fan-map.yaml"] = definitions["fan-map.yaml"].replace("MAX", str(args.concurrency))
    single: list[float] = []
    mapped: list[float] = []
    entering: list[float] = []
    try:
        with (
            workspace(definitions, "fan-out-bench-") as (folder, logs),
            server(database, folder, logs, "fan-out") as (target, _pid),
        ):
            for _ in range(args.repeat):
                asyncio.run(start_singles(target, args.items))
                single.append(
                    asyncio.run(work_off(target, "bench.single", args.items, args.pollers))
                )
                print(f"  single: {single[-1]:,.0f} task steps/s", flush=True)
                entered, rate = run_map(target, args.items, args.pollers)
                entering.append(entered)
                mapped.append(rate)
                print(f"  map: entered in {entered:.2f} s, {rate:,.0f} items/s", flush=True)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    report = {
        "items": args.items,
        "max_concurrency": args.concurrency,
        "pollers": args.pollers,
        "single_task_steps_per_s": statistics.median(single),
        "map_items_per_s": statistics.median(mapped),
        "map_entering_step_s": statistics.median(entering),
        "ratio_map_over_single": statistics.median(mapped) / statistics.median(single),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
