"""The calls the engine and the store make to be observed: finished steps, storage batches.

The active tracer and metrics are process-wide (like OpenTelemetry's own globals): the
server installs them at start and removes them when it stops. With neither installed
every hook returns at once, so an unobserved server pays one attribute read per step.

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
from typing import Protocol

from opentelemetry import context as otel_context
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from statewrightd import errors
from statewrightd.observability.metrics import Metrics
from statewrightd.store.records import Create, InstanceRecord, Operation

_log = logging.getLogger("statewrightd.steps")

# Enough to find any instance of a batch from its span; a batch holds at most 256 saves.
MAX_BATCH_IDS = 256


@dataclass(frozen=True, slots=True)
class _Installed:
    tracer: Tracer | None
    metrics: Metrics | None


_NONE = _Installed(None, None)
_active = _NONE


def install(tracer: Tracer | None, metrics: Metrics | None) -> None:
    global _active  # noqa: PLW0603 - process-wide by design, see the module docstring
    _active = _Installed(tracer, metrics) if tracer or metrics else _NONE


def uninstall() -> None:
    global _active  # noqa: PLW0603
    _active = _NONE


# -- steps -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepObservation:
    """When a step command was built, and in which trace context."""

    started_ns: int
    started: float  # perf_counter, for the latency histogram
    parent: otel_context.Context | None


def step_requested() -> StepObservation | None:
    """Called where a step command is built (the RPC's task); None when nothing observes."""
    active = _active
    if active.tracer is None and active.metrics is None:
        return None
    parent = otel_context.get_current() if active.tracer is not None else None
    return StepObservation(time.time_ns(), time.perf_counter(), parent)


class StepLike(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def workflow_id(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def observed(self) -> StepObservation | None: ...


def step_finished(cmd: StepLike, result: object) -> None:
    """Called on the EventLoop thread when a step is answered (``result``: its answer)."""
    observed = cmd.observed
    debug = _log.isEnabledFor(logging.DEBUG)
    if observed is None and not debug:
        return
    record = getattr(result, "record", None)
    error = result if isinstance(result, errors.StatewrightError) else None
    outcome = "ok" if error is None else error.reason
    if debug:
        if isinstance(record, InstanceRecord):
            _log.debug(
                "workflow %s: %s step -> %s %s at revision %d",
                cmd.workflow_id,
                cmd.kind,
                record.status,
                record.state,
                record.revision,
                extra={"workflow_id": cmd.workflow_id},
            )
        else:
            _log.debug(
                "workflow %s: %s step answered %s",
                cmd.workflow_id,
                cmd.kind,
                outcome if error is not None else type(result).__name__,
                extra={"workflow_id": cmd.workflow_id},
            )
    if observed is None:
        return
    active = _active
    if active.metrics is not None:
        active.metrics.step_seconds.labels(cmd.kind, outcome).observe(
            time.perf_counter() - observed.started
        )
    if active.tracer is not None:
        span = active.tracer.start_span(
            f"statewright.step {cmd.kind}",
            context=observed.parent,
            kind=SpanKind.INTERNAL,
            start_time=observed.started_ns,
            attributes={
                "statewright.workflow_id": cmd.workflow_id,
                "statewright.step.kind": cmd.kind,
                "statewright.step.attempts": cmd.attempts + 1,
            },
        )
        if isinstance(record, InstanceRecord):
            span.set_attributes(
                {
                    "statewright.definition": record.definition,
                    "statewright.definition_version": record.version,
                    "statewright.revision": record.revision,
                    "statewright.status": record.status,
                    "statewright.state": record.state,
                }
            )
            accepted = getattr(result, "accepted", True)
            if accepted is False:
                span.set_attribute("statewright.signal.rejection", getattr(result, "rejection", ""))
        elif error is not None:
            span.set_attribute("statewright.error.reason", error.reason)
            span.set_status(Status(StatusCode.ERROR, error.message))
        else:
            span.set_attribute("statewright.step.replayed", True)
        span.end()


# -- storage batches ---------------------------------------------------------------------


def storage_batch(
    apply: Callable[[list[Operation]], list[InstanceRecord | errors.StoreError]],
    ops: list[Operation],
) -> list[InstanceRecord | errors.StoreError]:
    """Run one group-commit transaction (writer thread) inside a span, counting outcomes."""
    active = _active
    if active.tracer is None and active.metrics is None:
        return apply(ops)
    began = time.perf_counter()
    if active.tracer is None:
        results = apply(ops)
    else:
        with active.tracer.start_as_current_span(
            "statewright.storage.batch", kind=SpanKind.INTERNAL, record_exception=True
        ) as span:
            span.set_attributes(_batch_attributes(ops))
            results = apply(ops)
            counts = _outcomes(results)
            span.set_attributes({f"statewright.batch.{k}": v for k, v in counts.items()})
            if counts["failed"] or counts["unknown"]:
                span.set_status(Status(StatusCode.ERROR, "some saves failed"))
    if active.metrics is not None:
        metrics = active.metrics
        metrics.batch_seconds.observe(time.perf_counter() - began)
        metrics.batch_size.observe(len(ops))
        counts = _outcomes(results)
        for outcome, count in counts.items():
            if count:
                metrics.saves.labels(outcome).inc(count)
        if counts["conflict"]:
            metrics.cas_conflicts.inc(counts["conflict"])
    return results


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
        "statewright.statuses": [r.status for r in records],
        "statewright.definitions": sorted({r.definition for r in records}),
    }
