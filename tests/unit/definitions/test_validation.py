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
    ("priority a string", {"queue": "q", "priority": "'high'"}, "states.a.task.priority"),
    ("priority out of range", {"queue": "q", "priority": 7}, "states.a.task.priority"),
    ("priority not CEL", {"queue": "q", "priority": "1 +"}, "states.a.task.priority"),
    ("key an int", {"queue": "q", "concurrency_key": "42"}, "states.a.task.concurrency_key"),
]


def test_priority_and_concurrency_key_take_cel() -> None:
    task = {"queue": "q", "priority": "context.approved ? 1 : 3", "concurrency_key": "'c-' + 'x'"}
    _, problems = validate_source(json.dumps(_tasked(task)))
    assert [p for p in problems if p.severity == "error"] == []
    _, problems = validate_source(json.dumps(_tasked({"queue": "q", "priority": 2})))
    assert [p for p in problems if p.severity == "error"] == []


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


# -- one mistake, one problem -------------------------------------------------------------------


def _renamed(key: str, misspelt: str, **changes: object) -> str:
    doc = json.loads(_with(**changes))
    doc[misspelt] = doc.pop(key)
    return json.dumps(doc)


ONE_MISTAKE = [
    (
        "a misspelt type, with a set on the field and a guard reading it",
        _with(
            context__score={"type": "numbr"},
            states__send={"entry": [{"set": {"score": "1.5"}}]},
            transitions__1={"from": "b", "on": "go", "to": "send", "guard": "context.score > 1.0"},
        ),
        "context.score.type",
    ),
    (
        "a field with a misspelt key, set with a value its reducer would take",
        _with(
            context__notes={"type": "list", "reducr": "append", "default": []},
            states__send={"entry": [{"set": {"notes": "'one more'"}}]},
        ),
        "context.notes.reducr",
    ),
    (
        "a field with a bad name, set",
        _with(
            context__Total={"type": "int", "default": 0},
            states__send={"entry": [{"set": {"Total": "1"}}]},
        ),
        "context.Total",
    ),
    (
        "an unknown target: its closest state is not unreachable",
        _with(transitions__1={"from": "b", "on": "go", "to": "sned"}),
        "transitions[1].to",
    ),
    (
        "an unknown source: the state it meant still has a way out",
        _with(transitions__1={"from": "bb", "on": "go", "to": "send"}),
        "transitions[1].from",
    ),
    (
        "a guard that does not compile on a wait state's only exit",
        _with(transitions__1={"from": "b", "on": "go", "to": "send", "guard": "1 +"}),
        "transitions[1].guard",
    ),
    (
        "a reserved event on a wait state's only exit",
        _with(transitions__1={"from": "b", "on": "resume", "to": "send"}),
        "transitions[1].on",
    ),
    (
        "a misspelt guard before an unguarded transition: not 'never evaluated'",
        _with(
            transitions__2={"from": "send", "to": "__finish__", "gaurd": "context.approved"},
            transitions=[
                {"from": "a", "to": "b"},
                {"from": "b", "on": "go", "to": "send"},
                {"from": "send", "to": "__finish__", "gaurd": "context.approved"},
                {"from": "send", "to": "a"},
            ],
        ),
        "transitions[2].gaurd",
    ),
    (
        "a misspelt required key",
        _with(transitions__0={"form": "a", "to": "b"}),
        "transitions[0].form",
    ),
    ("a misspelt `transitions`", _renamed("transitions", "transitons"), "transitons"),
    (
        "a misspelt `context`",
        _renamed("context", "contxt", states__send={"entry": [{"set": {"approved": "true"}}]}),
        "contxt",
    ),
    ("context that is not a map", _with(context=["approved"]), "context"),
    ("states that are not a map", _with(states=["a", "b", "send"]), "states"),
    ("a misspelt `states`", _renamed("states", "sates"), "sates"),
    ("a misspelt `initial`", _with(inital="b"), "inital"),
    (
        "a reserved state name used by a transition",
        _with(
            states={"a": {}, "b": {"wait": True}, "__send": {}},
            transitions__1={"from": "b", "on": "go", "to": "__send"},
            transitions__2={"from": "__send", "to": "__finish__"},
        ),
        "states.__send",
    ),
    (
        "a transition that is not a map",
        _with(transitions__1="b -> send"),
        "transitions[1]",
    ),
    (
        "a misspelt task key, with a task_failed transition",
        _with(
            states__a={"tsak": {"queue": "q"}},
            transitions__0={"from": "a", "on": "task_failed", "to": "b"},
        ),
        "states.a.tsak",
    ),
    (
        "a refused task, with a task_failed transition",
        _with(
            states__a={"task": {"queue": "Q!"}},
            transitions__0={"from": "a", "on": "task_failed", "to": "b"},
        ),
        "states.a.task.queue",
    ),
    (
        "wait: yes, with guarded automatic transitions",
        _with(
            states__b={"wait": "yes"},
            transitions__1={"from": "b", "to": "send", "guard": "true && context.approved"},
        ),
        "states.b.wait",
    ),
]


