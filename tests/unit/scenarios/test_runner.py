"""``statewrightd test``: each step kind, each expectation kind, the diff, the exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.scenarios.conftest import Runner

# One scenario per step kind; each passes only if its step did what the engine does.
EVERY_STEP = """
scenarios:
  - name: start
    steps:
      - start: {workflow_id: first, input: {n: 1}}
        expect: {state: open, status: WAITING, revision: 1, context: {n: 1}}
  - name: resume with input
    steps:
      - start: {}
      - resume: {event: go, input: {flag: true}}
        expect: {state: working, context: {n: 1, flag: true}}
  - name: resume naming no event takes the first declared
    steps:
      - start: {}
      - resume:
        expect: {state: working}
  - name: signal
    steps:
      - start: {input: {when: 1s}}
      - advance: 1s
        expect: {state: late, status: RUNNING}
      - signal: {event: poke, payload: {hard: true}}
        expect: {state: done, status: COMPLETED}
  - name: task complete
    steps:
      - start: {workflow_id: w-7}
      - resume: go
      - task: {queue: work, input: {n: 1, who: w-7}, complete: {note: fine}}
        expect: {state: done, context: {note: fine}}
  - name: task fail
    steps:
      - start: {}
      - resume: go
      - task: {queue: work, fail: {type: NOPE, message: no, non_retryable: true}}
        expect: {state: broken, context: {meta: {type: NOPE, attempts: 1}}}
  - name: task timeout
    steps:
      - start: {}
      - resume: go
      - task: {queue: work, timeout: true}
        expect: {tasks: [{queue: work, status: BACKOFF, attempt: 1}]}
  - name: advance
    steps:
      - start: {}
      - advance: 2h
        expect: {state: late, timers: []}
  - name: cancel
    steps:
      - start: {}
      - cancel: {reason: no longer needed}
        expect: {status: CANCELLED, failure: {reason: CANCELLED, message: no longer}}
  - name: expect on its own
    steps:
      - start: {}
      - expect: {state: open}
"""


def test_every_kind_of_step_runs(run: Runner) -> None:
    result = run(EVERY_STEP)
    assert result.code == 0, result.out + result.err
    assert result.out.count("PASS  ") == 10
    assert "10 scenario(s) in 1 file(s): 10 passed" in result.out


def failing(run: Runner, steps: str) -> str:
    result = run("scenarios:\n  - name: one\n    steps:\n" + steps)
    assert result.code == 1, result.out + result.err
    return result.out


@pytest.mark.parametrize(
    ("expect", "field", "expected", "actual"),
    [
        ("state: working", "state", '"working"', '"open"'),
        ("status: running", "status", '"RUNNING"', '"WAITING"'),
        ("revision: 2", "revision", "2", "1"),
        ("context: {n: 5}", "context.n", "5", "0"),
        ("context: {flag: 0}", "context.flag", "0", "false"),
        ("context: {meta: {a: 1}}", "context.meta.a", "1", "(absent)"),
        ("context: {tags: [x]}", "context.tags", '["x"]', "[]"),
        ("failure: CANCELLED", "failure", '{"reason": "CANCELLED"}', "null"),
        ("tasks: [{queue: work}]", "tasks", '[{"queue": "work"}]', "[]"),
    ],
)
def test_each_expectation_reports_its_field_expected_against_actual(
    run: Runner, expect: str, field: str, expected: str, actual: str
) -> None:
    out = failing(run, f"      - start: {{}}\n        expect: {{{expect}}}\n")
    assert (
        f"ticket.test.yaml:4: step 1 `start`: not as expected: {field.split('.', maxsplit=1)[0]}"
        in out
    )
    assert f"        {field}\n          expected: {expected}\n          actual:   {actual}" in out


def test_timers_compare_targets_and_due_offsets(run: Runner) -> None:
    passing = run(
        """
        scenarios:
          - name: timers
            steps:
              - start: {}
                expect: {timers: [{target: late, due: 1h}, {target: done}]}
              - advance: 15m
                expect: {timers: [{target: late, due: 45m}, {target: done, due: 1h45m}]}
        """
    )
    assert passing.code == 0, passing.out
    out = failing(run, "      - start: {}\n        expect: {timers: [{target: late, due: 30m}]}\n")
    assert "timers" in out and '"due": "1h"' in out and '"due": "2h"' in out


def test_tasks_compare_queue_input_attempt_and_status(run: Runner) -> None:
    out = failing(
        run,
        """      - start: {}
      - resume: go
        expect: {tasks: [{queue: work, input: {n: 9}, attempt: 1, status: leased}]}
