"""One test (or table) per execution rule (docs/execution.md); each fails if its rule is broken."""

# ruff: noqa: E501  - table rows read best one per line

from __future__ import annotations

from pathlib import Path

import pytest

from statewrightd.definitions import Definition, load_definition, load_definition_file
from statewrightd.domain import Status
from statewrightd.engine import (
    Snapshot,
    TransitionTaken,
    accepted_events,
    cancel,
    resume,
    signal,
    start,
    validate_input,
)
from statewrightd.errors import FailedPrecondition, InvalidArgument

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "definitions"


def _defn(states: str, transitions: str, context: str = "", extra: str = "") -> Definition:
    ctx = "  log: {type: list, reducer: append, default: []}\n  n: {type: int, default: 0}\n"
    return load_definition(
        f"name: t\nversion: 1\n{extra}context:\n{ctx}{context}states:\n{states}"
        f"transitions:\n{transitions}"
    )


# Rule 1: exit, then transition set, then entry.
def test_rule1_exit_then_set_then_entry() -> None:
    d = _defn(
        "  a: {exit: [{set: {log: \"'exit a'\"}}]}\n  b: {entry: [{set: {log: \"'enter b'\"}}]}\n",
        "  - {from: a, to: b, set: {log: \"'set'\"}}\n",
    )
    r = start(d, "w", {})
    assert r.snapshot.context["log"] == ["exit a", "set", "enter b"]
    assert r.transitions == (TransitionTaken("a", "b", None),)


# Rule 2: the first matching rule decides after entering a state.
RULE2 = [
    (
        "finish completes, in the state it left",
        "  a: {}\n",
        "  - {from: a, to: __finish__}\n",
        Status.COMPLETED,
        "a",
    ),
    (
        "wait halts",
        "  a: {wait: true}\n  b: {}\n",
        "  - {from: a, on: go, to: b}\n  - {from: a, to: b}\n",
        Status.WAITING,
        "a",
    ),
    (
        "automatic fires",
        "  a: {}\n  b: {wait: true}\n",
        "  - {from: a, to: b}\n  - {from: b, on: go, to: a}\n",
        Status.WAITING,
        "b",
    ),
    (
        "event-only stays running",
        "  a: {}\n  b: {}\n",
        "  - {from: a, on: go, to: b}\n",
        Status.RUNNING,
        "a",
    ),
    ("leaf completes", "  a: {}\n  b: {}\n", "  - {from: a, to: b}\n", Status.COMPLETED, "b"),
]


@pytest.mark.parametrize(
    ("case", "states", "transitions", "status", "state"), RULE2, ids=[c[0] for c in RULE2]
)
def test_rule2_precedence(
    case: str, states: str, transitions: str, status: Status, state: str
) -> None:
    r = start(_defn(states, transitions), "w", {})
    assert (r.status, r.snapshot.state) == (status, state)


def test_rule2_guards_in_order_first_true_wins() -> None:
    d = _defn(
        "  a: {}\n  b: {}\n  c: {}\n  d: {}\n",
        "  - {from: a, to: b, guard: 'context.n > 5'}\n"
        "  - {from: a, to: c, guard: 'context.n > 0'}\n"
        "  - {from: a, to: d}\n",
    )
    assert start(d, "w", {"n": 1}).snapshot.state == "c"
    assert start(d, "w", {"n": 9}).snapshot.state == "b"
    assert start(d, "w", {"n": 0}).snapshot.state == "d"


def test_rule2_no_true_guard_fails() -> None:
    d = _defn("  a: {}\n  b: {}\n", "  - {from: a, to: b, guard: 'context.n > 5'}\n")
    r = start(d, "w", {})
    assert r.status is Status.FAILED
    assert r.error is not None and r.error.reason == "NO_TRANSITION_MATCHED"
    assert r.error.metadata["state"] == "a"


