"""A bare grpc.aio WorkflowService that answers StartWorkflow with a canned response.

Not a test. It is the baseline of the runtime benchmark (bench/runtime_bench.py): the
same gRPC stack, the same request and response bytes as a real order-pricing start,
and none of the runtime, so ``runtime throughput / echo throughput`` shows what the
servicer, the EventLoop hand-off, the engine and the database cost together.

``--tls-cert``/``--tls-key`` serve it over TLS (as statewrightd's flags of those names do),
so that the security benchmark can tell gRPC's own TLS cost from the server's.

``--mode hop`` adds only the thread hand-off the runtime uses, through the server's own
``EventLoop`` (post to its FIFO, drained in batches, each batch's replies back in one
``call_soon_threadsafe``), so the hand-off can be told apart from everything else the
runtime does.

    .venv/bin/python bench/echo_server.py --listen 127.0.0.1:0 [--mode direct|hop]
        [--tls-cert CERT --tls-key KEY]

It prints ``echo serving on HOST:PORT`` once it listens, and stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.api.convert import transitions_pb, workflow_pb
from statewrightd.definitions import load_definition_file
from statewrightd.engine import fsm
from statewrightd.engine.event_loop import EventLoop
from statewrightd.engine.snapshots import instance_record

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "definitions"

# Same as the real server (server.py) so the two gRPC stacks are configured alike.
SERVER_OPTIONS = [
    ("grpc.so_reuseport", 1),
    ("grpc.max_receive_message_length", 4 * 1024 * 1024),
]

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["WorkflowService"].full_name

# The load generator's order-pricing input; the canned answer is what the engine makes
# of it, so the echo serializes the same response the runtime sends.
ORDER_INPUT: dict[str, object] = {"items": ["a"], "price": 3.0, "quantity": 2}


def canned_start_response() -> pb.StartWorkflowResponse:
    definition = load_definition_file(EXAMPLES / "order-pricing.yaml")
    result = fsm.start(definition, "0" * 32, ORDER_INPUT)
    now = datetime.now(UTC)
    record = instance_record(result.snapshot, now, now)
    return pb.StartWorkflowResponse(
        workflow=workflow_pb(record, definition),
        transitions=transitions_pb(result.transitions),
        created=True,
    )


def _settle(future: asyncio.Future[pb.StartWorkflowResponse], value: Any) -> None:
    if not future.done():
        future.set_result(value)


class EchoServicer:
    """Only StartWorkflow; every other method answers UNIMPLEMENTED (grpc's default)."""

    def __init__(self, response: pb.StartWorkflowResponse, hop: EventLoop | None) -> None:
        self._response = response
        self._hop = hop

    async def StartWorkflow(
        self, request: pb.StartWorkflowRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.StartWorkflowResponse:
        hop = self._hop
        if hop is None:
            return self._response
        future: asyncio.Future[pb.StartWorkflowResponse] = (
            asyncio.get_running_loop().create_future()
        )
        response = self._response

        def work() -> None:
            hop.reply(functools.partial(_settle, future, response))

        hop.post(work)
        return await future


async def serve(listen: str, mode: str, tls: tuple[Path, Path] | None = None) -> None:
    hop: EventLoop | None = None
    if mode == "hop":
        # The server's own EventLoop: post, drain in batches, replies per batch.
        hop = EventLoop(name="echo-hop")
        hop.start(asyncio.get_running_loop())
    server = grpc.aio.server(options=SERVER_OPTIONS)
    servicer = EchoServicer(canned_start_response(), hop)
    handler = grpc.method_handlers_generic_handler(
        SERVICE_NAME,
        {
            "StartWorkflow": grpc.unary_unary_rpc_method_handler(
                servicer.StartWorkflow,
                request_deserializer=pb.StartWorkflowRequest.FromString,
                response_serializer=pb.StartWorkflowResponse.SerializeToString,
            )
        },
    )
    server.add_generic_rpc_handlers((handler,))
    if tls is None:
        port = server.add_insecure_port(listen)
    else:
        pair = (tls[1].read_bytes(), tls[0].read_bytes())
        port = server.add_secure_port(listen, grpc.ssl_server_credentials([pair]))
    if not port:
        raise OSError(f"could not bind {listen}")
    await server.start()
    # The orchestrator reads this line to find the port when listening on port 0.
    print(f"echo serving on {listen.rpartition(':')[0]}:{port} mode={mode}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(1.0)
    if hop is not None:
        hop.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--mode", choices=("direct", "hop"), default="direct")
    parser.add_argument("--tls-cert", type=Path, help="PEM certificate chain: serve over TLS")
    parser.add_argument("--tls-key", type=Path, help="PEM private key of --tls-cert")
    args = parser.parse_args()
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    tls = None if args.tls_cert is None else (args.tls_cert, args.tls_key)
    asyncio.run(serve(args.listen, args.mode, tls))


if __name__ == "__main__":
    main()
