"""What the engine and the store report, turned into spans, metrics and debug logs.

``Probes`` implements the engine's ``StepObserver`` (a step requested, a step answered)
and the store's ``BatchObserver`` (one group-commit transaction); the server builds one
and passes it down. With neither a tracer nor metrics, every probe returns at once.

Step spans are created when the step is answered, with the start time recorded when its
command was built (on the RPC's task, whose trace context becomes the parent). Building
the span at the end keeps the EventLoop free of span bookkeeping between the two, and
``BatchSpanProcessor`` makes ``end()`` a queue append.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from statewrightd import errors
from statewrightd.engine.answers import Outcome, Result
from statewrightd.engine.commands import Command
from statewrightd.observability.metrics import Metrics
from statewrightd.store.records import Create, InstanceRecord, Operation

_log = logging.getLogger("statewrightd.steps")

# Enough to find any instance of a batch from its span; a batch holds at most 256 saves.
MAX_BATCH_IDS = 256

Outcomes = list[InstanceRecord | errors.StoreError]


@dataclass(frozen=True, slots=True)
class StepObservation:
    """When a step command was built, and in which trace context."""

    started_ns: int
    started: float  # perf_counter, for the latency histogram
    parent: otel_context.Context | None


class Probes:
    """The server's step and batch observer, over its tracer and metrics (either may be
    absent)."""

    def __init__(self, tracer: Tracer | None, metrics: Metrics | None) -> None:
        self._tracer = tracer
        self._metrics = metrics

    # -- steps ---------------------------------------------------------------------------

    def requested(self) -> StepObservation | None:
        """Where a step command is built (the RPC's task); None when nothing observes."""
        tracer = self._tracer
        if tracer is None and self._metrics is None:
            return None
        parent = otel_context.get_current() if tracer is not None else None
        return StepObservation(time.time_ns(), time.perf_counter(), parent)

    def finished(
        self, command: Command, attempts: int, observed: object | None, result: Result
    ) -> None:
        """On the EventLoop thread, when a step is answered."""
        debug = _log.isEnabledFor(logging.DEBUG)
        if observed is None and not debug:
            return
        record = result.record if isinstance(result, Outcome) else None
        error = result if isinstance(result, errors.StatewrightError) else None
        outcome = "ok" if error is None else error.reason
        kind, workflow_id = command.kind, command.workflow_id
        if debug:
            _debug(kind, workflow_id, record, error, result)
        if not isinstance(observed, StepObservation):
            return
        if self._metrics is not None:
            self._metrics.step_seconds.labels(kind, outcome).observe(
                time.perf_counter() - observed.started
            )
        if self._tracer is None:
            return
        span = self._tracer.start_span(
            f"statewright.step {kind}",
            context=observed.parent,
            kind=SpanKind.INTERNAL,
            start_time=observed.started_ns,
            attributes={
                "statewright.workflow_id": workflow_id,
                "statewright.step.kind": kind,
                "statewright.step.attempts": attempts + 1,
            },
        )
        if record is not None:
            span.set_attributes(
                {
                    "statewright.definition": record.definition,
                    "statewright.definition_version": record.version,
                    "statewright.revision": record.revision,
                    "statewright.status": record.status,
                    "statewright.state": record.state,
                }
            )
            if isinstance(result, Outcome) and not result.accepted:
                span.set_attribute("statewright.signal.rejection", result.rejection)
        elif error is not None:
            span.set_attribute("statewright.error.reason", error.reason)
            span.set_status(Status(StatusCode.ERROR, error.message))
        else:
            span.set_attribute("statewright.step.replayed", True)
        span.end()

    def timer_fired(self, lag: float) -> None:
        if self._metrics is not None:
            self._metrics.timer_fire_lag.observe(lag)

    # -- storage batches -----------------------------------------------------------------

    def batch(self, apply: Callable[[list[Operation]], Outcomes], ops: list[Operation]) -> Outcomes:
        """Run one group-commit transaction (writer thread) inside a span, counting outcomes."""
        tracer, metrics = self._tracer, self._metrics
        if tracer is None and metrics is None:
            return apply(ops)
        began = time.perf_counter()
        if tracer is None:
            results = apply(ops)
        else:
            with tracer.start_as_current_span(
                "statewright.storage.batch", kind=SpanKind.INTERNAL, record_exception=True
            ) as span:
                span.set_attributes(_batch_attributes(ops))
                results = apply(ops)
                counts = _outcomes(results)
                span.set_attributes({f"statewright.batch.{k}": v for k, v in counts.items()})
                if counts["failed"] or counts["unknown"]:
                    span.set_status(Status(StatusCode.ERROR, "some saves failed"))
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
