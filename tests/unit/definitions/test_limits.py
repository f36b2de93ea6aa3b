"""The limits on a definition's size, each refused with its reason before anything else."""

from __future__ import annotations

import pytest

from statewrightd.definitions import validate_source
from statewrightd.definitions.limits import (
    MAX_CONTEXT_FIELDS,
    MAX_DEFINITION_BYTES,
    MAX_EXPRESSION_LENGTH,
    MAX_EXPRESSIONS,
    MAX_STATES,
    MAX_TRANSITIONS,
)
from statewrightd.definitions.parsing import MAX_VALUES


def _chain(states: int, *, guard: str = "", fields: int = 1) -> str:
    lines = ["name: big", "version: 1", "context:"]
    lines += [f"  f{i}: {{type: int, default: 0}}" for i in range(fields)]
    lines.append("states:")
    lines += [f"  s{i}: {{}}" for i in range(states)]
    lines.append("transitions:")
    lines += [f"  - {{from: s{i}, to: s{i + 1}{guard.format(i=i)}}}" for i in range(states - 1)]
    return "\n".join(lines) + "\n"


def _errors(source: str | bytes) -> list[tuple[str, str]]:
    definition, problems = validate_source(source)
    found = [(p.path, p.message) for p in problems if p.severity == "error"]
    assert definition is None or not found
    return found


def test_a_definition_at_the_state_limit_is_accepted() -> None:
    assert _errors(_chain(MAX_STATES)) == []


def test_more_states_than_the_limit_are_refused_with_the_limit_and_nothing_else() -> None:
    assert _errors(_chain(MAX_STATES + 1)) == [
        ("states", f"{MAX_STATES + 1:,} states, more than the limit of {MAX_STATES:,}")
    ]


def test_more_transitions_than_the_limit_are_refused() -> None:
    lines = ["name: t", "version: 1", "states:", "  a: {}", "  b: {}", "transitions:"]
    lines += ["  - {from: a, on: go, to: b}"] * (MAX_TRANSITIONS + 1)
    (error,) = _errors("\n".join(lines))
    assert error[0] == "transitions"
    assert f"limit of {MAX_TRANSITIONS:,}" in error[1]


def test_more_context_fields_than_the_limit_are_refused() -> None:
    (error,) = _errors(_chain(2, fields=MAX_CONTEXT_FIELDS + 1))
    assert error == (
        "context",
        f"{MAX_CONTEXT_FIELDS + 1:,} context fields, more than the limit of {MAX_CONTEXT_FIELDS:,}",
    )


def test_a_definition_over_the_byte_limit_is_refused_before_it_is_parsed() -> None:
    source = _chain(3) + "# " + "x" * MAX_DEFINITION_BYTES + "\n"
    (error,) = _errors(source.encode())
    assert error[0] == ""
    assert f"more than the limit of {MAX_DEFINITION_BYTES:,}" in error[1]


def test_more_expressions_than_the_limit_are_refused_once() -> None:
    source = _chain(MAX_STATES, guard=", guard: 'context.f0 > {i}'", fields=2)
    entry = "entry: [{set: {f0: 'context.f0 + 1', f1: 'context.f1 + 1'}}]"
    for i in range(MAX_STATES):
        source = source.replace(f"  s{i}: {{}}\n", f"  s{i}: {{{entry}}}\n")
    errors = _errors(source)
    assert len(errors) == 1, errors
    assert f"more than {MAX_EXPRESSIONS:,} expressions" in errors[0][1]


def test_an_expression_longer_than_the_limit_is_refused() -> None:
    long = " + ".join(["context.f0"] * (MAX_EXPRESSION_LENGTH // 13 + 1))
    (error,) = _errors(_chain(2, guard=", guard: '" + long + " > {i}'"))
    assert error[0] == "transitions[0].guard"
    assert f"limit of {MAX_EXPRESSION_LENGTH:,}" in error[1]


def test_a_document_of_too_many_values_is_refused_without_being_read_to_its_end() -> None:
    values = ", ".join(["1"] * 1000)
    source = _chain(2) + "extra:\n" + f"  - [{values}]\n" * (MAX_VALUES // 1000 + 1)
    assert _errors(source) == [
        ("", f"the definition holds more than {MAX_VALUES:,} values, the limit")
    ]


@pytest.mark.parametrize("depth", [8, 30])
def test_yaml_aliases_count_as_often_as_they_are_used(depth: int) -> None:
    """A few lines of anchors and aliases can stand for billions of values."""
    value = "&a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"
    for level in range(1, depth):
        value = f"&a{level} [{value}, " + ", ".join([f"*a{level - 1}"] * 9) + "]"
    source = _chain(2).replace(
        "  f0: {type: int, default: 0}", f"  f0: {{type: any, default: {value}}}"
    )
    assert _errors(source) == [
        ("", f"the definition holds more than {MAX_VALUES:,} values, the limit")
    ]


def test_thousands_of_mistakes_are_all_reported_without_a_search_for_each() -> None:
    lines = ["name: t", "version: 1", "states:"]
    lines += [f"  state{i}: {{}}" for i in range(MAX_STATES)]
    lines.append("transitions:")
    lines += [f"  - {{from: state{i % MAX_STATES}, to: stat{i}}}" for i in range(MAX_TRANSITIONS)]
    errors = _errors("\n".join(lines))
    assert len(errors) == MAX_TRANSITIONS
    assert errors[0][1] == "unknown state 'stat0'; did you mean 'state0'?"
    assert errors[-1][1] == f"unknown state 'stat{MAX_TRANSITIONS - 1}'"
