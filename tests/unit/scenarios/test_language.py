"""Scenario files: what is read from them, and every problem found in one, with its path."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from statewrightd.scenarios.language import (
    Advance,
    Cancel,
    Catalog,
    Complete,
    Fail,
    Resume,
    Signal,
    Start,
    Task,
    Timeout,
    read_scenario_file,
)


def read(project: Path, text: str, name: str = "ticket.test.yaml") -> tuple[list[str], list]:  # type: ignore[type-arg]
    path = project / name
    path.write_text(textwrap.dedent(text))
    found = read_scenario_file(path, Catalog())
    return [p.render(name) for p in found.problems], list(found.scenarios)


def test_each_step_kind_reads_into_its_action(project: Path) -> None:
    problems, (scenario,) = read(
        project,
        """
        clock: 2030-01-02T03:04:05Z
        scenarios:
          - name: all of them
            steps:
              - start: {workflow_id: w1, input: {n: 2}}
              - resume: {event: go, input: {flag: true}}
              - signal: {event: poke, payload: {hard: true}}
              - task: {queue: work, input: {n: 2}, complete: {note: a}}
              - task:
                  queue: work
                  fail: {type: X, message: m, non_retryable: true, retry_after: 5s}
              - task: {queue: work, timeout: true}
              - advance: 1h30m
              - cancel: {reason: done}
        """,
    )
    assert problems == []
    assert scenario.clock == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert scenario.workflow_id == "w1"
    actions = [s.action for s in scenario.steps]
    assert actions == [
        Start({"n": 2}, "w1"),
        Resume("go", {"flag": True}),
        Signal("poke", {"hard": True}),
        Task("work", Complete({"note": "a"}), {"n": 2}),
        Task("work", Fail("X", "m", {}, True, timedelta(seconds=5))),
        Task("work", Timeout()),
        Advance(timedelta(hours=1, minutes=30), "1h30m"),
        Cancel("done"),
    ]
    assert [s.text for s in scenario.steps] == [
        "start",
        "resume go",
        "signal poke",
        "task work complete",
        "task work fail",
        "task work timeout",
        "advance 1h30m",
        "cancel",
    ]
    assert [s.line for s in scenario.steps] == [6, 7, 8, 9, 10, 13, 14, 15]


def test_short_forms(project: Path) -> None:
    problems, (scenario,) = read(
        project,
        """
        scenarios:
          - steps:
              - start:
              - resume:
              - signal: poke
              - task: {queue: work, fail: BOOM}
              - cancel: why
        """,
    )
    assert problems == []
    assert scenario.name == "scenario 1"
    assert [s.action for s in scenario.steps] == [
        Start({}, "test"),
        Resume("", {}),
        Signal("poke", {}),
        Task("work", Fail("BOOM")),
        Cancel("why"),
    ]


@pytest.mark.parametrize(
    ("steps", "problem"),
    [
        (
            "- {start: {}, expect: {state: clsoed}}",
            "scenarios[0].steps[0].expect.state: ticket v1 has no state 'clsoed'",
        ),
        (
            "- {start: {}}\n- {resume: og}",
            "scenarios[0].steps[1].resume: ticket v1 declares no event 'og' (its events: go, "
            "poke); did you mean 'go'?",
        ),
        (
            "- {start: {}}\n- {task: {queue: wrok, complete: {}}}",
            "scenarios[0].steps[1].task.queue: ticket v1 has no task on queue 'wrok' (its "
            "queues: work); did you mean 'work'?",
        ),
        (
            "- {start: {}}\n- {task: {queue: work, complete: {}, timeout: true}}",
            "scenarios[0].steps[1].task: a task step answers the task one way",
        ),
        ("- {start: {}}\n- {advance: 30}", "advance must be a duration like 48h, not 30 (with"),
        ("- {start: {input: {nn: 1}}}", "scenarios[0].steps[0].start.input.nn: 'nn' is not a"),
        ("- {start: {}, expect: {context: {tgas: []}}}", "did you mean 'tags'?"),
        (
            "- {start: {input: {when: 2030-01-01}}}",
            "2030-01-01 reads as a YAML timestamp: quote it to mean a string",
        ),
        ("- {start: {}}\n- {start: {}}", "a scenario starts its instance once"),
        ("- {resume: go}", "a scenario's first step is `start`"),
        ("- {start: {}, resme: go}", "unknown step 'resme'"),
        ("- {start: {}, resume: go}", "a step does one thing; this one has start, resume"),
        ("- {start: {}, expect: {status: ASLEEP}}", "status is one of RUNNING, WAITING"),
        ("- {start: {}, expect: {timers: [{target: nowhere}]}}", "no timer of ticket v1 leads"),
        ("- {start: {}, expect: {tasks: [{queue: work, status: DONE}]}}", "an open task is"),
        ("- {start: {}, expect: {revision: 0}}", "revision must be a positive integer"),
        ("- {start: {}, expect: {refused: {}}}", "refused names a reason, a code, a message"),
        ("- {start: {}, expect: {failure: {}}}", "failure names a reason, a message, or both"),
        ("- {}", "an empty step"),
    ],
)
def test_a_problem_names_its_path_and_line(project: Path, steps: str, problem: str) -> None:
    body = textwrap.indent(steps, " " * 6)
    problems, scenarios = read(project, f"scenarios:\n  - name: x\n    steps:\n{body}\n")
    assert scenarios == []
    assert any(problem in p for p in problems), problems
    assert all(p.startswith("ticket.test.yaml:") for p in problems)


def test_a_refusal_expected_lifts_the_checks_of_names(project: Path) -> None:
    problems, _ = read(
        project,
        """
        scenarios:
          - steps:
              - start: {}
              - resume: nonsense
                expect: {refused: UNKNOWN_EVENT}
              - task: {queue: elsewhere, complete: {}}
                expect: {refused: TASK_CANCELLED}
        """,
    )
    assert problems == []


def test_every_problem_of_a_file_is_found_at_once(project: Path) -> None:
    problems, _ = read(
        project,
        """
        scenarios:
          - name: a
            stpes: []
          - name: b
            steps:
              - start: {}
                expect: {state: nowhere, status: nope}
          - name: c
            steps:
              - advance: soon
        """,
    )
    assert len(problems) >= 4, problems
    assert problems[0].startswith("ticket.test.yaml:4:5: error: scenarios[0].stpes: unknown key")


def test_file_level_problems(project: Path) -> None:
    assert "the file is empty" in read(project, "")[0][0]
    assert "not valid YAML" in read(project, "scenarios: [")[0][0]
    assert "scenarios must be a non-empty list" in read(project, "scenarios: []")[0][0]
    assert "unknown key 'scenario'" in read(project, "scenario: []")[0][0]
    twice = read(
        project,
        "scenarios:\n  - {name: a, steps: [start: {}]}\n  - {name: a, steps: [start: {}]}\n",
    )[0]
    assert "scenario name 'a' is used twice (lines 2 and 3)" in twice[0]
    assert (
        "clock must have a time zone"
        in read(project, "clock: '2030-01-01T00:00:00'\nscenarios: [{steps: [start: {}]}]\n")[0][0]
    )


def test_definitions_by_file_by_name_by_default(project: Path) -> None:
    other = project / "elsewhere"
    other.mkdir()
    (other / "ticket.yaml").write_text(
        (project / "ticket.yaml").read_text().replace("version: 1", "version: 2")
    )
    steps = "    steps: [start: {}]\n"
    by_default = read(project, "scenarios:\n  - name: d\n" + steps, "ticket.test.yaml")[1]
    assert by_default[0].definition.key == ("ticket", 1)
    by_file = read(
        project,
        "definition: elsewhere/ticket.yaml\nscenarios:\n  - name: f\n" + steps,
        "x.test.yaml",
    )[1]
    assert by_file[0].definition.key == ("ticket", 2)
    path = project / "n.test.yaml"
    path.write_text("scenarios:\n  - name: n\n    definition: {name: ticket, version: 2}\n" + steps)
    assert read_scenario_file(path, Catalog([other])).scenarios[0].definition.key == ("ticket", 2)
    latest = project / "l.test.yaml"
    latest.write_text("definition: ticket\nscenarios:\n  - name: l\n" + steps)
    assert read_scenario_file(latest, Catalog([other])).scenarios[0].definition.key == ("ticket", 2)
    missing = read(project, "definition: tickte\nscenarios:\n  - name: m\n" + steps, "m.test.yaml")
    assert "no definition 'tickte' in the definitions beside this file" in missing[0][0]
    assert "did you mean 'ticket'?" in missing[0][0]
    none = read(project, "scenarios:\n  - name: o\n" + steps, "orphan.test.yaml")[0]
    assert "no definition: name one with `definition:`" in none[0]


def test_a_broken_definition_is_a_problem_of_the_scenario_file(project: Path) -> None:
    (project / "broken.yaml").write_text("name: broken\nversion: 1\nstates: {}\n")
    problems, _ = read(project, "scenarios: [{steps: [start: {}]}]", "broken.test.yaml")
    assert "the definition has errors" in problems[0]


def test_table_rows_substitute_values_keeping_their_type(project: Path) -> None:
    problems, scenarios = read(
        project,
        """
        scenarios:
          - name: "n is ${n}"
            table:
              - {n: 3, word: three}
              - {n: 4, word: four}
            steps:
              - start: {input: {n: "${n}", tags: ["${word}", "say ${word} (${n})"]}}
        """,
    )
    assert problems == []
    assert [s.name for s in scenarios] == ["n is 3", "n is 4"]
    first = scenarios[0].steps[0].action
    assert isinstance(first, Start)
    assert first.input == {"n": 3, "tags": ["three", "say three (3)"]}
    assert scenarios[1].parameters == {"n": 4, "word": "four"}


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ("[[n], [1, 2]]", "row has 2 values for 1 columns"),
        ("[[n]]", "the table has a header and no rows"),
        ("[{n: 1}, {m: 2}]", "row names ['m']; the first row names ['n']"),
        ("[]", "table must be a non-empty list of rows"),
        ("[{m: 1}]", "no column 'n' in the table (its columns: m)"),
    ],
)
def test_table_problems(project: Path, table: str, problem: str) -> None:
    problems, _ = read(
        project,
        f"scenarios:\n  - table: {table}\n    steps: [start: {{input: {{n: '${{n}}'}}}}]\n",
    )
    assert any(problem in p for p in problems), problems
