"""The migration planner (engine.migration) and its step (fsm.migrate): what a plan says,
and every refusal, each problem with its path."""

from __future__ import annotations

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import Definition
from statewrightd.domain import Status
from statewrightd.engine import fsm, migration
from statewrightd.engine.migration import MigrationInvalid
from statewrightd.engine.model import Snapshot

V1 = """
name: order
version: 1
context:
  amount: {type: int, default: 0}
  note:   {type: string, default: ""}
states:
  charging:
    task: {queue: payments}
  review:
    wait: true
  fanning:
    task: {queue: payments, map: "[1, 2]"}
  done: {}
transitions:
  - {from: charging, to: review}
  - {from: review, on: approve, to: done}
  - {from: review, to: done, after: 1h}
  - {from: fanning, to: done}
"""

V2 = """
name: order
version: 2
context:
  amount: {type: int, default: 0}
  priority: {type: int, default: 3}
  label: {type: string, default: "none"}
states:
  paying:
    task: {queue: payments}
  shipping:
    task: {queue: shipping}
  approval:
    wait: true
  done: {}
transitions:
  - {from: paying, to: approval}
  - {from: shipping, to: approval}
  - {from: approval, on: approve, to: done}
  - {from: approval, to: done, after: 2h}
"""


@pytest.fixture(scope="module")
def v1() -> Definition:
    return load_definition(V1)


@pytest.fixture(scope="module")
def v2() -> Definition:
    return load_definition(V2)


def _waiting(v1: Definition) -> Snapshot:
    started = fsm.start(v1, "w", {"amount": 7, "note": "hi"})
    assert started.task.schedule is not None
    done = fsm.complete_task(v1, started.snapshot, "charging", {}).snapshot
    assert done.status is Status.WAITING and done.state == "review"
    return done


def test_a_waiting_instance_moves_to_a_renamed_wait_state_with_new_fields(
    v1: Definition, v2: Definition
) -> None:
    before = _waiting(v1)
    plan, result = migration.migrate(
        v1, v2, before, {"review": "approval"}, {"priority": "context.amount + 1"}
    )
    assert (plan.state_from, plan.state_to) == ("review", "approval")
    assert {(a.field, a.value, a.source) for a in plan.assigned} == {
        ("priority", 8, "set"),
        ("label", "none", "default"),
    }
    assert plan.removed == ("note",)
    assert plan.timers_disarmed and plan.task == migration.TASK_NONE
    after = result.snapshot
    assert (after.version, after.state, after.status) == (2, "approval", Status.WAITING)
    assert after.revision == before.revision + 1
    assert dict(after.context) == {"amount": 7, "priority": 8, "label": "none"}
    # The old state's timer goes, the new state's is armed from its own `after`.
    assert result.timers.disarm and [t.after for t in result.timers.arm] == ["2h"]
    # The migrated instance steps on under version 2.
    resumed = fsm.resume(v2, after, "approve", {})
    assert resumed.snapshot.status is Status.COMPLETED


def test_an_open_task_moves_to_a_task_state_on_its_queue(v1: Definition, v2: Definition) -> None:
    running = fsm.start(v1, "w", {}).snapshot
    plan, result = migration.migrate(v1, v2, running, {"charging": "paying"}, {})
    assert (plan.task, plan.task_queue) == (migration.TASK_MOVED, "payments")
    assert result.task.cancel and result.task.schedule is not None
    assert result.task.schedule.state == "paying"


def test_an_open_task_is_cancelled_when_the_new_state_has_none(
    v1: Definition, v2: Definition
) -> None:
    running = fsm.start(v1, "w", {}).snapshot
    plan, result = migration.migrate(v1, v2, running, {"charging": "approval"}, {})
    assert plan.task == migration.TASK_CANCELLED
    assert result.task.cancel and result.task.schedule is None
    assert result.snapshot.status is Status.WAITING


def test_every_problem_is_named_with_its_path(v1: Definition, v2: Definition) -> None:
    running = fsm.start(v1, "w", {}).snapshot
    with pytest.raises(MigrationInvalid) as refused:
        migration.plan(
            v1,
            v2,
            running,
            {"charging": "shipping", "reveiw": "aproval"},
            {"priorty": "1", "label": "context.amount", "amount": "context.nope +"},
        )
    error = refused.value
    assert error.reason == "MIGRATION_INVALID"
    paths = [p.path for p in error.problems]
    assert paths == [
        "state_map[reveiw]",
        "state_map[reveiw]",
        "state_map[charging]",
        "set[priorty]",
        "set[amount]",
        "set[label]",
    ]
    messages = [p.message for p in error.problems]
    assert "did you mean 'review'?" in messages[0]
    assert "did you mean 'approval'?" in messages[1]
    assert "queue 'shipping'" in messages[2]
    assert "did you mean 'priority'?" in messages[3]
    assert error.metadata["problems"] == "6"
    assert error.metadata["path"] == "state_map[reveiw]"
    assert error.metadata["problem_3"].startswith("state_map[charging]: ")


def test_an_unmapped_state_missing_in_the_target_is_refused(v1: Definition, v2: Definition) -> None:
    before = _waiting(v1)
    with pytest.raises(MigrationInvalid) as refused:
        migration.plan(v1, v2, before, {}, {})
    (problem,) = refused.value.problems
    assert problem.path == "state" and "'review'" in problem.message


def test_status_version_and_open_fan_out_are_refused(v1: Definition, v2: Definition) -> None:
    before = _waiting(v1)
    finished = fsm.resume(v1, before, "approve", {}).snapshot
    with pytest.raises(MigrationInvalid) as refused:
        migration.plan(v1, v1, finished, {}, {})
    assert [p.path for p in refused.value.problems] == ["to_version", "status"]
    fanning = fsm.migrate(v1, v1, before, "fanning", before.context).snapshot
    assert fanning.fan_out is not None
    with pytest.raises(MigrationInvalid) as open_map:
        migration.plan(v1, v2, fanning, {"fanning": "paying"}, {})
    assert [p.path for p in open_map.value.problems] == ["state"]
    assert "fan-out" in open_map.value.problems[0].message


def test_a_kept_field_whose_type_changed_is_a_problem_unless_set(v1: Definition) -> None:
    v3 = load_definition(
        V1.replace("version: 1", "version: 3").replace(
            'note:   {type: string, default: ""}', "note: {type: int, default: 0}"
        )
    )
    before = _waiting(v1)
    with pytest.raises(MigrationInvalid) as refused:
        migration.plan(v1, v3, before, {}, {})
    assert [p.path for p in refused.value.problems] == ["context.note"]
    plan = migration.plan(v1, v3, before, {}, {"note": "size(context.note)"})
    assert plan.context["note"] == 2
