"""Probes: a storage batch span is linked to the steps it saved, and they to it.

The engine and the writer are played by hand here, in the order the real ones call the
probes: a step requested, its batch committed, its answer. The e2e tracing test checks
the same links through a real server.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from statewrightd import errors
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import Status
from statewrightd.engine.answers import Outcome
from statewrightd.engine.commands import ResumeCommand
from statewrightd.observability.probes import (
    LINK_WAIT_SECONDS,
    Outcomes,
    Probes,
    StepObservation,
)
from statewrightd.store.records import HistoryRecord, InstanceRecord, Operation, Save

NOW = datetime(2026, 1, 1, tzinfo=UTC)
LOADED = cast(Loaded, object())  # the probes never read it


def _record(workflow_id: str, revision: int) -> InstanceRecord:
    return InstanceRecord(
        workflow_id=workflow_id,
        definition="mail-approval",
        version=1,
        state="send",
        status=Status.COMPLETED,
        context={},
        revision=revision,
        error=None,
        create_time=NOW,
        update_time=NOW,
    )


def _save(workflow_id: str, revision: int) -> Save:
    record = _record(workflow_id, revision)
    history = HistoryRecord(
        workflow_id, revision, "approve", [], record.state, record.status, {}, None, NOW
    )
    return Save(record, revision - 1, history)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def traced(clock: Clock) -> tuple[Probes, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Probes(provider.get_tracer("test"), None, clock=clock), exporter


def _commit(probes: Probes, ops: list[Operation], outcomes: Outcomes) -> None:
    def apply(batch: list[Operation]) -> Outcomes:
        assert batch == ops
        return outcomes

    assert probes.batch(apply, ops) == outcomes


def _answer(
    probes: Probes, workflow_id: str, revision: int, observed: StepObservation | None
) -> None:
    outcome = Outcome(_record(workflow_id, revision), LOADED, saved=True)
    probes.finished(ResumeCommand(workflow_id=workflow_id), 0, observed, outcome)


def _one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    (span,) = [s for s in spans if s.name == name]
    return span


def test_the_batch_ends_once_every_saved_step_is_linked(
    traced: tuple[Probes, InMemorySpanExporter],
) -> None:
    probes, exporter = traced
    first = probes.requested(ResumeCommand(workflow_id="a"))
    second = probes.requested(ResumeCommand(workflow_id="b"))
    conflict = errors.Conflict("moved on", actual_revision=3)
    _commit(
        probes,
        [_save("a", 2), _save("b", 5), _save("c", 4)],
        [_record("a", 2), _record("b", 5), conflict],
    )
    _answer(probes, "a", 2, first)
    # Still waiting for b: nothing of the batch is exported yet.
    assert [s.name for s in exporter.get_finished_spans()] == ["statewright.step resume"]
    _answer(probes, "b", 5, second)
    spans = exporter.get_finished_spans()
    batch = _one(spans, "statewright.storage.batch")
    steps = [s for s in spans if s.name == "statewright.step resume"]
    assert batch.context is not None
    assert {link.context.span_id for link in batch.links} == {
        s.context.span_id for s in steps if s.context is not None
    }
    for step in steps:
        (link,) = step.links
        assert link.context.span_id == batch.context.span_id
        assert link.attributes is not None and link.attributes["statewright.link"] == "committed by"
    assert batch.attributes is not None and batch.attributes["statewright.batch.conflict"] == 1


def test_an_unobserved_step_releases_its_batch_without_a_link(
    traced: tuple[Probes, InMemorySpanExporter],
) -> None:
    probes, exporter = traced
    _commit(probes, [_save("a", 2)], [_record("a", 2)])
    _answer(probes, "a", 2, None)  # a step no request observed
    batch = _one(exporter.get_finished_spans(), "statewright.storage.batch")
    assert batch.links == ()


def test_a_batch_whose_steps_are_never_answered_still_ends(
    traced: tuple[Probes, InMemorySpanExporter], clock: Clock
) -> None:
    probes, exporter = traced
    _commit(probes, [_save("lost", 2)], [_record("lost", 2)])
    assert exporter.get_finished_spans() == ()
    # Past the wait bound, the next batch ends it.
    clock.now += LINK_WAIT_SECONDS
    _commit(probes, [_save("next", 2)], [_record("next", 2)])
    (ended,) = exporter.get_finished_spans()
    assert ended.attributes is not None and ended.attributes["statewright.workflow_ids"] == (
        "lost",
    )
    # A late answer finds nothing to link, and at shutdown whatever waits is ended.
    _answer(probes, "lost", 2, probes.requested(ResumeCommand(workflow_id="lost")))
    probes.close()
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == [
        "statewright.step resume",
        "statewright.storage.batch",
        "statewright.storage.batch",
    ]
    (late,) = [s for s in exporter.get_finished_spans() if s.name == "statewright.step resume"]
    assert late.links == ()


def test_a_batch_that_saved_nothing_ends_at_once(
    traced: tuple[Probes, InMemorySpanExporter],
) -> None:
    probes, exporter = traced
    _commit(probes, [_save("a", 2)], [errors.Conflict("moved on", actual_revision=2)])
    batch = _one(exporter.get_finished_spans(), "statewright.storage.batch")
    assert batch.links == ()