ONE_MISTAKE.append(
    (
        "a repeated `states`, whose first states the transitions use",
        BASE.replace("transitions:", "states:\n  other: {}\ntransitions:"),
        "states",
    )
)


@pytest.mark.parametrize(("case", "source", "path"), ONE_MISTAKE, ids=[c[0] for c in ONE_MISTAKE])
def test_one_mistake_reports_one_problem(case: str, source: str, path: str) -> None:
    definition, problems = validate_source(source, case)
    assert definition is None
    assert [(p.severity, p.path) for p in problems] == [("error", path)], problems


def test_the_skipped_checks_run_again_once_the_mistake_is_fixed() -> None:
    # The refused transition was the wait state's only exit: fixed, the state is judged.
    broken = _with(transitions__1={"from": "b", "on": "go", "to": "send", "guard": "1 +"})
    assert [p.path for p in validate_source(broken)[1]] == ["transitions[1].guard"]
    fixed = _with(transitions__1={"from": "b", "to": "send"})
    assert "states.b.wait" in [p.path for p in validate_source(fixed)[1]]


def test_independent_mistakes_are_each_reported() -> None:
    source = _with(
        context__score={"type": "numbr"},
        transitions__1={"from": "b", "on": "go", "to": "sned"},
        states__send={"entry": [{"set": {"scor": "1.5"}}]},
    )
    _, problems = validate_source(source)
    assert [p.path for p in problems] == [
        "context.score.type",
        "states.send.entry[0].set.scor",
        "transitions[1].to",
    ]


# -- did you mean -------------------------------------------------------------------------------

HINTS = [
    (
        "top-level key",
        _with(recursion_limt=5),
        "unknown key 'recursion_limt'; did you mean 'recursion_limit'?",
    ),
    ("state key", _with(states__a={"wiat": True}), "unknown key 'wiat'; did you mean 'wait'?"),
    (
        "field key",
        _with(context__score={"type": "number", "defualt": 1.0}),
        "did you mean 'default'?",
    ),
    (
        "transition key, a swap",
        _with(transitions__0={"from": "a", "ot": "b"}),
        "unknown key 'ot'; did you mean 'to'?",
    ),
    (
        "task key",
        json.dumps(_tasked({"queue": "q", "retyr": {}})),
        "unknown key 'retyr'; did you mean 'retry'?",
    ),
    (
        "retry key",
        json.dumps(_tasked({"queue": "q", "retry": {"max_attemps": 2}})),
        "did you mean 'max_attempts'?",
    ),
    ("type", _with(context__score={"type": "nubmer"}), "any; did you mean 'number'?"),
    (
        "reducer",
        _with(context__notes={"type": "list", "reducer": "apend"}),
        "did you mean 'append'?",
    ),
    (
        "target state",
        _with(transitions__0={"from": "a", "to": "B"}),
        "unknown state 'B'; did you mean 'b'?",
    ),
    (
        "finish",
        _with(transitions__2={"from": "send", "to": "__finsh__"}),
        "did you mean '__finish__'?",
    ),
    (
        "source state",
        _with(transitions__2={"from": "snd", "to": "__finish__"}),
        "did you mean 'send'?",
    ),
    ("initial state", _with(initial="sedn"), "is not a declared state; did you mean 'send'?"),
    (
        "set on a field",
        _with(states__send={"entry": [{"set": {"aproved": "true"}}]}),
        "set on undeclared context field 'aproved'; did you mean 'approved'?",
    ),
    (
        "field in an expression",
        _with(transitions__2={"from": "send", "to": "__finish__", "guard": "context.aproved"}),
        "(at 1:8); did you mean 'context.approved'?",
    ),
    (
        "event variable",
        _with(transitions__2={"from": "send", "to": "__finish__", "guard": "evnt.name == 'x'"}),
        "did you mean 'event.name'?",
    ),
    (
        "several names in one expression",
        _with(
            transitions__2={
                "from": "send",
                "to": "__finish__",
                "guard": "context.aproved && context.scor > 1.0",
            }
        ),
        "did you mean 'context.approved' for 'context.aproved'?; "
        "did you mean 'context.score' for 'context.scor'?",
    ),
]


@pytest.mark.parametrize(("case", "source", "hint"), HINTS, ids=[c[0] for c in HINTS])
def test_a_misspelt_name_gets_a_hint(case: str, source: str, hint: str) -> None:
    _, problems = validate_source(source, case)
    assert any(hint in p.message for p in problems), problems


def test_names_unlike_any_get_no_hint() -> None:
    _, problems = validate_source(_with(transitions__0={"from": "a", "to": "xylophone"}))
    assert [p.message for p in problems] == ["unknown state 'xylophone'"]
    _, problems = validate_source(_with(states__a={"colour": "red"}))
    assert [p.message for p in problems] == ["unknown key 'colour'"]


