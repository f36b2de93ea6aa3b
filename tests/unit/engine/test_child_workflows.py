"""Child workflows (`workflow:` states) in the pure FSM and the definition reader: the
start a state's entry plans, the child's outcome as a step, the cascade's cancel, and what
validation refuses."""

from __future__ import annotations

import pytest

from statewrightd.definitions import load_definition
from statewrightd.definitions.model import CHILD_QUEUE, Definition
from statewrightd.definitions.problems import DefinitionInvalid
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason

SOURCE = """
name: onboarding
version: 1
context:
  customer_id: {type: string, default: ""}
  people:      {type: list, default: []}
  kyc:         {type: map, default: {}}
  checks:      {type: list, default: []}
  why:         {type: any}
states:
  verify_identity:
    workflow:
      definition: kyc-check
      input: "{'customer': context.customer_id}"
      apply: {kyc: "result.context"}
  approved: {}
  manual_review: {}
transitions:
  - {from: verify_identity, to: approved, guard: "context.kyc.verified == true"}
  - {from: verify_identity, to: manual_review}
  - {from: verify_identity, on: child_failed, to: manual_review, set: {why: "event.payload"}}
"""

MAPPED = """
name: household
version: 1
context:
  people: {type: list, default: []}
  checks: {type: list, default: []}
states:
  verify_all:
    workflow:
      definition: kyc-check
      version: 2
      id: "'kyc-' + item.name"
      map: "context.people"
      max_concurrency: 1
      input: "{'customer': item.name, 'n': index}"
      apply: {checks: "results"}
  done: {}
transitions:
  - {from: verify_all, to: done}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def test_entering_a_workflow_state_plans_the_childs_start_as_a_task_of_the_server(
    defn: Definition,
) -> None:
    result = fsm.start(defn, "p1", {"customer_id": "c-7"})
    assert (result.status, result.snapshot.state) == (Status.RUNNING, "verify_identity")
    planned = result.task.schedule
    assert planned is not None and planned.spec.queue == CHILD_QUEUE
    assert dict(planned.input) == {
        "definition": "kyc-check",
        "version": None,
        "workflow_id": "p1.verify_identity.1",  # <parent id>.<state>.<revision>
        "input": {"customer": "c-7"},
    }


def test_a_completed_child_is_applied_then_the_automatic_transitions_decide(
    defn: Definition,
) -> None:
    entered = fsm.start(defn, "p1", {"customer_id": "c-7"}).snapshot
    child = {"id": "p1.verify_identity.1", "status": "COMPLETED", "context": {"verified": True}}
    result = fsm.complete_task(defn, entered, "verify_identity", child)
    assert (result.status, result.snapshot.state) == (Status.COMPLETED, "approved")
    assert result.snapshot.context["kyc"] == {"verified": True}


def test_a_failed_child_fires_child_failed_with_its_payload(defn: Definition) -> None:
    entered = fsm.start(defn, "p1", {}).snapshot
    payload = {"child": "workflows/k", "status": "FAILED", "message": "no id"}
    result = fsm.task_gave_up(defn, entered, "verify_identity", payload)
    assert (result.status, result.snapshot.state) == (Status.COMPLETED, "manual_review")
    assert result.snapshot.context["why"] == payload
    assert result.transitions[0].event == "child_failed"


def test_a_failed_child_with_no_handler_fails_the_parent_with_child_failed() -> None:
    source = SOURCE.replace(
        "  - {from: verify_identity, on: child_failed, to: manual_review, "
        'set: {why: "event.payload"}}\n',
        "",
    )
    defn = load_definition(source)
    entered = fsm.start(defn, "p1", {}).snapshot
    payload = {"child": "workflows/k", "status": "CANCELLED", "message": "stopped"}
    result = fsm.task_gave_up(defn, entered, "verify_identity", payload)
    assert result.status is Status.FAILED
    assert result.error is not None and result.error.reason == Reason.CHILD_FAILED
    assert "workflows/k" in result.error.message and "CANCELLED" in result.error.message


def test_cancelling_the_parent_cancels_its_childs_task(defn: Definition) -> None:
    entered = fsm.start(defn, "p1", {}).snapshot
    result = fsm.cancel(defn, entered, "enough")
    # The task's cancel is what the child runner sees: it cancels the child (cascade).
    assert result.status is Status.CANCELLED and result.task.cancel


def test_child_failed_is_reserved_for_the_child_to_fire(defn: Definition) -> None:
    entered = fsm.start(defn, "p1", {}).snapshot
    with pytest.raises(InvalidArgument):
        fsm.signal(defn, entered, "child_failed", {})
    assert "child_failed" not in fsm.accepted_events(defn, entered)


def test_a_map_of_children_plans_one_start_per_item_with_the_id_expression() -> None:
    defn = load_definition(MAPPED)
    people = [{"name": "ann"}, {"name": "bob"}]
    result = fsm.start(defn, "h1", {"people": people})
    items = result.task.items
    assert [dict(i.input)["workflow_id"] for i in items] == ["kyc-ann", "kyc-bob"]
    assert [dict(i.input)["version"] for i in items] == [2, 2]
    assert [dict(i.input)["input"] for i in items] == [
        {"customer": "ann", "n": 0},
        {"customer": "bob", "n": 1},
    ]
    assert result.task.offered == 1  # max_concurrency


def test_an_id_that_is_no_workflow_id_fails_the_step() -> None:
    defn = load_definition(MAPPED)
    result = fsm.start(defn, "h1", {"people": [{"name": "no spaces allowed"}]})
    assert result.status is Status.FAILED
    assert result.error is not None and result.error.reason == Reason.TYPE_MISMATCH


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (("definition: kyc-check", "definition: Not_A_Name"), "states.verify_identity.workflow"),
        (("definition: kyc-check", "definition: kyc-check\n      version: 0"), "version"),
        (("on: child_failed", "on: task_failed"), "transitions[2].on"),
        (("input: \"{'customer'", "input: \"[{'customer'"), "states.verify_identity.workflow"),
        (("definition: kyc-check", "definition: kyc-check\n      queue: x"), "queue"),
    ],
)
def test_validation_refuses_a_bad_workflow_state(change: tuple[str, str], path: str) -> None:
    with pytest.raises(DefinitionInvalid) as caught:
        load_definition(SOURCE.replace(*change))
    assert any(path in p.path for p in caught.value.problems)


def test_a_state_with_both_a_task_and_a_workflow_is_refused() -> None:
    both = SOURCE.replace("    workflow:\n", "    task: {queue: q}\n    workflow:\n")
    with pytest.raises(DefinitionInvalid) as caught:
        load_definition(both)
    assert any("not both" in p.message for p in caught.value.problems)


def test_a_retry_after_a_failed_child_starts_a_new_child_without_the_entry_again() -> None:
    source = (
        SOURCE.replace(
            "  - {from: verify_identity, on: child_failed, to: manual_review, "
            'set: {why: "event.payload"}}\n',
            "",
        )
        .replace("context:\n", "context:\n  entered: {type: int, default: 0}\n", 1)
        .replace(
            "  verify_identity:\n",
            '  verify_identity:\n    entry: [{set: {entered: "context.entered + 1"}}]\n',
        )
    )
    defn = load_definition(source)
    entered = fsm.start(defn, "p1", {})
    payload = {"child": "workflows/k", "status": "FAILED", "message": "declined"}
    failed = fsm.task_gave_up(defn, entered.snapshot, "verify_identity", payload).snapshot
    retried = fsm.retry(defn, failed)
    assert retried.snapshot.state == "verify_identity" and retried.snapshot.status is Status.RUNNING
    assert retried.snapshot.context["entered"] == 1, "the entry ran once, not again"
    start, again = entered.task.schedule, retried.task.schedule
    assert start is not None and again is not None and again.state == "verify_identity"
    # The default child id carries the revision: the retry's child is a new instance.
    assert again.input != start.input
