"""What one step may cost: each evaluation is bounded before it runs, a step in processor
time, each context value in size as it is set."""

from __future__ import annotations

from typing import Any

import pytest

from statewrightd.definitions import Definition, load_definition
from statewrightd.definitions.cost import ITERATION_BUDGET, estimate, shape_of
from statewrightd.engine import Status, fsm, signal, start
from statewrightd.engine.fsm import StepLimits, limited

DEFINITION = """
name: costly
version: 1
recursion_limit: 100
context:
  items: {type: list, default: []}
  words: {type: list, default: []}
  text: {type: string, default: "x"}
  n: {type: int, default: 0}
states:
  idle: {}
  grow:
    entry: [{set: {text: "context.text + context.text", n: "context.n + 1"}}]
  done: {}
transitions:
  - {from: idle, on: square, to: done, guard: "context.items.map(x, x * 2).size() > 0"}
  - {from: idle, on: scan, to: done, guard: "context.items.exists(x, x < 0)"}
  - from: idle
    on: copy
    to: done
    set: {words: "context.items.map(x, context.text + context.text)"}
  - {from: idle, on: double, to: grow}
  - {from: grow, to: grow, guard: "context.n < 90"}
  - {from: grow, to: done}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(DEFINITION)


def _signalled(defn: Definition, event: str, **context: Any) -> Any:
    started = start(defn, "w", context)
    return signal(defn, started.snapshot, event, {}).snapshot


def test_a_quadratic_map_over_a_long_list_is_refused_before_it_runs(defn: Definition) -> None:
    failed = _signalled(defn, "square", items=list(range(5_000)))
    assert failed.status is Status.FAILED
    assert failed.error is not None
    assert failed.error.reason == "EVALUATION_BUDGET_EXCEEDED"
    assert failed.error.metadata["budget"] == "time"
    assert failed.error.metadata["path"] == "transitions[0].guard"
    assert "ms" in failed.error.metadata["limit"]


def test_the_same_map_over_a_short_list_runs(defn: Definition) -> None:
    assert _signalled(defn, "square", items=list(range(50))).status is Status.COMPLETED


def test_a_linear_scan_of_a_long_list_runs(defn: Definition) -> None:
    done = _signalled(defn, "scan", items=list(range(ITERATION_BUDGET // 4)))
    assert done.status is Status.RUNNING  # the guard was false: nothing changed


def test_building_more_memory_than_the_budget_is_refused(defn: Definition) -> None:
    failed = _signalled(defn, "copy", items=list(range(300)), text="y" * 60_000)
    assert failed.error is not None
    assert failed.error.reason == "EVALUATION_BUDGET_EXCEEDED"
    assert failed.error.metadata["budget"] == "memory"


def test_a_value_doubled_step_after_step_stops_as_soon_as_it_is_too_large(
    defn: Definition,
) -> None:
    with limited(StepLimits(value_bytes=100_000)):
        failed = _signalled(defn, "double")
    assert failed.status is Status.FAILED
    assert failed.error is not None
    assert failed.error.reason == "CONTEXT_TOO_LARGE"
    assert failed.error.metadata["field"] == "text"
    assert failed.error.metadata["path"] == "states.grow.entry[0].set.text"
    # 2**17 bytes is the first doubling past the limit; the failed step keeps the one before.
    assert len(failed.context["text"]) == 2**16
    assert int(failed.error.metadata["size"]) >= 2**17


def test_a_step_that_runs_out_of_processor_time_fails_at_its_next_evaluation(
    defn: Definition,
) -> None:
    started = start(defn, "w", {})
    with limited(StepLimits(cpu_seconds=0.0)):
        failed = signal(defn, started.snapshot, "square", {}).snapshot
    assert failed.error is not None
    assert failed.error.reason == "EVALUATION_BUDGET_EXCEEDED"
    assert failed.error.metadata["budget"] == "step"
    assert failed.error.metadata["limit"] == "0ms"


class _Reads:
    """Counts what the step reads of the processor clock (a system call each)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> float:
        self.count += 1
        return 0.0


def _copied(defn: Definition, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, _Reads]:
    """A step of one evaluation (a `set` of a `map`), its processor clock counted."""
    started = start(defn, "w", {"items": [1, 2, 3]})
    reads = _Reads()
    monkeypatch.setattr(fsm, "step_time", reads)
    copied = signal(defn, started.snapshot, "copy", {}).snapshot
    assert copied.state == "done" and copied.error is None, "no processor time was spent"
    assert copied.context["words"] == ["xx", "xx", "xx"]
    return copied, reads


def test_a_step_within_its_budget_of_wall_clock_reads_its_processor_time_once(
    defn: Definition, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, reads = _copied(defn, monkeypatch)
    assert reads.count == 1, "read when the step began, never before an evaluation"


class _LateWallClock:
    """A wall clock that jumps ten seconds a reading: a machine too busy to run the step."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 10.0
        return self.now


def test_a_step_late_by_the_wall_clock_is_judged_by_its_processor_time(
    defn: Definition, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fsm, "time", _LateWallClock())
    _, reads = _copied(defn, monkeypatch)
    assert reads.count == 2, "read again before the evaluation, the wall deadline passed"


@pytest.mark.parametrize("size", [0, 1, 10, 100, 400])
def test_estimates_of_list_building_grow_with_the_square_of_the_length(size: int) -> None:
    """The estimator's model of ``map``: what the library copies as the result grows."""
    defn = load_definition(DEFINITION)
    guard = defn.transitions[0].guard
    assert guard is not None
    guard.evaluate(defn.environment.activation({"items": list(range(size))}, "", {}, {}))
    costed: Any = guard._costed
    tree, overloads = costed
    found = estimate(tree, overloads, {"context.items": shape_of(list(range(size)))})
    doubled = estimate(tree, overloads, {"context.items": shape_of(list(range(2 * size)))})
    if size >= 100:
        assert doubled.time_ns > 3 * found.time_ns
    assert found.memory_bytes >= 16 * size  # at least the list it builds


def test_deeply_nested_comprehensions_are_judged_without_exploring_every_level() -> None:
    """Each level of nesting multiplies the estimate's own work: past a bound, the
    expression is judged over budget rather than explored (even over a short list)."""
    expression = "true"
    for level in range(12):
        expression = f"context.items.exists(x{level}, {expression})"
    defn = load_definition(DEFINITION.replace("context.items.exists(x, x < 0)", expression))
    started = start(defn, "w", {"items": [1, 2]})
    failed = signal(defn, started.snapshot, "scan", {}).snapshot
    assert failed.error is not None
    assert failed.error.reason == "EVALUATION_BUDGET_EXCEEDED"
    assert failed.error.metadata["budget"] == "time"
