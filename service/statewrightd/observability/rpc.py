"""The RPC observer: a grpc.aio server interceptor for metrics, log context and spans.

For every RPC it records the workflow id the request names (so log lines of the handler
carry it, and the server span too), counts the RPC, times it and counts its status code.
When tracing, it also makes the RPC's server span (health excluded), a child of the trace
context the call's metadata carries (read by the process's propagators), current while
the handler runs so that the steps it starts are its children. It does so itself rather
than through opentelemetry-instrumentation-grpc's interceptor: one wrapper per call
instead of two, and no parsing of the peer's address or proxying of the servicer context
on every call (what that costs is in bench/NOTES.md).

Response streams come in two shapes in grpc.aio: async generators (WorkflowService's
WatchWorkflow) and coroutines that call ``context.write()`` (the health service's
Watch). grpc picks the calling convention by inspecting the handler, so the wrapper must
keep the shape of what it wraps; wrapping both as generators breaks the coroutine kind.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import grpc
from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from statewrightd.api.registration import Continuation, Handler, rewrapped
from statewrightd.context import RPC_METHOD, WORKFLOW_ID
from statewrightd.observability.metrics import Metrics

Context = grpc.aio.ServicerContext[Any, Any]
Behavior = Callable[..., Any]
Req = TypeVar("Req")
Resp = TypeVar("Resp")

WATCH_METHOD = "/statewright.v1.WorkflowService/WatchWorkflow"
# Not traced: probes every few seconds would drown the traces that matter.
HEALTH_SERVICE = "grpc.health.v1.Health"
# An error that is the call's answer or its end, not a failure to record on its span.
_ANSWERS = (grpc.aio.AbortError, asyncio.CancelledError, GeneratorExit)
_WORKFLOW_PREFIX = "workflows/"
# Codes that mean the server failed (OpenTelemetry's rule for gRPC server spans); the
# rest (NOT_FOUND, ABORTED, ...) are answers to the caller, not server errors.
_SERVER_ERRORS = frozenset(
    {
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DATA_LOSS,
    }
)


def workflow_of(request: object) -> str | None:
    """The workflow id a request names: ``name: workflows/{id}`` (or a task's,
    ``workflows/{id}/tasks/{task_id}``) or ``workflow_id``."""
    name = getattr(request, "name", None)
    if isinstance(name, str) and name.startswith(_WORKFLOW_PREFIX):
        return name[len(_WORKFLOW_PREFIX) :].partition("/")[0] or None
    workflow_id = getattr(request, "workflow_id", None)
    return workflow_id if isinstance(workflow_id, str) and workflow_id else None


def _final_code(context: Context, error: BaseException | None) -> grpc.StatusCode:
    if isinstance(error, asyncio.CancelledError | GeneratorExit):
        return grpc.StatusCode.CANCELLED  # the client went away (or the server stopped)
    code = context.code()
    if isinstance(code, grpc.StatusCode):
        return code
    if isinstance(code, int):
        # Some grpc versions report the code as its integer value.
        for candidate in grpc.StatusCode:
            if candidate.value[0] == code:
                return candidate
    if error is not None and not isinstance(error, grpc.aio.AbortError):
        return grpc.StatusCode.UNKNOWN
    return grpc.StatusCode.OK


class RpcObserver(grpc.aio.ServerInterceptor):
    def __init__(self, metrics: Metrics | None, tracer: Tracer | None = None) -> None:
        self._metrics = metrics
        self._tracer = tracer

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler  # unknown method: grpc answers UNIMPLEMENTED itself
        method = handler_call_details.method
        service, _, name = method.lstrip("/").rpartition("/")

        def stream(behavior: Behavior) -> Behavior:
            labels = (service, name, "server_stream")
            if inspect.isasyncgenfunction(behavior):
                return self._stream(behavior, method, labels)
            return self._unary(behavior, method, labels)

        return rewrapped(
            handler, lambda b: self._unary(b, method, (service, name, "unary")), stream
        )

    def _begin(self, method: str, labels: tuple[str, str, str], request: object) -> float:
        workflow_id = workflow_of(request)
        # The handler runs in this task, so its log lines pick these up.
        WORKFLOW_ID.set(workflow_id)
        RPC_METHOD.set(method)
        if workflow_id is not None:
            span = trace.get_current_span()
            if span.is_recording():
                span.set_attribute("statewright.workflow_id", workflow_id)
        if self._metrics is not None:
            self._metrics.rpc_started.labels(*labels).inc()
            if method == WATCH_METHOD:
                self._metrics.watchers.inc()
        return time.perf_counter()

    def _end(
        self,
        method: str,
        labels: tuple[str, str, str],
        context: Context,
        began: float,
        error: BaseException | None,
    ) -> None:
        code = _final_code(context, error)
        span = trace.get_current_span()
        if span.is_recording():
            # The final code, however it was set (the service answers errors with
            # abort_with_status()).
            span.set_attribute("rpc.grpc.status_code", code.value[0])
            if code in _SERVER_ERRORS:
                span.set_status(Status(StatusCode.ERROR, f"{code.name}"))
        if self._metrics is not None:
            self._metrics.rpc_handled.labels(*labels, code.name).inc()
            self._metrics.rpc_seconds.labels(*labels).observe(time.perf_counter() - began)
            if method == WATCH_METHOD:
                self._metrics.watchers.dec()

    def _server_span(self, labels: tuple[str, str, str], context: Context) -> Span | None:
        """The call's server span, child of the caller's trace context (None: not traced)."""
        tracer = self._tracer
        service, name, _ = labels
        if tracer is None or service == HEALTH_SERVICE:
            return None
        metadata = context.invocation_metadata()
        carrier = {k: v for k, v in metadata or () if isinstance(v, str)}  # -bin ones: bytes
        parent = propagate.extract(carrier) if carrier else None
        return tracer.start_span(
            f"/{service}/{name}",
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"rpc.system": "grpc", "rpc.service": service, "rpc.method": name},
        )

    @contextlib.contextmanager
    def _observing(
        self, method: str, labels: tuple[str, str, str], request: object, context: Context
    ) -> Iterator[None]:
        """One call, from its start to its status (whatever ends it, cancellation too)."""
        span = self._server_span(labels, context)
        token = None if span is None else otel_context.attach(trace.set_span_in_context(span))
        began = self._begin(method, labels, request)
        error: BaseException | None = None
        try:
            yield
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._end(method, labels, context, began, error)
            if span is not None:
                if error is not None and not isinstance(error, _ANSWERS):
                    span.record_exception(error)
                span.end()
            if token is not None:
                otel_context.detach(token)

    def _unary(
        self, behavior: Behavior, method: str, labels: tuple[str, str, str]
    ) -> Callable[[Any, Context], Awaitable[Any]]:
        async def observed(request: Any, context: Context) -> Any:
            with self._observing(method, labels, request, context):
                return await behavior(request, context)

        return observed

    def _stream(
        self, behavior: Behavior, method: str, labels: tuple[str, str, str]
    ) -> Callable[[Any, Context], AsyncIterator[Any]]:
        async def observed(request: Any, context: Context) -> AsyncIterator[Any]:
            with self._observing(method, labels, request, context):
                async for response in behavior(request, context):
                    yield response

        return observed
