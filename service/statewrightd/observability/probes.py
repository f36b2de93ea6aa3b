"""What the engine and the store report, turned into spans, metrics and debug logs.

``Probes`` implements the engine's ``StepObserver`` (a step requested, a step answered)
and the store's ``BatchObserver`` (one group-commit transaction); the server builds one
and passes it down. With neither a tracer nor metrics, every probe returns at once.

A step's span is started where its command is built (on the RPC's task, whose trace
context becomes the parent; for a step the server starts, a root) and ended when the step
is answered, on the EventLoop thread, with what the step did; ``BatchSpanProcessor``
makes ``end()`` a queue append. Starting it early gives the step its own trace context
before it saves: a task it schedules keeps that context (W3C ``traceparent`` and
``tracestate``, written with OpenTelemetry's propagator only when a task asks for it),
and the worker's span joins the trace as its child. A step that finishes a task is linked
to the step that scheduled it and to the worker's span (``Command.links``).

A storage batch has no parent (it serves many requests) but is linked to the spans of the
steps whose saves it committed, and each of those back to it, so that a request's trace
leads to the commit that made it durable. The two meet in the middle: a batch commits
before any of its steps is answered (the writer hands the outcomes over only after the
transaction), so its span stays open, its end time already taken, until every step it
saved has been answered and linked, each found by its save's (workflow id, revision). A
batch whose steps are not all answered here (an answer lost in a shutdown, a step that
no request asked for) is ended without those links after ``LINK_WAIT_SECONDS``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, Tracer
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from statewrightd import errors
from statewrightd.domain import TraceContext
from statewrightd.engine.answers import Outcome, Result
from statewrightd.engine.commands import Command
from statewrightd.engine.observer import Observation
from statewrightd.observability.metrics import Metrics
from statewrightd.store.records import Create, InstanceRecord, Operation

_log = logging.getLogger("statewrightd.steps")

# Enough to find any instance of a batch from its span; a batch holds at most 256 saves.
MAX_BATCH_IDS = 256

Outcomes = list[InstanceRecord | errors.StoreError]
SaveKey = tuple[str, int]  # (workflow id, revision) of one save

# How long a batch span waits for the answers of the steps it saved. They arrive within a
# hand-off to the EventLoop; this only bounds what a lost answer holds open.
LINK_WAIT_SECONDS = 5.0
# Batch spans held open at most; beyond this the oldest is ended without its missing links.
MAX_OPEN_BATCHES = 1024
# The link attribute that says what the linked span is to this one.
LINK_KIND = "statewright.link"


# Trace Context is a W3C format whatever propagators the process configured: the task's
# fields and the worker's are read and written with this one.
W3C = TraceContextTextMapPropagator()


@dataclass(slots=True, eq=False)
class StepObservation:
    """When a step command was built, and its span (None: not traced)."""

    started: float  # perf_counter, for the latency histogram
    span: Span | None
    kind: str = ""  # the command's kind when its span started
    _trace: TraceContext | None = None

    @property
    def trace(self) -> TraceContext | None:
        """The span's W3C trace context, written once a task asks for it."""
        if self._trace is None and self.span is not None:
            self._trace = trace_context(self.span.get_span_context())
        return self._trace


def trace_context(context: SpanContext) -> TraceContext | None:
    """``context`` as W3C headers, by OpenTelemetry's propagator (None: invalid)."""
    if not context.is_valid:
        return None
    carrier: dict[str, str] = {}
    W3C.inject(carrier, trace.set_span_in_context(trace.NonRecordingSpan(context)))
    traceparent = carrier.get("traceparent")
    if traceparent is None:
        return None
    return TraceContext(traceparent, carrier.get("tracestate", ""))


def span_context(headers: TraceContext) -> SpanContext | None:
    """The span a W3C trace context names (None: malformed), by OpenTelemetry's propagator."""
    carrier = {"traceparent": headers.traceparent}
    if headers.tracestate:
        carrier["tracestate"] = headers.tracestate
    context = trace.get_current_span(W3C.extract(carrier)).get_span_context()
    return context if context.is_valid else None


