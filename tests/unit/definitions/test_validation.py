"""One table row per validation error class, asserting the exact path reported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from statewrightd.definitions import (
    DefinitionInvalid,
    load_definition,
    to_dot,
    to_mermaid,
    validate_source,
)
from statewrightd.definitions.commands import validate_command
from statewrightd.definitions.parsing import parse_document

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "definitions"

BASE = """
name: t
version: 1
context:
  approved: {type: bool, default: false}
  score: {type: number}
  notes: {type: list, reducer: append, default: []}
states:
  a: {}
  b: {wait: true}
  send: {}
transitions:
  - {from: a, to: b}
  - {from: b, on: go, to: send}
  - {from: send, to: __finish__}
"""


def _with(**changes: object) -> str:
    doc: Any = parse_document(BASE)[0]
    for dotted, value in changes.items():
        target: Any = doc
        *parents, last = dotted.split("__")
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
    return json.dumps(doc)


ERROR_CASES = [
    ("no states", _with(states={}, transitions=[]), "states"),
    (
        "unknown from",
        _with(transitions__1={"from": "zz", "on": "go", "to": "send"}),
        "transitions[1].from",
    ),
    ("unknown to", _with(transitions__2={"from": "send", "to": "nowhere"}), "transitions[2].to"),
    (
        "set on undeclared field",
        _with(states__send={"entry": [{"set": {"missing": "true"}}]}),
        "states.send.entry[0].set.missing",
    ),
    (
        "default of wrong type",
        _with(context__score={"type": "number", "default": "x"}),
        "context.score.default",
    ),
    (
        "CEL does not compile",
        _with(transitions__2={"from": "send", "to": "__finish__", "guard": "1 +"}),
        "transitions[2].guard",
    ),
    (
        "guard not bool",
        _with(transitions__2={"from": "send", "to": "__finish__", "guard": "1 + 2"}),
        "transitions[2].guard",
    ),
    (
        "set value does not fit the field",
        _with(states__send={"entry": [{"set": {"approved": "'yes'"}}]}),
        "states.send.entry[0].set.approved",
    ),
    (
        "unknown context field in CEL",
        _with(transitions__2={"from": "send", "to": "__finish__", "guard": "context.nope"}),
        "transitions[2].guard",
    ),
    (
        "wait state with no event",
        _with(transitions__1={"from": "b", "to": "send"}),
        "states.b.wait",
    ),
    ("reserved state name", _with(states={"__finish__": {}}, transitions=[]), "states.__finish__"),
    (
        "reserved event name",
        _with(transitions__1={"from": "b", "on": "resume", "to": "send"}),
        "transitions[1].on",
    ),
    ("reserved field name", _with(context={"in": {"type": "int", "default": 0}}), "context.in"),
    ("bad name", _with(name="Bad Name"), "name"),
    ("bad version", _with(version=0), "version"),
    ("unknown type", _with(context__score={"type": "float"}), "context.score.type"),
    (
        "reducer does not fit type",
        _with(context__score={"type": "number", "reducer": "merge"}),
        "context.score.reducer",
    ),
    ("unknown key", _with(states__a={"wiat": True}), "states.a.wiat"),
    ("unknown initial", _with(initial="zz"), "initial"),
]


@pytest.mark.parametrize(("case", "source", "path"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_each_error_class_is_reported_at_its_path(case: str, source: str, path: str) -> None:
    definition, problems = validate_source(source, case)
    assert definition is None
    errors = [p for p in problems if p.severity == "error"]
    assert path in [p.path for p in errors], problems


def test_base_is_valid() -> None:
    definition, problems = validate_source(BASE)
    assert definition is not None
    assert problems == []


def test_every_problem_is_reported_at_once() -> None:
    source = _with(
        transitions__0={"from": "a", "to": "nowhere"},
        transitions__2={"from": "send", "to": "__finish__", "guard": "1"},
        context__score={"type": "number", "default": "x"},
    )
    with pytest.raises(DefinitionInvalid) as info:
        load_definition(source)
    paths = {p.path for p in info.value.problems}
    assert {"transitions[0].to", "transitions[2].guard", "context.score.default"} <= paths
    assert info.value.reason == "DEFINITION_INVALID"


def test_unreachable_state_is_a_warning() -> None:
    source = BASE.replace("  send: {}\n", "  send: {}\n  orphan: {}\n")
    definition, problems = validate_source(source)
    assert definition is not None
    assert [(p.path, p.severity) for p in problems] == [("states.orphan", "warning")]


def test_duplicate_yaml_key_is_an_error() -> None:
    source = BASE.replace("  send: {}\n", "  send: {}\n  a: {}\n")
    definition, problems = validate_source(source)
    assert definition is None
    assert any("'a' is repeated" in p.message for p in problems)


def test_on_is_a_string_key_not_a_yaml_bool() -> None:
    definition = load_definition(BASE)
    assert definition.events() == ("go",)
    assert definition.events_from("b") == ("go",)
    assert definition.events_from("a") == ()


def test_digest_ignores_format_but_not_content() -> None:
    as_yaml = load_definition(BASE)
    as_json = load_definition(_with())
    assert as_yaml.digest == as_json.digest
    changed = load_definition(_with(recursion_limit=3))
    assert changed.digest != as_yaml.digest


def test_definition_is_immutable() -> None:
    definition = load_definition(BASE)
    with pytest.raises(AttributeError):
        definition.name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        definition.states["x"] = definition.states["a"]  # type: ignore[index]
    assert definition.recursion_limit == 25
    assert definition.initial == "a"
    assert list(definition.states) == ["a", "b", "send"]


def test_graphs_show_wait_states_events_and_guards() -> None:
    definition = load_definition(
        BASE.replace(
            "{from: b, on: go, to: send}", "{from: b, on: go, to: send, guard: 'context.approved'}"
        )
    )
    mermaid = to_mermaid(definition)
    assert "(wait)" in mermaid and "s_b --> s_send : go [context.approved]" in mermaid
    assert "s_send --> [*]" in mermaid
    dot = to_dot(definition)
    assert "octagon" in dot and 'label="go [context.approved]"' in dot and "style=dashed" in dot


def test_validate_command_on_examples_and_broken_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert validate_command([str(EXAMPLES)]) == 0
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        _with(
            transitions__0={"from": "a", "to": "nowhere"},
            context__score={"type": "number", "default": "x"},
        )
    )
    assert validate_command([str(broken)]) == 1
    err = capsys.readouterr().err
    assert f"{broken}: error: transitions[0].to:" in err
    assert f"{broken}: error: context.score.default:" in err


# -- timer transitions --------------------------------------------------------------------------

TIMER_ERROR_CASES = [
    ("non-positive duration", {"from": "b", "after": "0s", "to": "send"}, "after"),
    ("duration without a unit", {"from": "b", "after": 30, "to": "send"}, "after"),
    ("unparseable duration", {"from": "b", "after": "5 minutes", "to": "send"}, "after"),
    ("after with on", {"from": "b", "on": "go", "after": "5s", "to": "send"}, "after"),
    (
        "after_expr of the wrong type",
        {"from": "b", "after_expr": "1 + 1", "to": "send"},
        "after_expr",
    ),
    (
        "after and after_expr together",
        {"from": "b", "after": "5s", "after_expr": "duration('5s')", "to": "send"},
        "after_expr",
    ),
]


@pytest.mark.parametrize(
    ("case", "transition", "key"), TIMER_ERROR_CASES, ids=[c[0] for c in TIMER_ERROR_CASES]
)
def test_each_timer_error_is_reported_at_its_path(
    case: str, transition: dict[str, object], key: str
) -> None:
    doc: Any = parse_document(BASE)[0]
    doc["transitions"].append(transition)
    _, problems = validate_source(json.dumps(doc))
    errors = [p for p in problems if p.severity == "error"]
    assert [p.path for p in errors] == [f"transitions[3].{key}"], (case, problems)


def test_durations_and_timer_graph_labels() -> None:
    doc = _with(transitions__1={"from": "b", "after": "1h30m", "to": "send"})
    defn = load_definition(doc)
    (timer,) = defn.timed_from["b"]
    assert timer.after is not None and timer.after.seconds == 5400
    assert "after 1h30m" in to_mermaid(defn) and "after 1h30m" in to_dot(defn)


def test_a_wait_state_may_leave_by_a_timer_only() -> None:
    definition, problems = validate_source(
        _with(transitions__1={"from": "b", "after": "500ms", "to": "send"})
    )
    assert definition is not None, problems
    assert definition.kinds["b"].value == "wait"


def test_a_second_unguarded_timer_with_the_same_delay_is_a_warning() -> None:
    doc: Any = parse_document(BASE)[0]
    doc["transitions"][1:2] = [
        {"from": "b", "on": "go", "to": "send"},
        {"from": "b", "after": "5m", "to": "send"},
        {"from": "b", "after": "300s", "to": "a"},
    ]
    definition, problems = validate_source(json.dumps(doc))
    assert definition is not None
    warnings = [p for p in problems if p.severity == "warning"]
    assert [p.path for p in warnings] == ["transitions[3]"], problems


def test_a_timer_from_a_state_with_automatic_transitions_never_fires() -> None:
    doc: Any = parse_document(BASE)[0]
    doc["transitions"].append({"from": "a", "after": "5s", "to": "send"})
    _, problems = validate_source(json.dumps(doc))
    assert [p.path for p in problems if p.severity == "warning"] == ["transitions[3]"]


def test_timers_leave_the_digest_of_definitions_without_them_alone() -> None:
    # The digest BASE had before timer transitions existed: a recorded definition without
    # timers needs no new version after an upgrade.
    assert load_definition(BASE).digest == (
        "bf23637bf7a9720c20e83a15ed07a8c6efdadbde973c634484c0ffbf03ab02f3"
    )
    with_timer = _with(transitions__1={"from": "b", "after": "5s", "to": "send"})
    assert load_definition(with_timer).digest != load_definition(BASE).digest


def _tasked(task: object, **state: object) -> Any:
    doc: Any = parse_document(BASE)[0]
    doc["states"]["a"] = {"task": task, **state}
    return doc


TASK_ERROR_CASES = [
    ("task not a map", "payments", "states.a.task"),
    ("missing queue", {"input": "{'x': 1}"}, "states.a.task.queue"),
    ("bad queue", {"queue": "Pay Ments"}, "states.a.task.queue"),
    ("input not a map", {"queue": "q", "input": "'text'"}, "states.a.task.input"),
    ("unknown key", {"queue": "q", "retries": 3}, "states.a.task.retries"),
    (
        "apply on an undeclared field",
        {"queue": "q", "apply": {"nope": "result.x"}},
        "states.a.task.apply.nope",
    ),
    (
        "apply of the wrong type",
        {"queue": "q", "apply": {"approved": "'yes'"}},
        "states.a.task.apply.approved",
    ),
    (
        "timeout not positive",
        {"queue": "q", "timeouts": {"start_to_close": "0s"}},
        "states.a.task.timeouts.start_to_close",
    ),
    (
        "timeout not a duration",
        {"queue": "q", "timeouts": {"heartbeat": "soon"}},
        "states.a.task.timeouts.heartbeat",
    ),
    (
        "unknown timeout",
        {"queue": "q", "timeouts": {"forever": "1s"}},
        "states.a.task.timeouts.forever",
    ),
    (
        "attempts not positive",
        {"queue": "q", "retry": {"max_attempts": 0}},
        "states.a.task.retry.max_attempts",
    ),
    ("backoff below 1", {"queue": "q", "retry": {"backoff": 0.5}}, "states.a.task.retry.backoff"),
    (
        "non_retryable not a list",
        {"queue": "q", "retry": {"non_retryable": "X"}},
        "states.a.task.retry.non_retryable",
    ),
]


@pytest.mark.parametrize(
    ("case", "task", "path"), TASK_ERROR_CASES, ids=[c[0] for c in TASK_ERROR_CASES]
)
def test_each_task_error_is_reported_at_its_path(case: str, task: object, path: str) -> None:
    _, problems = validate_source(json.dumps(_tasked(task)))
    errors = [p for p in problems if p.severity == "error"]
    assert [p.path for p in errors] == [path], (case, problems)


def test_a_task_state_cannot_be_a_wait_state() -> None:
    _, problems = validate_source(json.dumps(_tasked({"queue": "q"}, wait=True)))
    assert [p.path for p in problems if p.severity == "error"] == ["states.a.wait"]


def test_a_task_state_with_no_way_out_is_a_warning() -> None:
    doc = _tasked({"queue": "q"})
    doc["transitions"][0] = {"from": "b", "on": "back", "to": "a"}  # nothing leaves `a`
    doc["initial"] = "a"
    definition, problems = validate_source(json.dumps(doc))
    assert definition is not None, problems
    warnings = [p for p in problems if p.severity == "warning"]
    way_out = [p for p in warnings if p.path == "states.a.task"]
    assert len(way_out) == 1 and "no way out" in way_out[0].message, problems


def test_task_failed_only_from_a_task_state_and_task_completed_never() -> None:
    doc: Any = parse_document(BASE)[0]
    doc["transitions"].append({"from": "b", "on": "task_failed", "to": "send"})
    doc["transitions"].append({"from": "b", "on": "task_completed", "to": "send"})
    _, problems = validate_source(json.dumps(doc))
    errors = [p.path for p in problems if p.severity == "error"]
    assert sorted(errors) == ["transitions[3].on", "transitions[4].on"], problems


def test_result_is_readable_in_apply_only() -> None:
    doc = _tasked({"queue": "q", "apply": {"notes": "string(result.id)"}})
    assert validate_source(json.dumps(doc))[0] is not None
    doc["states"]["a"]["entry"] = [{"set": {"notes": "string(result.id)"}}]
    _, problems = validate_source(json.dumps(doc))
    assert [p.path for p in problems if p.severity == "error"] == ["states.a.entry[0].set.notes"]


def test_graphs_mark_task_states_and_their_queues() -> None:
    defn = load_definition(json.dumps(_tasked({"queue": "payments"})))
    assert "(task on payments)" in to_mermaid(defn) and "class s_a task" in to_mermaid(defn)
    assert "(task on payments)" in to_dot(defn)


def test_tasks_leave_the_digest_of_definitions_without_them_alone() -> None:
    with_task = json.dumps(_tasked({"queue": "q"}))
    assert load_definition(with_task).digest != load_definition(BASE).digest


def test_retention_is_a_duration_or_forever_and_part_of_the_content() -> None:
    import math

    plain = load_definition(BASE)
    assert plain.retention is None
    kept = load_definition("retention: 12h\n" + BASE)
    assert kept.retention == 12 * 3600
    assert load_definition("retention: forever\n" + BASE).retention == math.inf
    assert kept.digest != plain.digest
    assert load_definition("retention: 720m\n" + BASE).digest == kept.digest


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("soon", "retention must be a duration such as 30d, 12h or 90m, or forever"),
        ("12", "retention must be a duration such as 30d, 12h or 90m, or forever"),
        ("500ms", "retention must be at least 1s"),
        ("3651d", "retention must be at most 3650d (or forever)"),
    ],
)
def test_bad_retention_is_reported_at_its_path(value: str, message: str) -> None:
    definition, problems = validate_source(f"retention: {value!r}\n" + BASE)
    assert definition is None
    assert [(p.path, p.message) for p in problems] == [("retention", message)]
