"""CPU cost of each piece of a StartWorkflow / ResumeWorkflow, outside gRPC and PostgreSQL.

Not a test. The runtime benchmark (bench/run.sh) measures CPU per operation for each
server thread under load; this one times, single-threaded and in isolation, the service
code each thread runs per operation, so the two together say how much of a thread's time
is the service's own code and how much is gRPC, asyncio, thread hand-offs or psycopg.

    .venv/bin/python bench/step_costs.py [seconds-per-item]   # default 2

Items are grouped by the thread that runs them in the server: the asyncio main thread
(servicer), the EventLoop thread (engine and records) and the group-commit writer.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from google.protobuf import struct_pb2
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.api import validation as v
from statewrightd.api.convert import (
    dict_to_struct,
    struct_to_dict,
    timestamp,
    transitions_pb,
    workflow_pb,
)
from statewrightd.definitions import load_definition_file
from statewrightd.engine import fsm
from statewrightd.engine.snapshots import history_record, instance_record, snapshot_of
from statewrightd.store.codec import encode_op
from statewrightd.store.records import Create, Save

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "definitions"


# CPU time of this process (all its threads), not wall time: on a shared machine a slice
# during which the process was descheduled would otherwise count the other processes'
# work. Each item is timed in REPEATS slices and the cheapest kept, for the same reason.
REPEATS = 5


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        count = 0
        began = time.process_time()
        deadline = began + seconds / REPEATS
        while time.process_time() < deadline:
            for _ in range(50):
                fn()
            count += 50
        best = min(best, (time.process_time() - began) / count * 1e6)
    return best


def async_per_call_us(make: Callable[[], Awaitable[None]], seconds: float) -> float:
    """Like per_call_us for a coroutine factory, run on a fresh asyncio loop."""

    async def main() -> float:
        best = float("inf")
        for _ in range(REPEATS):
            count = 0
            began = time.process_time()
            deadline = began + seconds / REPEATS
            while time.process_time() < deadline:
                for _ in range(50):
                    await make()
                count += 50
            best = min(best, (time.process_time() - began) / count * 1e6)
        return best

    return asyncio.run(main())


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    order = load_definition_file(EXAMPLES / "order-pricing.yaml")
    mail = load_definition_file(EXAMPLES / "mail-approval.yaml")
    order_input = struct_pb2.Struct()
    order_input.update({"items": ["a"], "price": 3.0, "quantity": 2})
    request = pb.StartWorkflowRequest(definition="order-pricing", input=order_input)
    request_bytes = request.SerializeToString()
    now = datetime.now(UTC)

    started = fsm.start(order, "w" * 32, struct_to_dict(order_input, "input"))
    record = instance_record(started.snapshot, now, now)
    create = Create(record, history_record(started, None, now), None)
    waiting = fsm.start(mail, "m" * 32, {"topic": "benchmark"}).snapshot
    resumed = fsm.resume(mail, waiting, "approve", {"approver": "bench"})
    resumed_record = instance_record(resumed.snapshot, now, now)
    save = Save(resumed_record, waiting.revision, history_record(resumed, "approve", now), None)

    def start_response() -> bytes:
        return pb.StartWorkflowResponse(
            workflow=workflow_pb(record, order),
            transitions=transitions_pb(started.transitions),
            created=True,
        ).SerializeToString()

    def resume_response() -> bytes:
        return pb.ResumeWorkflowResponse(
            workflow=workflow_pb(resumed_record, mail),
            transitions=transitions_pb(resumed.transitions),
        ).SerializeToString()

    def validate_start() -> None:
        parsed = pb.StartWorkflowRequest.FromString(request_bytes)
        v.definition_name(parsed.definition)
        v.non_negative("version", parsed.version)
        v.request_id(parsed.request_id)
        struct_to_dict(parsed.input, "input")
        uuid.uuid4().hex  # noqa: B018 - the server generates an id per start

    def on_loop_start() -> None:
        result = fsm.start(order, "w" * 32, {"items": ["a"], "price": 3.0, "quantity": 2})
        stamp = datetime.now(UTC)
        Create(instance_record(result.snapshot, stamp, stamp), history_record(result, None, stamp))

    def on_loop_resume() -> None:
        result = fsm.resume(mail, waiting, "approve", {"approver": "bench"})
        stamp = datetime.now(UTC)
        Save(
            instance_record(result.snapshot, stamp, stamp),
            waiting.revision,
            history_record(result, "approve", stamp),
        )

    snapshot = snapshot_of(record)

    def order_workflow() -> object:
        return workflow_pb(record, order)

    def order_context() -> object:
        return dict_to_struct(record.context)

    def order_events() -> object:
        return fsm.accepted_events(order, snapshot)

    def two_timestamps() -> object:
        return timestamp(record.create_time), timestamp(record.update_time)

    def timed(fn: Callable[[], object]) -> float:
        return per_call_us(fn, seconds)

    def timed_async(make: Callable[[], Awaitable[None]]) -> float:
        return async_per_call_us(make, seconds)

    pool = ThreadPoolExecutor(max_workers=8)

    async def round_trip() -> None:
        # What Application.definition costs when the version is not pinned: a hop to the
        # read pool and back, for a lookup that is a dict read when the cache is fresh.
        await asyncio.get_running_loop().run_in_executor(pool, lambda: None)

    async def wait_for_shield() -> None:
        # Application.step awaits its reply through wait_for(shield(future), budget).
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        loop.call_soon(functools.partial(future.set_result, 1))
        await asyncio.wait_for(asyncio.shield(future), 10.0)

    async def plain_future() -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        loop.call_soon(functools.partial(future.set_result, 1))
        await future

    items: list[tuple[str, str, Callable[[], float]]] = [
        ("main", "parse + validate StartWorkflow, input, uuid", lambda: timed(validate_start)),
        ("main", "StartWorkflow response: convert + serialize", lambda: timed(start_response)),
        ("main", "  of which workflow_pb (order-pricing)", lambda: timed(order_workflow)),
        ("main", "  of which context dict_to_struct", lambda: timed(order_context)),
        ("main", "  of which accepted_events", lambda: timed(order_events)),
        ("main", "  of which 2 timestamps", lambda: timed(two_timestamps)),
        ("main", "ResumeWorkflow response: convert + serialize", lambda: timed(resume_response)),
        ("main", "await reply: wait_for(shield(future))", lambda: timed_async(wait_for_shield)),
        ("main", "await reply: plain future (comparison)", lambda: timed_async(plain_future)),
        ("main", "read-pool round trip (version unpinned)", lambda: timed_async(round_trip)),
        ("EventLoop", "fsm.start order-pricing + records", lambda: timed(on_loop_start)),
        ("EventLoop", "fsm.resume mail-approval + records", lambda: timed(on_loop_resume)),
        ("writer", "encode_op Create (order-pricing)", lambda: timed(lambda: encode_op(create))),
        ("writer", "encode_op Save (mail-approval resume)", lambda: timed(lambda: encode_op(save))),
    ]
    rows = [(thread, item, measure()) for thread, item, measure in items]
    pool.shutdown()
    print(f"{'thread':<10} {'item':<48} {'us/call':>8}")
    for thread, item, micros in rows:
        print(f"{thread:<10} {item:<48} {micros:8.1f}")


if __name__ == "__main__":
    main()