# Rule 3: more than recursion_limit transitions in one step fails.
@pytest.mark.parametrize(("limit", "status"), [(3, Status.FAILED), (4, Status.COMPLETED)])
def test_rule3_recursion_limit(limit: int, status: Status) -> None:
    d = _defn(
        "  a: {}\n  b: {}\n",
        "  - {from: a, to: b, guard: 'context.n < 3', set: {n: 'context.n + 1'}}\n"
        "  - {from: a, to: __finish__}\n  - {from: b, to: a}\n",
        extra=f"recursion_limit: {limit}\n",
    )
    # A four-transition chain: exactly at the limit passes, one over fails.
    d2 = _defn(
        "  a: {}\n  b: {}\n  c: {}\n  e: {}\n",
        "  - {from: a, to: b}\n  - {from: b, to: c}\n  - {from: c, to: e}\n  - {from: e, to: __finish__}\n",
        extra=f"recursion_limit: {limit}\n",
    )
    r = start(d2, "w", {})
    assert r.status is status
    assert len(r.transitions) <= limit
    if status is Status.FAILED:
        assert r.error is not None and r.error.reason == "RECURSION_LIMIT"
    assert start(d, "w", {}).status is Status.FAILED  # an endless a<->b loop always fails


# Rule 4: CEL runtime errors and type mismatches fail the instance, without raising.
RULE4 = [
    (
        "evaluation error",
        "  - {from: a, to: b, guard: '1 / context.n > 0'}\n",
        "EVALUATION_ERROR",
        "transitions[0].guard",
    ),
    (
        "dyn guard not bool",
        "  - {from: a, to: b, guard: 'context.m.x'}\n",
        "TYPE_MISMATCH",
        "transitions[0].guard",
    ),
    (
        "dyn set wrong type",
        "  - {from: a, to: b, set: {n: 'context.m.x'}}\n",
        "TYPE_MISMATCH",
        "transitions[0].set.n",
    ),
]


@pytest.mark.parametrize(
    ("case", "transitions", "reason", "path"), RULE4, ids=[c[0] for c in RULE4]
)
def test_rule4_runtime_errors_fail_the_instance(
    case: str, transitions: str, reason: str, path: str
) -> None:
    d = _defn("  a: {}\n  b: {}\n", transitions, context="  m: {type: map, default: {x: 'str'}}\n")
    r = start(d, "w", {})
    assert r.status is Status.FAILED and r.changed
    assert r.error is not None
    assert (r.error.reason, r.error.metadata["path"]) == (reason, path)


# Rule 5: events on a RUNNING instance.
def _running() -> tuple[Definition, Snapshot]:
    d = _defn(
        "  a: {}\n  b: {}\n  c: {}\n",
        "  - {from: a, on: go, to: b, guard: 'event.payload.ok == true'}\n"
        "  - {from: b, on: back, to: c}\n",
    )
    return d, start(d, "w", {}).snapshot


def test_rule5_declared_here_but_guards_false_is_accepted_unchanged() -> None:
    d, snap = _running()
    r = signal(d, snap, "go", {"ok": False})
    assert not r.changed and r.snapshot is snap and r.transitions == ()
    r = signal(d, snap, "go", {"ok": True})
    assert r.changed and r.snapshot.state == "b" and r.snapshot.revision == 2


def test_rule5_declared_elsewhere_is_failed_precondition() -> None:
    d, snap = _running()
    with pytest.raises(FailedPrecondition) as info:
        signal(d, snap, "back", {})
    assert info.value.reason == "EVENT_NOT_ALLOWED"


def test_rule5_unknown_event_is_invalid_argument() -> None:
    d, snap = _running()
    with pytest.raises(InvalidArgument) as info:
        signal(d, snap, "nope", {})
    assert info.value.reason == "UNKNOWN_EVENT"
    assert "did you mean" not in info.value.message and "did_you_mean" not in info.value.metadata


def test_an_unknown_event_suggests_the_one_a_typo_meant() -> None:
    d, snap = _waiting()
    with pytest.raises(InvalidArgument) as info:
        resume(d, snap, "aprove", {"n": 2})
    assert info.value.message.endswith("declares no event 'aprove'; did you mean 'approve'?")
    assert info.value.metadata["did_you_mean"] == "approve"
    with pytest.raises(InvalidArgument) as cased:
        resume(d, snap, "Reject", {})
    assert cased.value.metadata["did_you_mean"] == "reject"


def test_an_event_of_another_state_names_those_this_state_accepts() -> None:
    d, snap = _running()
    with pytest.raises(FailedPrecondition) as info:
        signal(d, snap, "back", {})
    assert info.value.message == "event 'back' is not accepted in state 'a' (it accepts go)"