""",
    )
    assert "tasks[0].attempt\n          expected: 1\n          actual:   0" in out
    assert 'tasks[0].status\n          expected: "LEASED"\n          actual:   "SCHEDULED"' in out
    assert "tasks[0].input.n\n          expected: 9\n          actual:   1" in out


def test_a_task_step_checks_the_input_it_was_given(run: Runner) -> None:
    out = failing(
        run,
        "      - start: {}\n      - resume: go\n      - task: {queue: work, input: {n: 3}, "
        "complete: {note: x}}\n",
    )
    assert "step 3 `task work complete`: the task leased from work has another input" in out
    assert "task.input.n\n          expected: 3\n          actual:   1" in out


def test_failure_null_means_none_and_a_message_is_a_part_of_it(run: Runner) -> None:
    assert (
        run(
            """
        scenarios:
          - name: ok
            steps:
              - start: {}
                expect: {failure: null}
              - cancel: called off by ann
                expect: {failure: {message: by ann}}
        """
        ).code
        == 0
    )
    out = failing(run, "      - start: {}\n      - cancel: x\n        expect: {failure: null}\n")
    assert '"reason": "CANCELLED"' in out


def test_a_refusal_fails_the_step_unless_it_is_expected(run: Runner) -> None:
    out = failing(run, "      - start: {}\n      - resume: poke\n")
    assert (
        "step 2 `resume poke`: the step was refused: FAILED_PRECONDITION EVENT_NOT_ALLOWED: "
        "event 'poke' is not accepted in state 'open'"
    ) in out
    expected = run(
        """
        scenarios:
          - name: refusals
            steps:
              - start: {}
              - resume: poke
                expect: {refused: EVENT_NOT_ALLOWED, state: open}
              - resume: nonsense
                expect: {refused: {code: INVALID_ARGUMENT, message: declares no event}}
              - signal: go
                expect: {refused: NOT_RUNNING}
        """
    )
    assert expected.code == 0, expected.out
    out = failing(run, "      - start: {}\n        expect: {refused: NOT_WAITING}\n")
    assert 'refused\n          expected: {"reason": "NOT_WAITING"}' in out
    assert 'actual:   "the step was applied"' in out
    out = failing(run, "      - start: {}\n      - resume: poke\n        expect: {refused: X}\n")
    assert 'refused.reason\n          expected: "X"\n          actual:   "EVENT_NOT_ALLOWED"' in out


def test_long_values_are_shown_as_a_unified_diff(run: Runner) -> None:
    out = failing(
        run,
        "      - start: {input: {tags: [alpha, beta, gamma, delta, epsilon, zeta, eta, mu]}}\n"
        "        expect: {context: {tags: [alpha, beta, GAMMA, delta, epsilon, zeta, eta, mu]}}\n",
    )
    assert "--- expected\n" in out and "+++ actual\n" in out
    assert '-  "GAMMA",' in out and '+  "gamma",' in out


def test_a_scenario_stops_at_its_first_failing_step(run: Runner) -> None:
    out = failing(
        run,
        "      - start: {}\n        expect: {state: late}\n      - resume: go\n",
    )
    assert "FAIL  ticket.test.yaml: one (step 1 of 2" in out
    assert "1 scenario(s) in 1 file(s): 0 passed, 1 failed (1 steps in" in out


def test_a_table_makes_one_scenario_per_row(run: Runner) -> None:
    result = run(
        """
        scenarios:
          - name: "n=${n} ends ${end}"
            table:
              - [n, end]
              - [0, open]
              - [5, open]
          - name: maps
            table:
              - {delay: 30m}
              - {delay: 3h}
            steps:
              - start: {input: {when: "${delay}"}}
                expect: {timers: [{target: late, due: "${delay}"}, {target: done}]}
            # rows whose names do not say them get them appended
        """.replace(
            "              - [5, open]\n",
            "              - [5, open]\n            steps:\n"
            '              - start: {input: {n: "${n}"}}\n'
            '                expect: {state: "${end}", context: {n: "${n}"}}\n',
        )
    )
    assert result.code == 1, result.out + result.err
    assert "PASS  ticket.test.yaml: n=0 ends open" in result.out
    assert "PASS  ticket.test.yaml: n=5 ends open" in result.out
    assert "PASS  ticket.test.yaml: maps [delay=30m]" in result.out
    # 3h is after the 2h timer: the due-time order differs, so the row fails.
    assert "FAIL  ticket.test.yaml: maps [delay=3h]" in result.out


def test_exit_codes_0_1_and_2(run: Runner, project: Path) -> None:
    assert run("scenarios: [{name: a, steps: [{start: {}}]}]").code == 0
    assert run("scenarios: [{name: a, steps: [{start: {}, expect: {state: done}}]}]").code == 1
    invalid = run("scenarios: [{name: a, steps: [{start: {}, expect: {stat: done}}]}]")
    assert invalid.code == 2 and invalid.out == ""
    assert (
        "ticket.test.yaml:1:52: error: scenarios[0].steps[0].expect.stat: unknown key 'stat'"
    ) in invalid.err
    assert "did you mean 'state'?" in invalid.err
    assert "nothing was run" in invalid.err
    assert run(None, paths=[str(project / "missing.test.yaml")]).code == 2
    assert run(None, paths=[str(project / "ticket.yaml")]).code == 2  # not a scenario file
    assert run(None, "-k", "nothing matches").code == 2


def test_an_invalid_file_stops_every_file_from_running(run: Runner, project: Path) -> None:
    (project / "good.test.yaml").write_text(
        "definition: ticket.yaml\nscenarios: [{name: g, steps: [{start: {}}]}]\n"
    )
    result = run("scenarios: [{name: b, steps: [{resume: go}]}]", paths=["."])
    assert result.code == 2
    assert "scenarios[0].steps[0]: a scenario's first step is `start`" in result.err
    assert "PASS" not in result.out


def test_directories_are_searched_for_scenario_files(run: Runner, project: Path) -> None:
    nested = project / "more"
    nested.mkdir()
    (nested / "other.test.yaml").write_text(
        "definition: ../ticket.yaml\nscenarios: [{name: nested, steps: [{start: {}}]}]\n"
    )
    hidden = project / ".cache"
    hidden.mkdir()
    (hidden / "skip.test.yaml").write_text("not: [valid")
    run("scenarios: [{name: top, steps: [{start: {}}]}]")
    result = run(None, paths=["."])
    assert result.code == 0, result.err
    assert "more/other.test.yaml: nested" in result.out and "ticket.test.yaml: top" in result.out


def test_quiet_prints_failures_and_the_summary(run: Runner) -> None:
    result = run(
        "scenarios:\n  - {name: ok, steps: [{start: {}}]}\n"
        "  - {name: bad, steps: [{start: {}, expect: {state: done}}]}\n",
        "-q",
    )
    assert "PASS" not in result.out and "FAIL  ticket.test.yaml: bad" in result.out


def test_a_worker_that_finds_no_task_fails_the_step(run: Runner) -> None:
    out = failing(run, "      - start: {}\n      - task: {queue: work, complete: {}}\n")
    assert "step 2 `task work complete`: a worker found no task: no task is open on queue" in out
