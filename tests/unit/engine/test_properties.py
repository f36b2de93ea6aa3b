"""Hypothesis properties over generated definitions and event sequences."""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from statewrightd.definitions import Definition, validate_source
from statewrightd.definitions.values import ValueTypeError, conform
from statewrightd.domain import TERMINAL, Status
from statewrightd.engine import Snapshot, StepResult, cancel, resume, signal, start
from statewrightd.errors import FailedPrecondition, StatewrightError

EVENTS = ["e0", "e1", "e2"]
GUARDS = [
    None,
    "context.n < 3",
    "context.n % 2 == 0",
    "size(context.log) < 4",
    "has(event.payload.ok) && event.payload.ok == true",
    "context.flag",
    "context.tag == 'x'",
    "context.m.k == 1",  # fails at run time when the key is missing
]
SETS = [
    None,
    {"n": "context.n + 1"},
    {"log": "context.n"},
    {"flag": "!context.flag"},
    {"m": "{'k': context.n}"},
    {"tag": "event.name"},
    {"score": "double(context.n) / 2.0"},
    {"any": "event.payload"},
]
FIELDS = {
    "n": {"type": "int", "default": 0},
    "log": {"type": "list", "reducer": "append", "default": []},
    "flag": {"type": "bool", "default": False},
    "m": {"type": "map", "reducer": "merge", "default": {}},
    "tag": {"type": "string", "default": ""},
    "score": {"type": "number"},
    "any": {"type": "any"},
}

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much]
)


@st.composite
def definitions(draw: st.DrawFn) -> Definition:
    count = draw(st.integers(1, 5))
    names = [f"s{i}" for i in range(count)]
    states: dict[str, Any] = {}
    for name in names:
        spec: dict[str, Any] = {"wait": draw(st.booleans())}
        entry = draw(st.sampled_from(SETS))
        if entry:
            spec["entry"] = [{"set": entry}]
        states[name] = spec
    transitions = []
    for _ in range(draw(st.integers(0, 8))):
        t: dict[str, Any] = {
            "from": draw(st.sampled_from(names)),
            "to": draw(st.sampled_from([*names, "__finish__"])),
        }
        event = draw(st.sampled_from([None, *EVENTS]))
        if event:
            t["on"] = event
        guard = draw(st.sampled_from(GUARDS))
        if guard:
            t["guard"] = guard
        action = draw(st.sampled_from(SETS))
        if action:
            t["set"] = action
        transitions.append(t)
    # A wait state needs an outgoing event: give each one, so fewer examples are discarded.
    for name in names:
        if states[name]["wait"] and not any(t["from"] == name and "on" in t for t in transitions):
            transitions.append({"from": name, "on": "e0", "to": draw(st.sampled_from(names))})
    doc = {
        "name": "gen",
        "version": 1,
        "recursion_limit": draw(st.integers(1, 6)),
        "context": FIELDS,
        "states": states,
        "transitions": transitions,
    }
    definition, _ = validate_source(json.dumps(doc))
    assume(definition is not None)
    assert definition is not None
    return definition


operations = st.lists(
    st.tuples(
        st.sampled_from(["signal", "resume", "cancel"]),
        st.sampled_from(["", "resume", *EVENTS, "unknown"]),
        st.sampled_from([{}, {"ok": True}, {"ok": False}]),
    ),
    max_size=8,
)


def _apply(defn: Definition, snap: Snapshot, op: tuple[str, str, dict[str, Any]]) -> StepResult:
    kind, event, payload = op
    if kind == "signal":
        return signal(defn, snap, event, payload)
    if kind == "resume":
        return resume(defn, snap, event, {"n": 1} if payload else {})
    return cancel(defn, snap, "test")


def _run(defn: Definition, ops: list[tuple[str, str, dict[str, Any]]]) -> list[object]:
    """Trace of every outcome: results or (error class, reason)."""
    first = start(defn, "w", {})
    trace: list[object] = [first]
    snap = first.snapshot
    for op in ops:
        try:
            result = _apply(defn, snap, op)
        except StatewrightError as exc:
            trace.append((type(exc).__name__, exc.reason, dict(exc.metadata)))
            continue
        trace.append(result)
        snap = result.snapshot
    return trace


@SETTINGS
@given(definitions(), operations)
def test_same_inputs_same_outputs(
    defn: Definition, ops: list[tuple[str, str, dict[str, Any]]]
) -> None:
    assert _run(defn, ops) == _run(defn, ops)


@SETTINGS
@given(definitions(), operations)
def test_steps_respect_limit_and_types(
    defn: Definition, ops: list[tuple[str, str, dict[str, Any]]]
) -> None:
    for item in _run(defn, ops):
        if not isinstance(item, StepResult):
            continue
        assert len(item.transitions) <= defn.recursion_limit
        if item.status is Status.FAILED:
            assert item.error is not None
        context = item.snapshot.context
        assert set(context) == set(defn.context_fields)
        for name, field in defn.context_fields.items():
            try:
                conform(context[name], field.type, nullable=field.nullable)
            except ValueTypeError as exc:  # pragma: no cover - the failure message
                raise AssertionError(f"{name}={context[name]!r}: {exc}") from None
            if field.type.value == "number" and context[name] is not None:
                assert isinstance(context[name], float)


@SETTINGS
@given(definitions(), operations, operations)
def test_terminal_statuses_absorb_every_event(
    defn: Definition,
    ops: list[tuple[str, str, dict[str, Any]]],
    more: list[tuple[str, str, dict[str, Any]]],
) -> None:
    snap = start(defn, "w", {}).snapshot
    for op in [*ops, ("cancel", "", {})]:
        if snap.status in TERMINAL:
            break
        with contextlib.suppress(StatewrightError):
            snap = _apply(defn, snap, op).snapshot
    assert snap.status in TERMINAL
    for op in more:
        try:
            _apply(defn, snap, op)
        except FailedPrecondition:
            continue
        raise AssertionError(f"{op} was not refused on a {snap.status} instance")