@dataclass(slots=True, eq=False)
class _OpenBatch:
    """A committed batch's span, left open until the steps it saved are linked to it."""

    span: Span
    end_ns: int
    deadline: float  # on the probes' clock
    waiting: set[SaveKey] = field(default_factory=set)


class Probes:
    """The server's step and batch observer, over its tracer and metrics (either may be
    absent)."""

    def __init__(
        self,
        tracer: Tracer | None,
        metrics: Metrics | None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._tracer = tracer
        self._metrics = metrics
        self._clock = clock  # for the wait bound of open batch spans
        # Open batch spans, filled on the writer thread and claimed on the EventLoop's.
        self._lock = threading.Lock()
        self._awaiting: dict[SaveKey, _OpenBatch] = {}
        self._open: deque[_OpenBatch] = deque()

    # -- steps ---------------------------------------------------------------------------

    def requested(self, command: Command) -> StepObservation | None:
        """Where a step command is built (the RPC's task, whose context is the parent);
        None when nothing observes."""
        tracer = self._tracer
        if tracer is None:
            return None if self._metrics is None else StepObservation(time.perf_counter(), None)
        attributes: dict[str, str | int] = {
            "statewright.workflow_id": command.workflow_id,
            "statewright.step.kind": command.kind,
            "statewright.actor": command.actor,
        }
        for name, value in command.described().items():
            attributes[f"statewright.{name}"] = value
        links = []
        for why, headers in command.links():
            linked = span_context(headers)
            if linked is not None:
                links.append(Link(linked, {LINK_KIND: why}))
        span = tracer.start_span(
            f"statewright.step {command.kind}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=links,
        )
        return StepObservation(time.perf_counter(), span, command.kind)

    def finished(
        self, command: Command, attempts: int, observed: Observation | None, result: Result
    ) -> None:
        """On the EventLoop thread, when a step is answered."""
        record = result.record if isinstance(result, Outcome) else None
        # The batch that committed this step's save, while its span waits for the step.
        claim = self._claim(result) if self._tracer is not None else None
        debug = _log.isEnabledFor(logging.DEBUG)
        if observed is None and not debug:
            if claim is not None:
                self._linked(claim, None)
            return
        error = result if isinstance(result, errors.StatewrightError) else None
        outcome = "ok" if error is None else error.reason
        kind, workflow_id = command.kind, command.workflow_id
        if debug:
            _debug(kind, workflow_id, record, error, result)
        if not isinstance(observed, StepObservation):
            if claim is not None:
                self._linked(claim, None)
            return
        if self._metrics is not None:
            self._metrics.step_seconds.labels(kind, outcome).observe(
                time.perf_counter() - observed.started
            )
        span = observed.span
        if span is None:
            if claim is not None:
                self._linked(claim, None)
            return
        if span.is_recording():  # not sampled out: say what the step did, in one call
            if claim is not None:
                span.add_link(claim[0].span.get_span_context(), _COMMITTED_BY)
            if kind != observed.kind:  # a signal-with-start that signalled
                span.update_name(f"statewright.step {kind}")
            span.set_attributes(_step_attributes(command, attempts, result))
            if error is not None:
                span.set_status(Status(StatusCode.ERROR, error.message))
        span.end()
        if claim is not None:
            self._linked(claim, span)

    def caller(self) -> TraceContext | None:
        """The current span's W3C trace context (the RPC's, where a call is served)."""
        if self._tracer is None:
            return None
        return trace_context(trace.get_current_span().get_span_context())

    def timer_fired(self, lag: float) -> None:
        if self._metrics is not None:
            self._metrics.timer_fire_lag.observe(lag)

    def schedule_fired(self, outcome: str, count: int, lag: float | None) -> None:
        if self._metrics is not None:
            self._metrics.schedule_fires.labels(outcome.lower()).inc(count)
            if lag is not None:
                self._metrics.schedule_fire_lag.observe(lag)

    def task_leased(self, queue: str, waited: float) -> None:
        if self._metrics is not None:
            self._metrics.task_schedule_to_start.labels(queue).observe(waited)

    def task_attempt_ended(self, queue: str, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.task_attempts.labels(queue, outcome).inc()

    def projection_failed(self, definition: str, field: str) -> None:
        if self._metrics is not None:
            self._metrics.projection_failures.labels(definition, field).inc()

    # -- storage batches -----------------------------------------------------------------

    def batch(self, apply: Callable[[list[Operation]], Outcomes], ops: list[Operation]) -> Outcomes:
        """Run one group-commit transaction (writer thread) inside a span, counting outcomes."""
        tracer, metrics = self._tracer, self._metrics
        if tracer is None and metrics is None:
            return apply(ops)
        began = time.perf_counter()
        results = apply(ops) if tracer is None else self._traced_batch(tracer, apply, ops)
        if metrics is not None:
            metrics.batch_seconds.observe(time.perf_counter() - began)
            metrics.batch_size.observe(len(ops))
            counts = _outcomes(results)
            for outcome, count in counts.items():
                if count:
                    metrics.saves.labels(outcome).inc(count)
            if counts["conflict"]:
                metrics.cas_conflicts.inc(counts["conflict"])
        return results

    def _traced_batch(
        self, tracer: Tracer, apply: Callable[[list[Operation]], Outcomes], ops: list[Operation]
    ) -> Outcomes:
        span = tracer.start_span(
            "statewright.storage.batch",
            kind=SpanKind.INTERNAL,
            attributes=_batch_attributes(ops),
        )
        try:
            with trace.use_span(span, record_exception=True, set_status_on_exception=True):
                results = apply(ops)
        except BaseException:
            span.end()
            raise
        counts = _outcomes(results)
        span.set_attributes({f"statewright.batch.{k}": v for k, v in counts.items()})
        if counts["failed"] or counts["unknown"]:
            span.set_status(Status(StatusCode.ERROR, "some saves failed"))
        end_ns = time.time_ns()
        waiting = {
            _key(op)
            for op, result in zip(ops, results, strict=True)
            if isinstance(result, InstanceRecord)
        }
        if not waiting or not span.is_recording():  # nothing to link, or sampled out
            span.end(end_time=end_ns)
            return results
        held = _OpenBatch(span, end_ns, self._clock() + LINK_WAIT_SECONDS, waiting)
        with self._lock:
            for key in waiting:
                self._awaiting[key] = held
            self._open.append(held)
            self._expire(self._clock())
        return results

    def _claim(self, result: Result) -> tuple[_OpenBatch, SaveKey] | None:
        """The open batch that saved this step's outcome, if it still waits for the step."""
        if not isinstance(result, Outcome) or not result.saved:
            return None
        key = (result.record.workflow_id, result.record.revision)
        with self._lock:
            self._expire(self._clock())
            batch = self._awaiting.pop(key, None)
        return None if batch is None else (batch, key)

    def _linked(self, claim: tuple[_OpenBatch, SaveKey], step: Span | None) -> None:
        """The step a batch saved was answered: link its span (None when the step was not
        observed), and end the batch's span once no step is missing."""
        batch, key = claim
        with self._lock:
            if not batch.span.is_recording():
                return  # ended meanwhile, by the wait bound or at shutdown
            if step is not None:
                batch.span.add_link(step.get_span_context(), _SAVED_STEP)
            batch.waiting.discard(key)
            if not batch.waiting:
                batch.span.end(end_time=batch.end_ns)

    def _expire(self, now: float) -> None:
        """End the batch spans that waited long enough, or that exceed the bound (locked)."""
        while self._open and (
            self._open[0].deadline <= now
            or len(self._open) > MAX_OPEN_BATCHES
            or not self._open[0].span.is_recording()
        ):
            self._close(self._open.popleft())

    def _close(self, batch: _OpenBatch) -> None:
        for key in batch.waiting:
            if self._awaiting.get(key) is batch:
                del self._awaiting[key]
        batch.waiting.clear()
        if batch.span.is_recording():
            batch.span.end(end_time=batch.end_ns)

    def close(self) -> None:
        """End every batch span still open (at shutdown, before the spans are flushed)."""
        with self._lock:
            while self._open:
                self._close(self._open.popleft())


_COMMITTED_BY = {LINK_KIND: "committed by"}
_SAVED_STEP = {LINK_KIND: "saved step"}


def _step_attributes(
    command: Command, attempts: int, result: Result
) -> dict[str, str | int | bool]:
    """What a step's span says of how it ended (what it was asked is said at its start)."""
    attributes: dict[str, str | int | bool] = {
        "statewright.step.kind": command.kind,  # changed when a signal-with-start signalled
        "statewright.step.attempts": attempts + 1,
    }
    if isinstance(result, errors.StatewrightError):
        attributes["statewright.error.reason"] = result.reason
        return attributes
    if not isinstance(result, Outcome):
        attributes["statewright.step.replayed"] = True
        return attributes
    record = result.record
    attributes["statewright.definition"] = record.definition
    attributes["statewright.definition_version"] = record.version
    attributes["statewright.revision"] = record.revision
    attributes["statewright.status"] = str(record.status)
    attributes["statewright.state"] = record.state
    if not result.accepted:
        attributes["statewright.signal.rejection"] = str(result.rejection)
    fired = next((t.event for t in result.transitions if t.event), None)
    if fired is not None and "event" not in command.described():
        attributes["statewright.event"] = fired  # the event of a timer's transition
    task = result.task
    if result.saved and task is not None and task.revision == record.revision:
        # The task this step scheduled (its worker's span is this span's child).
        attributes["statewright.scheduled_task_id"] = task.task_id
    return attributes


def _key(op: Operation) -> SaveKey:
    record = op.record if isinstance(op, Create) else op.new
    return record.workflow_id, record.revision


def _debug(
    kind: str,
    workflow_id: str,
    record: InstanceRecord | None,
    error: errors.StatewrightError | None,
    result: Result,
) -> None:
    if record is not None:
        _log.debug(
            "workflow %s: %s step -> %s %s at revision %d",
            workflow_id,
            kind,
            record.status,
            record.state,
            record.revision,
            extra={"workflow_id": workflow_id},
        )
    else:
        _log.debug(
            "workflow %s: %s step answered %s",
            workflow_id,
            kind,
            error.reason if error is not None else type(result).__name__,
            extra={"workflow_id": workflow_id},
        )


def _outcomes(results: Sequence[InstanceRecord | errors.StoreError]) -> dict[str, int]:
    counts = {"saved": 0, "conflict": 0, "unknown": 0, "failed": 0}
    for result in results:
        if isinstance(result, InstanceRecord):
            counts["saved"] += 1
        elif isinstance(result, errors.Conflict):
            counts["conflict"] += 1
        elif isinstance(result, errors.OutcomeUnknown):
            counts["unknown"] += 1
        else:
            counts["failed"] += 1
    return counts


def _batch_attributes(ops: Sequence[Operation]) -> dict[str, int | list[str] | list[int]]:
    records = [op.record if isinstance(op, Create) else op.new for op in ops[:MAX_BATCH_IDS]]
    return {
        "statewright.batch.size": len(ops),
        "statewright.workflow_ids": [r.workflow_id for r in records],
        "statewright.revisions": [r.revision for r in records],
        "statewright.statuses": [str(r.status) for r in records],
        "statewright.definitions": sorted({r.definition for r in records}),
    }
