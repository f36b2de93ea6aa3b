"""Signal-with-start against StartWorkflow, in one run, on PostgreSQL.

Not a test. Run it through bench/run_signal_with_start.sh, which brings its own
PostgreSQL. On 127.0.0.1 only, one statewrightd (one process) and one grpc.aio load
process with ``--concurrency`` lanes, closed loop, for ``--window`` seconds each,
interleaved so that a drift of the machine's speed hits every kind alike:

- ``start``: StartWorkflow of ``counter`` with a new id each time (RUNNING after its first
  step): the baseline;
- ``sws_new``: SignalWithStartWorkflow with a new id each time: the start and the event in
  one step, and the insert that decides it;
- ``sws_existing``: SignalWithStartWorkflow to ``--keys`` instances that exist (started
  beforehand, spread over the lanes): the event delivered as a signal;
- ``signal``: SignalWorkflow to the same instances: what ``sws_existing`` costs beyond it.

Prints calls/s of each and the ratios to ``start`` (and ``sws_existing`` to ``signal``) as
JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import struct_pb2
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.timer_bench import server, workspace

DEFINITIONS = {
    "counter.yaml": """
name: counter
version: 1
context:
  count: {type: int, default: 0}
states:
  open: {}
  closed: {}
transitions:
  - {from: open, on: add, to: open, set: {count: "context.count + 1"}}
  - {from: open, on: close, to: closed}
""",
}

Call = Callable[["pb_grpc.WorkflowServiceAsyncStub", int], Awaitable[object]]


def _payload() -> struct_pb2.Struct:
    payload = struct_pb2.Struct()
    payload.update({"n": 1})
    return payload


async def _loop(target: str, seconds: float, concurrency: int, call: Call) -> float:
    """Calls/s of ``call`` over ``seconds``; lane ``i`` passes its own index."""
    done = 0
    stop = time.monotonic() + seconds
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)

        async def lane(i: int) -> None:
            nonlocal done
            while time.monotonic() < stop:
                try:
                    await call(stub, i)
                except grpc.aio.AioRpcError as exc:
                    # Say why (an instance the load failed, say) rather than only that.
                    why = f"lane {i}: {exc.code().name}: {exc.details()}"
                    words = (exc.details() or "").split()
                    if exc.code() is grpc.StatusCode.FAILED_PRECONDITION and len(words) > 1:
                        name = f"workflows/{words[1]}"
                        got = await stub.GetWorkflow(pb.GetWorkflowRequest(name=name))
                        why += f"; its error: {got.workflow.error}"
                    raise SystemExit(why) from None
                done += 1

        await asyncio.gather(*(lane(i) for i in range(concurrency)))
    return done / seconds


def calls(keys: list[str]) -> dict[str, Call]:
    payload = _payload()

    async def start(stub: pb_grpc.WorkflowServiceAsyncStub, lane: int) -> object:
        request = pb.StartWorkflowRequest(definition="counter", workflow_id=uuid.uuid4().hex)
        return await stub.StartWorkflow(request, timeout=30)

    async def sws_new(stub: pb_grpc.WorkflowServiceAsyncStub, lane: int) -> object:
        request = pb.SignalWithStartWorkflowRequest(
            definition="counter", workflow_id=uuid.uuid4().hex, event="add", payload=payload
        )
        return await stub.SignalWithStartWorkflow(request, timeout=30)

    async def sws_existing(stub: pb_grpc.WorkflowServiceAsyncStub, lane: int) -> object:
        # Each lane its own instance: no two calls wait for one instance's turn.
        request = pb.SignalWithStartWorkflowRequest(
            definition="counter", workflow_id=keys[lane], event="add", payload=payload
        )
        return await stub.SignalWithStartWorkflow(request, timeout=30)

    async def signal(stub: pb_grpc.WorkflowServiceAsyncStub, lane: int) -> object:
        request = pb.SignalWorkflowRequest(
            name=f"workflows/{keys[lane]}", event="add", payload=payload
        )
        return await stub.SignalWorkflow(request, timeout=30)

    return {"start": start, "sws_new": sws_new, "sws_existing": sws_existing, "signal": signal}


async def _prepare(target: str, keys: list[str]) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        for wid in keys:
            started = await stub.StartWorkflow(
                pb.StartWorkflowRequest(definition="counter", workflow_id=wid)
            )
            assert started.workflow.status == workflow_pb2.WORKFLOW_STATUS_RUNNING, started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--window", type=float, default=10.0, help="seconds of each measurement")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--concurrency", type=int, default=32, help="closed-loop lanes")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 s, one round")
    args = parser.parse_args()
    if args.quick:
        args.window, args.rounds = 3.0, 1
    database = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    keys = [f"key-{uuid.uuid4().hex[:8]}-{i}" for i in range(args.concurrency)]
    measured: dict[str, list[float]] = {}
    with (
        workspace(DEFINITIONS, "sws-bench-") as (definitions, logs),
        server(database, definitions, logs, "sws") as (target, _),
    ):
        asyncio.run(_prepare(target, keys))
        kinds = calls(keys)
        asyncio.run(_loop(target, 2.0, args.concurrency, kinds["start"]))  # warm-up
        for _ in range(args.rounds):
            for name, call in kinds.items():
                rate = asyncio.run(_loop(target, args.window, args.concurrency, call))
                measured.setdefault(name, []).append(rate)
    mean = {name: statistics.mean(rates) for name, rates in measured.items()}
    results: dict[str, Any] = {
        "calls_per_s": measured,
        "ratio_sws_new_to_start": mean["sws_new"] / mean["start"],
        "ratio_sws_existing_to_start": mean["sws_existing"] / mean["start"],
        "ratio_sws_existing_to_signal": mean["sws_existing"] / mean["signal"],
        "window_s": args.window,
        "rounds": args.rounds,
        "concurrency": args.concurrency,
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