def test_a_key_already_present_is_not_suggested() -> None:
    # `gaurd` is next to a `guard`: it is not that one misspelt, so no hint names it.
    _, problems = validate_source(
        _with(transitions__2={"from": "send", "to": "__finish__", "guard": "true", "gaurd": "x"})
    )
    assert [p.message for p in problems] == ["unknown key 'gaurd'"]


# -- syntax errors at their place ---------------------------------------------------------------

BROKEN_YAML = 'name: broken\nversion: 1\nstates:\n  start: {entry: [{set: {a: "1"}}\n'


def test_a_yaml_syntax_error_has_its_line_column_and_text() -> None:
    (problem,) = validate_source(BROKEN_YAML)[1]
    assert (problem.line, problem.column) == (4, 18)
    assert problem.excerpt == '  start: {entry: [{set: {a: "1"}}'
    assert "<unicode string>" not in problem.message
    assert problem.message == (
        "not valid YAML: expected ',' or ']', but got '<stream end>' (while parsing a flow "
        "sequence)"
    )
    assert problem.render("f.yaml").splitlines() == [
        f"f.yaml:4:18: error: <document>: {problem.message}",
        '      start: {entry: [{set: {a: "1"}}',
        "                     ^",
    ]


def test_a_yaml_error_inside_the_text_points_at_its_own_line() -> None:
    (problem,) = validate_source("name: x\nstates:\n  a: {}\n b: {}\n")[1]
    assert (problem.line, problem.column, problem.excerpt) == (4, 2, " b: {}")
    assert "(while parsing a block mapping that starts at line 1)" in problem.message


def test_a_json_syntax_error_has_its_line_column_and_text() -> None:
    (problem,) = validate_source('{"name": "x",\n "version": }')[1]
    assert (problem.line, problem.column, problem.excerpt) == (2, 13, ' "version": }')
    assert problem.message == "not valid JSON: Expecting value"


def test_a_repeated_yaml_key_has_its_place() -> None:
    problems = validate_source(BASE.replace("  send: {}\n", "  send: {}\n  a: {}\n"))[1]
    (repeated,) = [p for p in problems if "repeated" in p.message]
    assert (repeated.line, repeated.column) == (12, 3)  # BASE begins with an empty line


def test_validate_prints_the_place_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(BROKEN_YAML)
    assert validate_command([str(broken)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{broken}:4:18: error: <document>: not valid YAML: ")
    assert err[1:] == ['      start: {entry: [{set: {a: "1"}}', "                     ^"]


# -- guarded exits with no fallback -------------------------------------------------------------


def _guarded(*transitions: dict[str, object], **states: object) -> list[tuple[str, str]]:
    doc: Any = parse_document(BASE)[0]
    doc["states"].update(states)
    doc["transitions"] = [
        {"from": "a", "to": "b"},
        {"from": "b", "on": "go", "to": "send"},
        *transitions,
    ]
    definition, problems = validate_source(json.dumps(doc))
    assert definition is not None, problems
    return [(p.path, p.message) for p in problems if p.severity == "warning"]


def test_a_state_whose_automatic_transitions_are_all_guarded_is_warned() -> None:
    warnings = _guarded(
        {"from": "send", "to": "__finish__", "guard": "context.approved"},
        {"from": "send", "to": "a", "guard": "!context.approved && size(context.notes) > 3"},
    )
    assert warnings == [
        (
            "states.send",
            "every automatic transition from 'send' has a guard: when none is true on entering "
            "it, the instance fails with NO_TRANSITION_MATCHED; end with one that has no guard",
        )
    ]


@pytest.mark.parametrize(
    "fallback",
    [{"from": "send", "to": "a"}, {"from": "send", "to": "a", "guard": "true"}],
    ids=["no guard", "guard true"],
)
def test_a_fallback_silences_the_warning(fallback: dict[str, object]) -> None:
    assert (
        _guarded({"from": "send", "to": "__finish__", "guard": "context.approved"}, fallback) == []
    )


def test_a_task_state_whose_automatic_transitions_are_all_guarded_is_warned() -> None:
    warnings = _guarded(
        {"from": "send", "to": "__finish__", "guard": "context.approved"},
        send={"task": {"queue": "q", "apply": {"approved": "result.ok == true"}}},
    )
    assert [path for path, _ in warnings] == ["states.send"]
    assert "after its task's result" in warnings[0][1]


def test_guarded_events_and_timers_need_no_fallback() -> None:
    # A wait state and a state left by events or timers never fail for want of a match.
    assert (
        _guarded(
            {"from": "send", "on": "done", "to": "__finish__", "guard": "context.approved"},
            {"from": "send", "after": "1h", "to": "a", "guard": "context.approved"},
            {"from": "b", "on": "stop", "to": "__finish__", "guard": "context.approved"},
        )
        == []
    )


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
