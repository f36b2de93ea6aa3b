"""Fan-out (`map` on a task state) in the pure FSM: entry, item steps, the join, tolerated
failures, leaving with items open, the empty list, the size limit, and validation."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.definitions.problems import DefinitionInvalid
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.engine.model import FanOutProgress, ItemEnd, Snapshot, StepResult
from statewrightd.errors import FailedPrecondition, StatewrightError
from statewrightd.reasons import Reason

SOURCE = """
name: batch
version: 1
context:
  lines:   {type: list, default: []}
  charges: {type: list, default: []}
  failed:  {type: list, default: []}
  why:     {type: map, default: {}}
states:
  charge_lines:
    task:
      queue: payments
      map: "context.lines"
      input: "{'sku': item.sku, 'line': index}"
      max_concurrency: 2
      tolerated_failures: 1
      apply: {charges: "results", failed: "failures"}
  done: {}
  gave_up: {}
  stopped: {}
transitions:
  - {from: charge_lines, to: done}
  - {from: charge_lines, on: task_failed, to: gave_up, set: {why: "event.payload"}}
  - {from: charge_lines, on: stop, to: stopped}
"""

LINES = [{"sku": f"s{i}"} for i in range(4)]


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def _entered(defn: Definition, lines: list[dict[str, str]] = LINES) -> StepResult:
    return fsm.start(defn, "b1", {"lines": lines})


def _complete(
    defn: Definition, snap: Snapshot, item: int, result: Mapping[str, object]
) -> StepResult:
    return fsm.complete_item(defn, snap, "charge_lines", revision=1, item=item, result=result)


def _gave_up(defn: Definition, snap: Snapshot, item: int) -> StepResult:
    failure = {"type": "DECLINED", "message": f"line {item}", "attempts": 3}
    return fsm.item_gave_up(defn, snap, "charge_lines", revision=1, item=item, failure=failure)


def _with_ends(snap: Snapshot, ends: dict[int, ItemEnd]) -> Snapshot:
    """The snapshot as a fresh load gives it once at most one item is open."""
    assert snap.fan_out is not None
    return dataclasses.replace(snap, fan_out=dataclasses.replace(snap.fan_out, ended=ends))


def test_entering_a_map_state_plans_one_task_per_item_offering_max_concurrency(
    defn: Definition,
) -> None:
    result = _entered(defn)
    assert (result.status, result.snapshot.state) == (Status.RUNNING, "charge_lines")
    plan = result.task
    assert plan.schedule is None and plan.offered == 2
    assert [p.item for p in plan.items] == [0, 1, 2, 3]
    assert [dict(p.input) for p in plan.items] == [{"sku": f"s{i}", "line": i} for i in range(4)]
    assert result.snapshot.fan_out == FanOutProgress(revision=1, total=4)


def test_an_item_step_keeps_the_result_apart_and_offers_the_next_held_item(
    defn: Definition,
) -> None:
    snap = _entered(defn).snapshot
    first = _complete(defn, snap, 1, {"id": "c1"})
    assert first.snapshot.revision == 2 and first.snapshot.state == "charge_lines"
    assert first.snapshot.context["charges"] == []  # kept on the item until the join
    assert first.snapshot.fan_out is not None and first.snapshot.fan_out.completed == 1
    release = first.task.release
    assert release is not None and (release.revision, release.index) == (1, 2)
    second = _complete(defn, first.snapshot, 0, {"id": "c0"})
    release = second.task.release
    assert release is not None and release.index == 3
    # No item is left to offer: the next ends release nothing.
    third = _complete(defn, second.snapshot, 2, {"id": "c2"})
    assert third.task.release is None and third.transitions == ()


def test_the_last_item_joins_results_in_input_order_then_moves_on(defn: Definition) -> None:
    snap = _entered(defn).snapshot
    for item in (3, 0, 2):
        snap = _complete(defn, snap, item, {"id": f"c{item}"}).snapshot
    # A cached snapshot without the others' ends cannot join: the runtime reloads.
    with pytest.raises(StatewrightError) as refused:
        _complete(defn, snap, 1, {"id": "c1"})
    assert refused.value.reason == Reason.WORKFLOW_BUSY
    ends = {i: ItemEnd(result={"id": f"c{i}"}) for i in (0, 2, 3)}
    joined = _complete(defn, _with_ends(snap, ends), 1, {"id": "c1"})
    assert (joined.status, joined.snapshot.state) == (Status.COMPLETED, "done")
    assert joined.snapshot.context["charges"] == [{"id": f"c{i}"} for i in range(4)]
    assert joined.snapshot.context["failed"] == [None] * 4
    assert joined.snapshot.fan_out is None


def test_a_second_end_of_an_item_that_ended_is_refused_not_taken_for_the_join(
    defn: Definition,
) -> None:
    # Found by the chaos suite: a duplicate completion of item 3 (another request id, the
    # same lease) reached the FSM with items 0, 1 and 3 ended, was counted as the fourth
    # end, and the join failed looking for item 2's result (KeyError).
    snap = _entered(defn).snapshot
    for item in (0, 1, 3):
        snap = _complete(defn, snap, item, {"id": f"c{item}"}).snapshot
    ends = {i: ItemEnd(result={"id": f"c{i}"}) for i in (0, 1, 3)}
    with pytest.raises(FailedPrecondition) as refused:
        _complete(defn, _with_ends(snap, ends), 3, {"id": "again"})
    assert refused.value.reason == Reason.LEASE_SUPERSEDED
    with pytest.raises(FailedPrecondition):
        _gave_up(defn, _with_ends(snap, ends), 3)


def test_tolerated_failures_join_with_null_results_and_their_errors(defn: Definition) -> None:
    snap = _entered(defn).snapshot
    snap = _gave_up(defn, snap, 2).snapshot
    assert snap.fan_out is not None and snap.fan_out.given_up == 1
    for item in (0, 1):
        snap = _complete(defn, snap, item, {"id": f"c{item}"}).snapshot
    error = {"item": 2, "type": "DECLINED", "message": "line 2", "attempts": 3}
    ends = {0: ItemEnd(result={"id": "c0"}), 1: ItemEnd(result={"id": "c1"})}
    ends[2] = ItemEnd(error=error)
    joined = _complete(defn, _with_ends(snap, ends), 3, {"id": "c3"})
    assert joined.snapshot.state == "done"
    assert joined.snapshot.context["charges"] == [{"id": "c0"}, {"id": "c1"}, None, {"id": "c3"}]
    assert joined.snapshot.context["failed"] == [None, None, error, None]


def test_more_failures_than_tolerated_fire_task_failed_and_cancel_the_rest(
    defn: Definition,
) -> None:
    snap = _entered(defn).snapshot
    snap = _gave_up(defn, snap, 0).snapshot
    result = _gave_up(defn, snap, 3)
    assert result.snapshot.state == "gave_up" and result.task.cancel
    why = result.snapshot.context["why"]
    assert isinstance(why, dict)
    assert (why["total"], why["completed"], why["given_up"]) == (4, 0, 2)
    assert [e["item"] for e in why["errors"]] == [0, 3]
    assert why["type"] == "DECLINED" and why["item"] == 3


def test_more_failures_than_tolerated_with_no_handler_fail_the_instance() -> None:
    defn = load_definition(
        SOURCE.replace(
            '  - {from: charge_lines, on: task_failed, to: gave_up, set: {why: "event.payload"}}\n',
            "",
        ).replace("tolerated_failures: 1", "tolerated_failures: 0")
    )
    snap = fsm.start(defn, "b1", {"lines": LINES}).snapshot
    result = fsm.item_gave_up(
        defn, snap, "charge_lines", revision=1, item=1, failure={"type": "X", "message": "no"}
    )
    assert result.status is Status.FAILED and result.task.cancel
    assert result.error is not None and result.error.reason == Reason.TASK_FAILED
    assert "1 of the 4 items" in result.error.message


def test_leaving_by_an_event_cancels_the_open_items_and_later_ends_are_refused(
    defn: Definition,
) -> None:
    snap = _entered(defn).snapshot
    left = fsm.signal(defn, snap, "stop", {})
    assert left.snapshot.state == "stopped" and left.task.cancel
    assert left.snapshot.fan_out is None
    cancelled = fsm.cancel(defn, snap, "enough")
    assert cancelled.task.cancel and cancelled.snapshot.fan_out is None
    running = dataclasses.replace(left.snapshot, status=Status.RUNNING)
    with pytest.raises(FailedPrecondition):
        _complete(defn, running, 0, {})


def test_an_item_of_an_earlier_entry_is_refused(defn: Definition) -> None:
    snap = _entered(defn).snapshot
    with pytest.raises(FailedPrecondition) as refused:
        fsm.complete_item(defn, snap, "charge_lines", revision=7, item=0, result={})
    assert refused.value.reason == Reason.TASK_CANCELLED


def test_an_empty_list_joins_at_once(defn: Definition) -> None:
    result = _entered(defn, [])
    assert (result.status, result.snapshot.state) == (Status.COMPLETED, "done")
    assert result.snapshot.context["charges"] == [] and result.task.items == ()


def test_a_list_over_the_limit_fails_the_instance_naming_it(defn: Definition) -> None:
    with fsm.limited(fsm.StepLimits(map_items=3)):
        result = _entered(defn)
    assert result.status is Status.FAILED and result.task.items == ()
    assert result.error is not None and result.error.reason == Reason.MAP_TOO_LARGE
    assert "max_map_items" in result.error.message and result.error.metadata["limit"] == "3"


def test_a_map_that_is_not_a_list_fails_the_entering_step(defn: Definition) -> None:
    # A `map` field is refused at load (below); a `dyn` one only when the step runs.
    result = fsm.start(
        load_definition(SOURCE.replace('map: "context.lines"', 'map: "context.why.x"')),
        "b1",
        {"why": {"x": 3}},
    )
    assert result.status is Status.FAILED
    assert result.error is not None and result.error.reason == Reason.TYPE_MISMATCH


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (('map: "context.lines"', 'map: "context.why"'), "map must give a list"),
        (("max_concurrency: 2", "max_concurrency: 0"), "max_concurrency must be a positive"),
        (("tolerated_failures: 1", "tolerated_failures: -1"), "tolerated_failures must be"),
        (('charges: "results"', 'charges: "results[0].id + 1"'), "charges"),
        (('failed: "failures"', 'why: "failures"'), "why"),
        (("input: \"{'sku': item.sku, 'line': index}\"", "input: \"{'n': result.x}\""), "input"),
    ],
)
def test_validation_refuses_a_broken_map(change: tuple[str, str], message: str) -> None:
    with pytest.raises(DefinitionInvalid) as refused:
        load_definition(SOURCE.replace(*change))
    assert message in str(refused.value)


def test_limits_without_a_map_are_refused() -> None:
    source = (
        SOURCE.replace('      map: "context.lines"\n', "")
        .replace("input: \"{'sku': item.sku, 'line': index}\"", "input: \"{'n': 1}\"")
        .replace('apply: {charges: "results", failed: "failures"}', 'apply: {why: "result"}')
    )
    with pytest.raises(DefinitionInvalid) as refused:
        load_definition(source)
    assert "applies only to a state with `map`" in str(refused.value)


def test_the_payload_errors_are_plain_values(defn: Definition) -> None:
    snap = _entered(defn).snapshot
    assert snap.fan_out is not None
    progress = dataclasses.replace(
        snap.fan_out, given_up=1, errors=(MappingProxyType({"item": 9, "type": "T"}),)
    )
    snap = dataclasses.replace(snap, fan_out=progress)
    result = _gave_up(defn, snap, 0)
    why = result.snapshot.context["why"]
    assert isinstance(why, dict) and why["errors"][0] == {"item": 9, "type": "T"}
