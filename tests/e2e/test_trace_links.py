"""The steps the server starts itself are linked to the spans that caused them.

A timer's step, a schedule's start and a child's start run in traces of their own (no
caller waits for them), each linked to the span it follows from: the step that armed the
timer, the call that created the schedule, the parent's step that entered its
``workflow:`` state. The server runs in this process with an in-memory exporter, as in
test_tracing; the rest is real: gRPC over loopback, PostgreSQL, the EventLoop, the
timers', schedules' and children's loops. Each wait is about a second (the
``escalation`` definition's ``after: 1s``, a schedule that fires every second).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import grpc
from google.protobuf import duration_pb2
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext
from statewright.v1 import schedule_service_pb2 as spb
from statewright.v1 import schedule_service_pb2_grpc as spb_grpc
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd.config import ServerConfig
from statewrightd.observability.setup import Observability
from statewrightd.server import Server
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir

CREATE_SCHEDULE = "/statewright.v1.ScheduleService/CreateSchedule"
WAIT_SECONDS = 20.0


async def _until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not await check():
        assert time.monotonic() < deadline, f"no {what} within {WAIT_SECONDS}s"
        await asyncio.sleep(0.1)


def _steps(spans: Sequence[ReadableSpan], kind: str, workflow_id: str) -> list[ReadableSpan]:
    return [
        s
        for s in spans
        if s.name == f"statewright.step {kind}"
        and s.attributes is not None
        and s.attributes.get("statewright.workflow_id") == workflow_id
    ]


def _context(span: ReadableSpan) -> SpanContext:
    context = span.get_span_context()
    assert isinstance(context, SpanContext)
    return context


def _linked(span: ReadableSpan, why: str) -> SpanContext:
    contexts: list[SpanContext] = [
        link.context
        for link in span.links
        if link.attributes is not None and link.attributes.get("statewright.link") == why
    ]
    assert len(contexts) == 1, (span.name, why, span.links)
    return contexts[0]


def _same(linked: SpanContext, span: ReadableSpan) -> bool:
    return (linked.trace_id, linked.span_id) == (_context(span).trace_id, _context(span).span_id)


async def test_timer_schedule_and_child_steps_are_linked_to_what_caused_them(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    spans = InMemorySpanExporter()
    config = ServerConfig(
        listen="127.0.0.1:0",
        database_url=postgres_databases.create(),
        definitions_dir=definitions_dir(tmp_path / "definitions"),
        grace_seconds=1.0,
    )
    server = Server(config, Observability(config, env={}, span_exporters=[spans]))
    port = await server.start()
    suffix = tmp_path.name[-12:].replace("_", "-")
    timed, parent, sid = f"timed-{suffix}", f"onboard-{suffix}", f"tick-{suffix}"
    fired: list[str] = []
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.WorkflowServiceStub(channel)
            schedules = spb_grpc.ScheduleServiceStub(channel)

            async def state(workflow_id: str) -> str:
                request = pb.GetWorkflowRequest(name=f"workflows/{workflow_id}")
                try:
                    return (await stub.GetWorkflow(request, timeout=10)).workflow.state
                except grpc.aio.AioRpcError as err:
                    assert err.code() is grpc.StatusCode.NOT_FOUND, err
                    return ""

            async def schedule_fired() -> bool:
                request = spb.GetScheduleRequest(name=f"schedules/{sid}")
                shown = (await schedules.GetSchedule(request, timeout=10)).schedule
                fired[:] = [
                    a.workflow.removeprefix("workflows/")
                    for a in shown.info.recent_actions
                    if a.outcome == spb.SCHEDULE_ACTION_OUTCOME_STARTED
                ]
                return bool(fired)

            async def escalated() -> bool:
                return await state(timed) == "escalated"

            async def child_started() -> bool:
                return await state(f"kyc-{parent}") != ""

            await stub.StartWorkflow(
                pb.StartWorkflowRequest(definition="escalation", workflow_id=timed), timeout=10
            )
            start = pb.StartWorkflowRequest(definition="customer-onboarding", workflow_id=parent)
            start.input.update({"customer_id": "c-1"})
            await stub.StartWorkflow(start, timeout=10)
            schedule = spb.Schedule()
            schedule.spec.interval.CopyFrom(duration_pb2.Duration(seconds=1))
            schedule.action.definition = "tally"
            await schedules.CreateSchedule(
                spb.CreateScheduleRequest(schedule_id=sid, schedule=schedule), timeout=10
            )
            await _until(escalated, "timer step")
            await _until(schedule_fired, "schedule fire")
            await _until(child_started, "child start")
            await schedules.PauseSchedule(
                spb.PauseScheduleRequest(name=f"schedules/{sid}"), timeout=10
            )
    finally:
        await server.drain()  # flushes the server's spans
    finished = spans.get_finished_spans()

    # The timer's step: a trace of its own, linked to the start step that armed the timer.
    (armed,) = _steps(finished, "start", timed)
    (timer,) = _steps(finished, "timer", timed)
    assert timer.parent is None and _context(timer).trace_id != _context(armed).trace_id
    assert _same(_linked(timer, "armed by"), armed)
    assert timer.attributes is not None and timer.attributes["statewright.revision"] == 2

    # A schedule's fire: its start step is linked to the CreateSchedule call's span.
    (created,) = [s for s in finished if s.name == CREATE_SCHEDULE]
    (first,) = _steps(finished, "start", fired[0])
    assert first.attributes is not None
    assert first.attributes["statewright.actor"] == "statewright:schedule"
    assert first.parent is None
    assert _same(_linked(first, "schedule"), created)

    # A child's start is linked to the parent's step that entered its workflow: state.
    (entered,) = _steps(finished, "start", parent)
    (child,) = _steps(finished, "start", f"kyc-{parent}")
    assert child.parent is None
    assert _same(_linked(child, "parent"), entered)
