"""One trace from the caller through every step and two workers (Python and Go) and back.

The server runs in this process with an in-memory exporter (as in test_tracing); the
caller and the Python worker use the Python client in this process, with a global SDK
tracer provider of the test's own recording their spans; the Go worker is a process of
its own (clients/go/cmd/traced_worker) that prints the spans it recorded. Everything else
is real: gRPC over loopback, PostgreSQL, the EventLoop and the writer.

order-fulfilment's path: the caller's span -> StartWorkflow -> the start step (schedules
the payments task) -> the Python worker's span -> CompleteTask -> the completion step
(schedules the shipping task) -> the Go worker's span -> CompleteTask -> the step that
ships the order. Each completion step is linked to the step that scheduled its task and
to the worker's span.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from statewright import Client, Worker, WorkflowStatus
from statewright.models import Task

from statewrightd.config import ServerConfig
from statewrightd.observability.setup import Observability
from statewrightd.server import Server
from tests.support.databases import PostgresDatabases
from tests.support.deployment import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
TASKS = "/statewright.v1.TaskService/"
START = "/statewright.v1.WorkflowService/StartWorkflow"


@pytest.fixture(scope="module")
def go_worker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """clients/go/cmd/traced_worker, built once."""
    if shutil.which("go") is None:
        pytest.fail("the Go toolchain is needed to build the Go worker")
    binary = tmp_path_factory.mktemp("go") / "traced_worker"
    subprocess.run(
        ["go", "build", "-o", str(binary), "./cmd/traced_worker"],
        cwd=ROOT / "clients" / "go",
        env={**os.environ, "GOFLAGS": "-mod=readonly"},
        check=True,
        timeout=600,
    )
    return binary


@pytest.fixture
def client_spans() -> Iterator[InMemorySpanExporter]:
    """The spans the Python client records in this process (the global provider's)."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    assert isinstance(trace.get_tracer_provider(), TracerProvider), "a global SDK provider"
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    exporter.shutdown()  # its processor stays with the global provider: record nothing more


def _id(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.span_id)


def _trace(span: ReadableSpan) -> int:
    assert span.context is not None
    return int(span.context.trace_id)


def _parent(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def _one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def _links(span: ReadableSpan) -> dict[str, int]:
    return {
        str(link.attributes["statewright.link"]): link.context.span_id
        for link in span.links
        if link.attributes is not None and "statewright.link" in link.attributes
    }


def _order_with_python_worker(target: str, workflow_id: str) -> tuple[Any, list[str]]:
    """Starts the order under a span of the caller's, runs the payments task on a Python
    worker, and watches the order to its end; the handler's own span names the span it
    ran in."""
    tracer = trace.get_tracer("tests.trace_tree")
    seen: list[str] = []

    def charge(task: Task) -> dict[str, object]:
        seen.append(format(trace.get_current_span().get_span_context().span_id, "016x"))
        with tracer.start_as_current_span("charge card"):
            pass
        return {"id": "ch-" + str(task.input["order"])}

    with Client(target) as client:
        with tracer.start_as_current_span("place order", kind=SpanKind.CLIENT):
            started = client.start(
                "order-fulfilment", {"items": ["book"], "price": 12.5}, workflow_id=workflow_id
            )
        worker = Worker(client, poll_wait=1.0)
        worker.register("payments", charge)
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            final = None
            for event in client.watch(started.workflow.name, timeout=60):
                final = event.workflow
        finally:
            worker.stop()
            thread.join(30)
    assert not thread.is_alive()
    return final, seen


async def test_one_trace_through_the_steps_and_two_workers(
    postgres_databases: PostgresDatabases,
    go_worker: Path,
    client_spans: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    server_spans = InMemorySpanExporter()
    config = ServerConfig(
        listen="127.0.0.1:0",
        database_url=postgres_databases.create(),
        definitions_dir=EXAMPLES,
        grace_seconds=1.0,
    )
    server = Server(config, Observability(config, env={}, span_exporters=[server_spans]))
    port = await server.start()
    target = f"127.0.0.1:{port}"
    workflow_id = f"traced-order-{tmp_path.name[-12:].replace('_', '-')}"
    go = await asyncio.create_subprocess_exec(
        str(go_worker),
        *("-target", target, "-queue", "shipping", "-result", '{"tracking": "TRK-1"}'),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        final, handler_spans = await asyncio.to_thread(
            _order_with_python_worker, target, workflow_id
        )
        out, _ = await asyncio.wait_for(go.communicate(), 60)
    finally:
        if go.returncode is None:
            go.kill()
            await go.wait()
        await server.drain()  # flushes the server's spans
    assert go.returncode == 0
    assert final is not None and final.status is WorkflowStatus.COMPLETED
    assert final.state == "shipped"
    go_spans = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    served = [
        s
        for s in server_spans.get_finished_spans()
        if s.attributes is None
        or s.attributes.get("statewright.workflow_id") in (None, workflow_id)
    ]
    mine = client_spans.get_finished_spans()

    # The caller's span -> StartWorkflow -> the start step, one trace from here on.
    caller = _one(mine, "place order")
    start_rpc = _one(served, START)
    assert _parent(start_rpc) == _id(caller) and _trace(start_rpc) == _trace(caller)
    start = _one(served, "statewright.step start")
    assert _parent(start) == _id(start_rpc)
    trace_id = _trace(caller)

    # The start step scheduled the payments task: the Python worker's span is its child,
    # and the handler ran inside that span.
    payments = _one(mine, "statewright.task payments")
    assert payments.kind is SpanKind.CONSUMER
    assert _trace(payments) == trace_id and _parent(payments) == _id(start)
    assert handler_spans == [format(_id(payments), "016x")]
    assert _parent(_one(mine, "charge card")) == _id(payments)

    # Its CompleteTask is a child of the worker's span; the completion step is linked to
    # the step that scheduled the task and to the worker's span.
    completes = [s for s in served if s.name == TASKS + "CompleteTask"]
    assert len(completes) == 2
    first_rpc = next(s for s in completes if _parent(s) == _id(payments))
    steps = [s for s in served if s.name == "statewright.step complete_task"]
    charged = next(s for s in steps if _parent(s) == _id(first_rpc))
    assert _trace(charged) == trace_id
    assert _links(charged) == {
        "scheduled by": _id(start),
        "worker": _id(payments),
        "committed by": _links(charged)["committed by"],
    }
    assert charged.attributes is not None
    assert charged.attributes["statewright.event"] == "task_completed"
    assert charged.attributes["statewright.task.attempt"] == 1
    assert charged.attributes["statewright.state"] == "shipping"

    # That step scheduled the shipping task: the Go worker's span is its child, and the
    # Go client's CompleteTask call (a client span of otelgrpc) is the worker span's.
    shipping = next(s for s in go_spans if s["name"] == "statewright.task shipping")
    assert shipping["trace_id"] == format(trace_id, "032x")
    assert shipping["parent_span_id"] == format(_id(charged), "016x")
    assert shipping["kind"] == "consumer"
    go_call = next(
        s
        for s in go_spans
        if s["name"] == "statewright.v1.TaskService/CompleteTask"
        and s["parent_span_id"] == shipping["span_id"]
    )
    second_rpc = next(s for s in completes if s is not first_rpc)
    assert format(_parent(second_rpc) or 0, "016x") == go_call["span_id"]
    shipped = next(s for s in steps if _parent(s) == _id(second_rpc))
    assert _trace(shipped) == trace_id
    links = _links(shipped)
    assert links["scheduled by"] == _id(charged)
    assert format(links["worker"], "016x") == shipping["span_id"]
    assert shipped.attributes is not None
    assert shipped.attributes["statewright.state"] == "shipped"
    assert shipped.attributes["statewright.actor"] == charged.attributes["statewright.actor"]


async def test_an_http_call_joins_the_callers_trace(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    """The HTTP API reads the call's W3C traceparent header as the gRPC door reads its
    metadata: the step is a child of the caller's span, and the task it schedules keeps the
    step's context for the worker."""
    spans = InMemorySpanExporter()
    config = ServerConfig(
        listen="127.0.0.1:0",
        http_listen="127.0.0.1:0",
        database_url=postgres_databases.create(),
        definitions_dir=EXAMPLES,
        grace_seconds=1.0,
    )
    server = Server(config, Observability(config, env={}, span_exporters=[spans]))
    await server.start()
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    body = {"definition": "order-fulfilment", "input": {"items": ["pen"], "price": 2.5}}
    try:
        async with aiohttp.ClientSession() as session:
            async with session.post(
                f"http://127.0.0.1:{server.http_port}/api/v1/workflows",
                json=body,
                headers={"traceparent": caller},
            ) as answer:
                assert answer.status == 200, await answer.text()
                started = await answer.json()
            name = started["workflow"]["name"]
            async with session.get(
                f"http://127.0.0.1:{server.http_port}/api/v1/{name}/tasks/1"
            ) as answer:
                assert answer.status == 200, await answer.text()
                task = (await answer.json())["task"]
    finally:
        await server.drain()
    step = _one(spans.get_finished_spans(), "statewright.step start")
    assert format(_trace(step), "032x") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert _parent(step) == int("00f067aa0ba902b7", 16)
    assert task["traceparent"].split("-")[1:3] == [f"{_trace(step):032x}", f"{_id(step):016x}"]
