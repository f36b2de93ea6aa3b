"""The floor under "memory per idle watcher": a bare grpc.aio server-streaming call.

Not a test. Starts a grpc.aio server in this process whose WatchWorkflow handler is an
async generator parked on one future (no Statewright code at all), opens ``--streams``
streams to it from a separate client process over one channel, and reports how much this
process's resident memory grew per open stream. Whatever statewrightd keeps per watcher
comes on top of this number, so it says which part of bench/watch_bench.py's figure is
the service's and which is gRPC's own.

    .venv/bin/python bench/stream_floor.py [--streams 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import grpc
from statewright.v1 import workflow_service_pb2 as pb

# The same pending-call limits as statewrightd (server.py): grpc's default stops new
# streams at about 3,000.
SERVER_OPTIONS = [
    ("grpc.server.max_pending_requests", 50_000),
    ("grpc.server.max_pending_requests_hard_limit", 50_000),
]

CLIENT = """
import asyncio, sys, grpc
from statewright.v1 import workflow_service_pb2 as pb, workflow_service_pb2_grpc as pb_grpc
async def main():
    stub = pb_grpc.WorkflowServiceStub(grpc.aio.insecure_channel(sys.argv[1]))
    calls = [stub.WatchWorkflow(pb.WatchWorkflowRequest(name="workflows/x"))
             for _ in range(int(sys.argv[2]))]
    await asyncio.sleep(float(sys.argv[3]))
    for call in calls:
        call.cancel()
asyncio.run(main())
"""


class ParkedWatch:
    def __init__(self) -> None:
        self.open = 0

    async def watch(
        self, request: pb.WatchWorkflowRequest, context: Any
    ) -> AsyncIterator[pb.WatchWorkflowResponse]:
        self.open += 1
        try:
            await asyncio.get_running_loop().create_future()
            yield pb.WatchWorkflowResponse()
        finally:
            self.open -= 1


def rss_kib() -> int:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


def open_streams(target: str, count: int, hold: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", CLIENT, target, str(count), str(hold)])


async def wait_open(servicer: ParkedWatch, count: int, seconds: float) -> bool:
    for _ in range(int(seconds * 10)):
        if servicer.open == count:
            return True
        await asyncio.sleep(0.1)
    return False


async def measure(streams: int, hold: float) -> dict[str, float]:
    server = grpc.aio.server(options=SERVER_OPTIONS)
    servicer = ParkedWatch()
    handler = grpc.unary_stream_rpc_method_handler(
        servicer.watch,
        request_deserializer=pb.WatchWorkflowRequest.FromString,
        response_serializer=pb.WatchWorkflowResponse.SerializeToString,
    )
    service = grpc.method_handlers_generic_handler(
        "statewright.v1.WorkflowService", {"WatchWorkflow": handler}
    )
    server.add_generic_rpc_handlers((service,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    target = f"127.0.0.1:{port}"
    try:
        # A first, small round warms grpc's per-call allocations up (arenas, code paths).
        warm = open_streams(target, 50, 2.0)
        await wait_open(servicer, 50, 10.0)
        await asyncio.to_thread(warm.wait, 30)
        await asyncio.sleep(1.0)
        gc.collect()
        before = rss_kib()
        client = open_streams(target, streams, hold + 30.0)
        all_open = await wait_open(servicer, streams, 60.0)
        await asyncio.sleep(hold)
        after = rss_kib()
        client.kill()
        await asyncio.to_thread(client.wait, 30)
        # Let the streams end on the client's disconnect rather than cancel them at stop.
        await wait_open(servicer, 0, 10.0)
    finally:
        await server.stop(None)
    return {
        "streams": streams,
        "all_open": float(all_open),
        "rss_before_mib": round(before / 1024, 1),
        "rss_after_mib": round(after / 1024, 1),
        "kib_per_stream": round((after - before) / streams, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--streams", type=int, default=5000)
    parser.add_argument("--hold", type=float, default=4.0)
    args = parser.parse_args()
    for key, value in asyncio.run(measure(args.streams, args.hold)).items():
        print(f"  {key}: {value}")


if __name__ == "__main__":
    main()
