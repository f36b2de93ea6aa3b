"""Tracing: server spans (health excluded), step spans and storage-batch spans.

The server runs in this process with an in-memory exporter behind the same
BatchSpanProcessor the OTLP exporter uses; stopping the server flushes it. Everything
else is the real server: gRPC over loopback, the EventLoop, the writer, the store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd.config import ServerConfig
from statewrightd.observability.setup import Observability
from statewrightd.server import Server
from tests.support.deployment import EXAMPLES

SERVICE = "/statewright.v1.WorkflowService/"


def _named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def _attr(span: ReadableSpan, key: str) -> Any:
    assert span.attributes is not None and key in span.attributes, (span.name, key)
    return span.attributes[key]


async def _exercise(target: str, workflow_id: str) -> list[pb.WatchWorkflowResponse]:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        health: Any = health_pb2_grpc.HealthStub(channel)  # the stub's methods are untyped
        started = await stub.StartWorkflow(
            pb.StartWorkflowRequest(definition="mail-approval", workflow_id=workflow_id),
            timeout=10,
        )
        assert started.workflow.status == workflow_pb2.WORKFLOW_STATUS_WAITING
        # The watch stream runs under the tracing interceptor, concurrently with a resume.
        watch = stub.WatchWorkflow(pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}"))
        first = await watch.read()
        assert isinstance(first, pb.WatchWorkflowResponse)
        await stub.ResumeWorkflow(
            pb.ResumeWorkflowRequest(name=f"workflows/{workflow_id}", event="approve"),
            timeout=10,
        )
        messages: list[pb.WatchWorkflowResponse] = [first]
        while (message := await asyncio.wait_for(watch.read(), 10)) is not grpc.aio.EOF:
            assert isinstance(message, pb.WatchWorkflowResponse)
            messages.append(message)
        try:
            await stub.GetWorkflow(pb.GetWorkflowRequest(name="workflows/absent"), timeout=10)
            raise AssertionError("GetWorkflow of an unknown id succeeded")
        except grpc.aio.AioRpcError as err:
            assert err.code() is grpc.StatusCode.NOT_FOUND
        # Health, including the context.write()-style Watch, works beside the interceptor.
        check = await health.Check(health_pb2.HealthCheckRequest(service="readiness"))
        assert check.status == health_pb2.HealthCheckResponse.SERVING
        health_watch = health.Watch(health_pb2.HealthCheckRequest(service="liveness"))
        update = await asyncio.wait_for(health_watch.read(), 10)
        assert update.status == health_pb2.HealthCheckResponse.SERVING
        health_watch.cancel()
        return messages


async def test_server_step_and_batch_spans(database_url: str, tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    config = ServerConfig(
        listen="127.0.0.1:0",
        database_url=database_url,
        definitions_dir=EXAMPLES,
        grace_seconds=1.0,
    )
    server = Server(config, Observability(config, env={}, span_exporters=[exporter]))
    port = await server.start()
    workflow_id = f"traced-{tmp_path.name[-12:].replace('_', '-')}"
    try:
        messages = await _exercise(f"127.0.0.1:{port}", workflow_id)
    finally:
        await server.drain()  # stops the tracer provider, which flushes the batch processor
    spans = exporter.get_finished_spans()

    # Every revision reached the watcher, in order, ending with the terminal one.
    revisions = [m.workflow.revision for m in messages]
    assert revisions == sorted(revisions) and revisions[0] == 1, revisions
    assert messages[-1].workflow.status == workflow_pb2.WORKFLOW_STATUS_COMPLETED

    assert not [s for s in spans if "grpc.health.v1.Health" in s.name], "health is excluded"

    (start_rpc,) = _named(spans, SERVICE + "StartWorkflow")
    (resume_rpc,) = _named(spans, SERVICE + "ResumeWorkflow")
    (watch_rpc,) = _named(spans, SERVICE + "WatchWorkflow")
    (get_rpc,) = _named(spans, SERVICE + "GetWorkflow")
    for rpc in (start_rpc, resume_rpc, watch_rpc):
        assert rpc.kind is SpanKind.SERVER
        assert rpc.attributes is not None
        assert rpc.attributes["statewright.workflow_id"] == workflow_id
        assert rpc.attributes["rpc.grpc.status_code"] == grpc.StatusCode.OK.value[0]
    # NOT_FOUND is the caller's problem, not a server error: recorded, but not ERROR.
    assert get_rpc.attributes is not None
    assert get_rpc.attributes["rpc.grpc.status_code"] == grpc.StatusCode.NOT_FOUND.value[0]
    assert get_rpc.status.status_code is not StatusCode.ERROR

    # Each step span is a child of the RPC that caused it, and carries the outcome.
    for rpc, kind, revision, status in (
        (start_rpc, "start", 1, "WAITING"),
        (resume_rpc, "resume", 2, "COMPLETED"),
    ):
        (step,) = _named(spans, f"statewright.step {kind}")
        assert step.parent is not None and rpc.context is not None
        assert step.parent.span_id == rpc.context.span_id
        assert step.context is not None and step.context.trace_id == rpc.context.trace_id
        assert step.attributes is not None
        assert step.attributes["statewright.workflow_id"] == workflow_id
        assert step.attributes["statewright.definition"] == "mail-approval"
        assert step.attributes["statewright.definition_version"] == 2
        assert step.attributes["statewright.revision"] == revision
        assert step.attributes["statewright.status"] == status
        # The step (arrival to answer) lies inside its RPC.
        assert rpc.start_time is not None and rpc.end_time is not None
        assert step.start_time is not None and step.end_time is not None
        assert rpc.start_time <= step.start_time <= step.end_time <= rpc.end_time

    # Both saves went through storage batches whose spans name the instance.
    batches = [
        s
        for s in _named(spans, "statewright.storage.batch")
        if workflow_id in _attr(s, "statewright.workflow_ids")
    ]
    saved_revisions = sorted(
        revision
        for batch in batches
        for wid, revision in zip(
            _attr(batch, "statewright.workflow_ids"),
            _attr(batch, "statewright.revisions"),
            strict=True,
        )
        if wid == workflow_id
    )
    assert saved_revisions == [1, 2]
    for batch in batches:
        assert _attr(batch, "statewright.batch.size") >= 1
        assert _attr(batch, "statewright.batch.saved") >= 1
        assert _attr(batch, "statewright.batch.conflict") == 0
        assert batch.parent is None  # the writer thread starts its own traces

    # Each step is linked to the batch that committed its save, and that batch back to it:
    # the request's trace reaches the commit that made it durable.
    by_span_id = {s.context.span_id: s for s in spans if s.context is not None}
    for kind, revision in (("start", 1), ("resume", 2)):
        (step,) = _named(spans, f"statewright.step {kind}")
        assert step.context is not None
        (link,) = step.links
        assert link.attributes is not None and link.attributes["statewright.link"] == "committed by"
        committed = by_span_id[link.context.span_id]
        assert committed.name == "statewright.storage.batch"
        assert committed.context is not None and link.context.trace_id == committed.context.trace_id
        saves = zip(
            _attr(committed, "statewright.workflow_ids"),
            _attr(committed, "statewright.revisions"),
            strict=True,
        )
        assert (workflow_id, revision) in set(saves)
        back = [
            back_link
            for back_link in committed.links
            if back_link.context.span_id == step.context.span_id
            and back_link.context.trace_id == step.context.trace_id
        ]
        assert len(back) == 1
        assert back[0].attributes is not None
        assert back[0].attributes["statewright.link"] == "saved step"
        # The batch's own timing is the transaction's, whatever time the links took.
        assert committed.end_time is not None and step.end_time is not None
        assert committed.end_time <= step.end_time
