"""Trace context through a task: a step's span is started where its command is built (so a
task it schedules can keep its context), a step that ends a task is linked to the step that
scheduled it and to the worker's span, and a request's digest ignores where it came from."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import cast

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from statewright.v1 import task_service_pb2 as tpb

from statewrightd.api.requests import request_key
from statewrightd.api.task_requests import worker_trace
from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import Status, TraceContext
from statewrightd.engine.answers import Outcome
from statewrightd.engine.commands import (
    ARMED_BY,
    SCHEDULE,
    CompleteTaskCommand,
    ResumeCommand,
    TimerCommand,
)
from statewrightd.engine.schedule_spec import Candidate
from statewrightd.engine.schedules import start_command, with_trace
from statewrightd.errors import InvalidArgument
from statewrightd.observability.probes import Probes, StepObservation
from statewrightd.store.memory import MemoryRepository
from statewrightd.store.records import InstanceRecord, TimerRecord
from tests.support.deployment import EXAMPLES

NOW = datetime(2026, 1, 1, tzinfo=UTC)
STEP = TraceContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=1")
WORKER = TraceContext("00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01")


def _traced() -> tuple[Probes, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Probes(provider.get_tracer("test"), None), exporter


def _outcome(workflow_id: str) -> Outcome:
    record = InstanceRecord(
        workflow_id=workflow_id,
        definition="order-fulfilment",
        version=3,
        state="shipping",
        status=Status.RUNNING,
        context={},
        revision=3,
        error=None,
        create_time=NOW,
        update_time=NOW,
    )
    return Outcome(record, cast(Loaded, object()), saved=True)


def _completion(workflow_id: str, worker: TraceContext) -> CompleteTaskCommand:
    """Attempt 2 of task 2 completed by worker-1, whose span is ``worker``."""
    return CompleteTaskCommand(
        workflow_id=workflow_id,
        actor="worker-1",
        task_id="2",
        state="charging",
        lease_token="l",
        attempt=2,
        scheduled_by=STEP,
        worker=worker,
    )


def test_a_completion_step_is_linked_to_the_scheduling_step_and_the_worker() -> None:
    probes, exporter = _traced()
    command = _completion("o-1", WORKER)
    observed = probes.requested(command)
    assert observed is not None
    probes.finished(command, 0, observed, _outcome("o-1"))
    (span,) = exporter.get_finished_spans()
    assert span.name == "statewright.step complete_task"
    links = {
        (link.attributes or {}).get("statewright.link"): format(link.context.span_id, "016x")
        for link in span.links
    }
    assert links == {"scheduled by": "b7ad6b7169203331", "worker": "00f067aa0ba902b7"}
    attributes = dict(span.attributes or {})
    assert attributes["statewright.actor"] == "worker-1"
    assert attributes["statewright.event"] == "task_completed"
    assert attributes["statewright.task_id"] == "2"
    assert attributes["statewright.task.attempt"] == 2
    assert attributes["statewright.revision"] == 3


def test_a_step_has_its_own_trace_context_for_what_it_schedules() -> None:
    probes, exporter = _traced()
    command = ResumeCommand(workflow_id="o-2", event="approve")
    observed = probes.requested(command)
    assert isinstance(observed, StepObservation) and observed.span is not None
    own = observed.span.get_span_context()
    flags = f"{int(own.trace_flags):02x}"  # sampled, and the SDK's random trace id flag
    assert observed.trace == TraceContext(f"00-{own.trace_id:032x}-{own.span_id:016x}-{flags}")
    probes.finished(command, 0, observed, _outcome("o-2"))
    (span,) = exporter.get_finished_spans()
    assert (span.attributes or {})["statewright.event"] == "approve"
    # Nothing observes: no span, no context.
    assert Probes(None, None).requested(command) is None


def test_a_malformed_worker_context_is_no_link_and_no_failure() -> None:
    probes, exporter = _traced()
    command = _completion("o-3", TraceContext("not-a-traceparent"))
    probes.finished(command, 0, probes.requested(command), _outcome("o-3"))
    (span,) = exporter.get_finished_spans()
    assert [(link.attributes or {}).get("statewright.link") for link in span.links] == [
        "scheduled by"
    ]


def test_the_workers_context_is_bounded_and_not_part_of_the_request_digest() -> None:
    assert worker_trace("", "") is None
    assert worker_trace(WORKER.traceparent, "") == WORKER
    with pytest.raises(InvalidArgument, match="traceparent"):
        worker_trace("x" * 257, "")
    plain = tpb.CompleteTaskRequest(name="workflows/o/tasks/2", lease_token="l", request_id="r")
    traced = tpb.CompleteTaskRequest()
    traced.CopyFrom(plain)
    traced.traceparent, traced.tracestate = WORKER.traceparent, "a=1"
    assert request_key("CompleteTask", traced, "r") == request_key("CompleteTask", plain, "r")
    assert traced.traceparent == WORKER.traceparent, "the request itself is left as it was"


def test_a_timers_step_is_a_root_linked_to_the_step_that_armed_it() -> None:
    probes, exporter = _traced()
    armed = TimerRecord(
        workflow_id="o-4",
        timer_id="1.3",
        revision=1,
        transition=3,
        target="escalated",
        after="1s",
        due_time=NOW,
        trace=STEP,
    )
    command = TimerCommand.of(armed, "statewright:timer")
    assert command.links() == ((ARMED_BY, STEP),)
    probes.finished(command, 0, probes.requested(command), _outcome("o-4"))
    (span,) = exporter.get_finished_spans()
    assert span.parent is None
    (link,) = span.links
    assert (link.attributes or {}).get("statewright.link") == "armed by"
    assert format(link.context.span_id, "016x") == "b7ad6b7169203331"
    # A timer armed by a step that was not traced links nothing.
    untraced = TimerCommand.of(dataclasses.replace(armed, trace=None), "statewright:timer")
    assert untraced.links() == ()


def test_a_schedule_keeps_its_callers_context_for_the_starts_it_fires() -> None:
    doc = with_trace({"spec": {}, "trace": {"traceparent": "old"}}, STEP)
    assert doc["trace"] == {"traceparent": STEP.traceparent, "tracestate": "a=1"}
    assert "trace" not in with_trace(doc, None), "a call not traced keeps none"
    registry = DefinitionRegistry(MemoryRepository())
    registry.load_directory(EXAMPLES, dev=False)
    doc = {"action": {"definition": "mail-approval"}, **doc}
    candidate = Candidate("regular", NOW, "nightly-2026-01-01T00:00:00Z")
    start = start_command(registry, "nightly", doc, candidate)
    assert start.links() == ((SCHEDULE, STEP),)
    assert start_command(registry, "nightly", with_trace(doc, None), candidate).links() == ()


def test_the_caller_is_the_current_span_when_tracing() -> None:
    probes, _ = _traced()
    assert probes.caller() is None  # no span is current
    provider = TracerProvider()
    with provider.get_tracer("test").start_as_current_span("call") as span:
        own = span.get_span_context()
        caller = probes.caller()
        assert caller is not None
        assert caller.traceparent.split("-")[1:3] == [f"{own.trace_id:032x}", f"{own.span_id:016x}"]
        assert Probes(None, None).caller() is None  # not tracing: nothing kept
