"""The child-workflow benchmark: what a `workflow:` state costs against independent starts.

Not a test. Run it through bench/run_child.sh, which brings its own PostgreSQL. One
statewrightd on 127.0.0.1 and this process as its client. The child (``bench-leaf``)
completes in its first step, so what is measured is the machinery around it. In the same
run, alternating:

- ``independent``: ``2 * --pairs`` starts of the leaf, 16 at a time, each completed in
  its start call: pairs per second (two starts a pair);
- ``parent+child``: ``--pairs`` parents, 16 started at a time, each entering a
  `workflow:` state that starts one leaf child and finishes once the child's end comes
  back (its task written in the parent's step, the child started by the server's child
  runner, its end delivered as a second step of the parent): from the first start until
  every parent is COMPLETED, pairs per second;
- ``map``: one parent whose `workflow:` state maps over ``--children`` elements (one
  child each, all at once): from its start until it has joined, children per second.

The report gives the rates and the ratio (parent+child / independent).
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
from bench.timer_bench import server, workspace

DEFINITIONS = {
    "bench-leaf.yaml": """
name: bench-leaf
version: 1
context:
  n: {type: int, default: 0}
states:
  done: {}
""",
    "bench-parent.yaml": """
name: bench-parent
version: 1
context:
  got: {type: map, default: {}}
states:
  call:
    workflow: {definition: bench-leaf, input: "{'n': 1}", apply: {got: "result.context"}}
transitions:
  - {from: call, to: __finish__}
""",
    "bench-map.yaml": """
name: bench-map
version: 1
context:
  items: {type: list, default: []}
  results: {type: list, default: []}
states:
  call:
    workflow:
      definition: bench-leaf
      map: "context.items"
      input: "{'n': index}"
      apply: {results: "results"}
transitions:
  - {from: call, to: __finish__}
""",
}
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED
TIMEOUT = 600.0


async def start_all(target: str, definition: str, n: int) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        todo = iter(range(n))

        async def starter() -> None:
            for _ in todo:
                await stub.StartWorkflow(pb.StartWorkflowRequest(definition=definition), timeout=60)

        await asyncio.gather(*(starter() for _ in range(16)))


def completed(stub: pb_grpc.WorkflowServiceStub, definition: str) -> int:
    request = pb.CountWorkflowsRequest(filter=f'definition = "{definition}" AND status = COMPLETED')
    return int(stub.CountWorkflows(request, timeout=30).total)


def wait_completed(stub: pb_grpc.WorkflowServiceStub, definition: str, n: int) -> None:
    deadline = time.monotonic() + TIMEOUT
    while completed(stub, definition) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{definition}: not every instance completed in time")
        time.sleep(0.05)


def run_round(target: str, pairs: int, children: int, done: dict[str, int]) -> tuple[float, ...]:
    """(independent pairs/s, parent+child pairs/s, map children/s)."""
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        began = time.monotonic()
        asyncio.run(start_all(target, "bench-leaf", 2 * pairs))  # each completes as it starts
        independent = pairs / (time.monotonic() - began)
        began = time.monotonic()
        asyncio.run(start_all(target, "bench-parent", pairs))
        done["bench-parent"] += pairs
        wait_completed(stub, "bench-parent", done["bench-parent"])
        nested = pairs / (time.monotonic() - began)
        request = pb.StartWorkflowRequest(definition="bench-map")
        request.input.update({"items": list(range(children))})
        began = time.monotonic()
        stub.StartWorkflow(request, timeout=120)
        done["bench-map"] += 1
        wait_completed(stub, "bench-map", done["bench-map"])
        mapped = children / (time.monotonic() - began)
    return independent, nested, mapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=500)
    parser.add_argument("--children", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    admin = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    name = f"child_bench_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    database = admin.rsplit("/", 1)[0] + "/" + name
    rounds: list[tuple[float, ...]] = []
    done = {"bench-parent": 0, "bench-map": 0}  # completed so far, by definition
    try:
        with (
            workspace(DEFINITIONS, "child-bench-") as (folder, logs),
            server(database, folder, logs, "child") as (target, _pid),
        ):
            for _ in range(args.repeat):
                rounds.append(run_round(target, args.pairs, args.children, done))
                independent, nested, mapped = rounds[-1]
                print(
                    f"  independent: {independent:,.0f} pairs/s, parent+child: "
                    f"{nested:,.0f} pairs/s, map: {mapped:,.0f} children/s",
                    flush=True,
                )
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())
    independent = statistics.median(r[0] for r in rounds)
    nested = statistics.median(r[1] for r in rounds)
    report = {
        "pairs": args.pairs,
        "children": args.children,
        "independent_pairs_per_s": independent,
        "parent_child_pairs_per_s": nested,
        "map_children_per_s": statistics.median(r[2] for r in rounds),
        "ratio_parent_child_over_independent": nested / independent,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
