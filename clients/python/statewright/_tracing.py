"""OpenTelemetry for the client, through its API only: with no SDK configured in the
process every span is a no-op and nothing is sent.

- Every call carries the caller's current trace context as gRPC metadata, written by the
  process's configured propagators (``opentelemetry.propagate``), so that the server's
  span of the call is a child of the caller's span.
- A worker runs each attempt in a span (``statewright.task <queue>``) that is a child of
  the step that scheduled the task (the task's W3C ``traceparent`` / ``tracestate``, read
  with OpenTelemetry's W3C propagator), and sends that span's context back with its
  completion or failure, whose step is then linked to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from statewright.models import Task

# The task's fields and the worker's are W3C Trace Context, whatever propagators the
# process configured for its calls.
_W3C = TraceContextTextMapPropagator()
_TRACER = trace.get_tracer("statewright")

Metadata = tuple[tuple[str, str], ...]


def with_trace(metadata: Metadata, context: Context | None = None) -> Metadata:
    """``metadata`` plus the trace context of ``context`` (None: the current one)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    if not carrier:
        return metadata
    return (*metadata, *carrier.items())


def context_of(traceparent: str, tracestate: str = "") -> Context | None:
    """The context whose span W3C ``traceparent`` names (None: none given)."""
    if not traceparent:
        return None
    carrier = {"traceparent": traceparent}
    if tracestate:
        carrier["tracestate"] = tracestate
    return _W3C.extract(carrier, context=Context())


def task_span(task: Task) -> Span:
    """The span of one attempt of ``task``: a child of the step that scheduled it (a root
    when the task carries no trace context)."""
    parent = context_of(task.traceparent, task.tracestate) or Context()
    return _TRACER.start_span(
        f"statewright.task {task.queue}",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes={
            "statewright.task": task.name,
            "statewright.queue": task.queue,
            "statewright.state": task.state,
            "statewright.task.attempt": task.attempt,
        },
    )


def headers_of(span: Span) -> tuple[str, str]:
    """``span``'s W3C ``traceparent`` and ``tracestate`` ("" when it has none)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, context=trace.set_span_in_context(span))
    return carrier.get("traceparent", ""), carrier.get("tracestate", "")


def end_task_span(span: Span, failure: str | None) -> None:
    """Ends an attempt's span; ``failure``: the error type it failed with."""
    if failure is not None:
        span.set_attribute("statewright.error.type", failure)
        span.set_status(Status(StatusCode.ERROR, failure))
    span.end()