# Rule 6: resume.
def _waiting() -> tuple[Definition, Snapshot]:
    d = _defn(
        "  a: {wait: true}\n  b: {}\n  c: {}\n",
        "  - {from: a, on: approve, to: b, guard: 'context.n >= 2'}\n"
        "  - {from: a, on: reject, to: c}\n",
    )
    return d, start(d, "w", {}).snapshot


@pytest.mark.parametrize("event", ["", "resume"])
def test_rule6_empty_or_resume_means_first_declared_event(event: str) -> None:
    d, snap = _waiting()
    r = resume(d, snap, event, {"n": 2})
    assert r.transitions == (TransitionTaken("a", "b", "approve"),)


def test_rule6_input_is_merged_through_reducers_before_the_event_fires() -> None:
    d, snap = _waiting()
    r = resume(d, snap, "approve", {"n": 3, "log": "x"})
    assert r.status is Status.COMPLETED
    assert r.snapshot.context["log"] == ["x"]


def test_rule6_every_guard_rejecting_is_failed_precondition() -> None:
    d, snap = _waiting()
    with pytest.raises(FailedPrecondition) as info:
        resume(d, snap, "approve", {"n": 1})
    assert info.value.reason == "GUARD_REJECTED"


def test_rule6_only_waiting_and_event_checks() -> None:
    d, snap = _running()
    with pytest.raises(FailedPrecondition) as info:
        resume(d, snap, "go", {})
    assert info.value.reason == "NOT_WAITING"
    dw, wsnap = _waiting()
    with pytest.raises(InvalidArgument) as bad:
        resume(dw, wsnap, "nope", {})
    assert bad.value.reason == "UNKNOWN_EVENT"
    with pytest.raises(FailedPrecondition) as fp:
        signal(dw, wsnap, "approve", {})
    assert fp.value.reason == "NOT_RUNNING"


def test_input_validation_reasons() -> None:
    d, _ = _waiting()
    with pytest.raises(InvalidArgument) as info:
        validate_input(d, {"n": "x"})
    assert (info.value.reason, info.value.metadata["field"]) == ("INPUT_TYPE_MISMATCH", "n")
    with pytest.raises(InvalidArgument) as unknown:
        validate_input(d, {"zz": 1})
    assert (unknown.value.reason, unknown.value.metadata["field"]) == ("UNKNOWN_FIELD", "zz")
    assert validate_input(d, {"n": 3.0}) == {"n": 3}  # Struct numbers arrive as floats


def test_cancel_and_terminal_absorb() -> None:
    d, snap = _waiting()
    r = cancel(d, snap, "user asked")
    assert r.status is Status.CANCELLED and r.snapshot.revision == 2
    assert accepted_events(d, r.snapshot) == ()
    with pytest.raises(FailedPrecondition) as info:
        cancel(d, r.snapshot, "again")
    assert info.value.reason == "ALREADY_TERMINAL"


def test_examples_conformance_paths() -> None:
    mail = load_definition_file(EXAMPLES / "mail-approval.yaml")
    r = start(mail, "m", {"topic": "launch"})
    assert r.status is Status.WAITING and accepted_events(mail, r.snapshot) == ("approve", "reject")
    done = resume(mail, r.snapshot, "approve", {"approver": "ann"})
    assert done.status is Status.COMPLETED and done.snapshot.context["sent"] is True
    review = load_definition_file(EXAMPLES / "review-loop.yaml")
    s = start(review, "r", {}).snapshot
    assert s.status is Status.RUNNING
    s = signal(review, s, "score", {"score": 0.2}).snapshot
    s = signal(review, s, "revised", {"document": "v2"}).snapshot
    s = signal(review, s, "score", {"score": 0.95}).snapshot
    assert s.status is Status.COMPLETED and s.revision == 4
    order = load_definition_file(EXAMPLES / "order-pricing.yaml")
    o = start(order, "o", {"items": ["x"], "price": 10.0, "quantity": 2})
    assert o.status is Status.COMPLETED and o.snapshot.context["shipment"]["carrier"] == "standard"
    assert start(order, "o", {}).snapshot.context["reason"] == "empty order"
