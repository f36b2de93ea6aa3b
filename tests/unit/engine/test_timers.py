"""Timer transitions in the pure FSM: what a step arms and disarms, and a timer's firing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from statewrightd.definitions import DefinitionInvalid, load_definition
from statewrightd.definitions.model import Definition
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.engine.model import NO_TIMER_WORK
from statewrightd.errors import FailedPrecondition

SOURCE = """
name: timed
version: 1
context:
  attempts: {type: int, default: 0}
  deadline: {type: string, default: "2030-01-02T03:04:05Z"}
  fail_expr: {type: bool, default: false}
  delay_s: {type: int, default: 90}
states:
  awaiting: {wait: true}
  escalated: {}
  polling: {}
  computed: {}
  done: {}
transitions:
  - {from: awaiting, on: approve, to: done}
  - {from: awaiting, after: 48h, to: escalated}
  - {from: escalated, on: poll, to: polling}
  - {from: escalated, after_expr: "timestamp(context.deadline)", to: done}
  - from: polling
    after: 30s
    to: polling
    guard: "context.attempts < 2"
    set: {attempts: "context.attempts + 1"}
  - {from: polling, on: compute, to: computed}
  - from: computed
    after_expr: "context.fail_expr ? duration('x') : duration(string(context.delay_s) + 's')"
    to: done
  - {from: computed, on: finish, to: done}
"""


@pytest.fixture(scope="module")
def defn() -> Definition:
    return load_definition(SOURCE)


def test_the_first_step_arms_the_timers_of_the_state_it_rests_in(defn: Definition) -> None:
    result = fsm.start(defn, "w", {})
    assert result.snapshot.status is Status.WAITING
    (timer,) = result.timers.arm
    assert (timer.transition, timer.target, timer.after) == (1, "escalated", "48h")
    assert timer.delay == timedelta(hours=48) and timer.at is None
    assert not result.timers.disarm


def test_leaving_a_state_disarms_its_timers_and_arms_the_next_ones(defn: Definition) -> None:
    started = fsm.start(defn, "w", {}).snapshot
    fired = fsm.timer(defn, started, 1)
    assert [(t.from_state, t.to_state, t.event) for t in fired.transitions] == [
        ("awaiting", "escalated", "after")
    ]
    assert fired.timers.disarm
    (timer,) = fired.timers.arm
    # after_expr is evaluated by the step that enters the state: a timestamp.
    assert timer.at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC) and timer.delay is None


def test_an_event_that_leaves_the_state_disarms_it_too(defn: Definition) -> None:
    started = fsm.start(defn, "w", {}).snapshot
    resumed = fsm.resume(defn, started, "approve", {})
    assert resumed.snapshot.status is Status.COMPLETED
    assert resumed.timers.disarm and not resumed.timers.arm


def test_a_self_transition_leaves_and_re_enters_with_fresh_timers(defn: Definition) -> None:
    started = fsm.start(defn, "w", {}).snapshot
    escalated = fsm.timer(defn, started, 1).snapshot
    polling = fsm.signal(defn, escalated, "poll", {}).snapshot
    again = fsm.timer(defn, polling, 4)
    assert again.snapshot.state == "polling" and again.snapshot.context["attempts"] == 1
    assert again.timers.disarm
    assert [t.transition for t in again.timers.arm] == [4]


def test_a_false_guard_consumes_the_timer_and_changes_nothing(defn: Definition) -> None:
    snapshot = fsm.start(defn, "w", {}).snapshot
    snapshot = fsm.timer(defn, snapshot, 1).snapshot
    snapshot = fsm.signal(defn, snapshot, "poll", {}).snapshot
    for _ in range(2):
        snapshot = fsm.timer(defn, snapshot, 4).snapshot
    consumed = fsm.timer(defn, snapshot, 4)
    assert not consumed.changed
    assert consumed.snapshot is snapshot and consumed.timers is NO_TIMER_WORK


def test_a_timer_of_a_state_the_instance_left_is_stale(defn: Definition) -> None:
    started = fsm.start(defn, "w", {}).snapshot
    done = fsm.resume(defn, started, "approve", {}).snapshot
    with pytest.raises(FailedPrecondition) as caught:
        fsm.timer(defn, done, 1)
    assert caught.value.reason == "TIMER_STALE"
    with pytest.raises(FailedPrecondition):
        fsm.timer(defn, started, 0)  # not a timer transition at all


def test_a_duration_expression_uses_the_context_of_the_entering_step(defn: Definition) -> None:
    snapshot = fsm.start(defn, "w", {"delay_s": 7}).snapshot
    snapshot = fsm.timer(defn, snapshot, 1).snapshot
    snapshot = fsm.signal(defn, snapshot, "poll", {}).snapshot
    computed = fsm.signal(defn, snapshot, "compute", {})
    (timer,) = computed.timers.arm
    assert timer.delay == timedelta(seconds=7)


def test_an_after_expr_that_fails_fails_the_step_and_arms_nothing(defn: Definition) -> None:
    snapshot = fsm.start(defn, "w", {"fail_expr": True}).snapshot
    snapshot = fsm.timer(defn, snapshot, 1).snapshot
    snapshot = fsm.signal(defn, snapshot, "poll", {}).snapshot
    failed = fsm.signal(defn, snapshot, "compute", {})
    assert failed.snapshot.status is Status.FAILED
    assert failed.snapshot.error is not None
    assert failed.snapshot.error.reason == "EVALUATION_ERROR"
    assert failed.timers.disarm and not failed.timers.arm


def test_cancel_disarms_a_state_with_timers_only(defn: Definition) -> None:
    started = fsm.start(defn, "w", {}).snapshot
    assert fsm.cancel(defn, started, "stop").timers.disarm
    plain = load_definition(
        "name: plain\nversion: 1\nstates: {a: {wait: true}}\n"
        "transitions: [{from: a, on: go, to: __finish__}]\n"
    )
    assert fsm.cancel(plain, fsm.start(plain, "p", {}).snapshot, "").timers is NO_TIMER_WORK


def test_a_wait_state_with_only_a_timer_is_valid_and_refuses_a_bare_resume() -> None:
    only_timer = load_definition(
        "name: only\nversion: 1\nstates: {hold: {wait: true}, next: {}}\n"
        "transitions: [{from: hold, after: 5m, to: next}]\n"
    )
    started = fsm.start(only_timer, "o", {}).snapshot
    assert started.status is Status.WAITING
    with pytest.raises(FailedPrecondition) as caught:
        fsm.resume(only_timer, started, "", {})
    assert caught.value.reason == "EVENT_NOT_ALLOWED"


REPO = Path(__file__).resolve().parents[3]
ESCALATION = (REPO / "examples" / "definitions" / "ticket-escalation.yaml").read_text()


@pytest.mark.parametrize("respond_within", ["87600000h", "876024h", "3153600001s"])
def test_an_after_expr_past_the_longest_wait_fails_the_step_with_its_reason(
    respond_within: str,
) -> None:
    escalation = load_definition(ESCALATION)
    result = fsm.start(escalation, "w", {"respond_within": respond_within})
    assert result.snapshot.status is Status.FAILED
    assert result.error is not None and result.error.reason == "TIMER_OUT_OF_RANGE"
    assert "100 years" in result.error.message
    assert result.timers.arm == ()


def test_an_after_expr_at_the_longest_wait_arms_its_timer() -> None:
    escalation = load_definition(ESCALATION)
    result = fsm.start(escalation, "w", {"respond_within": "876000h"})
    (timer,) = result.timers.arm
    assert timer.delay == timedelta(days=36500)
    # The due time stays far inside what a datetime (and every store and client) can hold.
    assert datetime(2026, 1, 1, tzinfo=UTC) + timer.delay < datetime(9999, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("where", "text"),
    [
        ("after", "99999999999d"),
        ("after", "36501d"),
        ("after", "9" * 400 + "d"),
        ("timeouts", "99999999999d"),
        ("retry", "876001h"),
    ],
)
def test_a_duration_past_the_longest_is_refused_at_load(where: str, text: str) -> None:
    if where == "after":
        body = f"states: {{a: {{}}, b: {{}}}}\ntransitions: [{{from: a, after: '{text}', to: b}}]"
    elif where == "timeouts":
        body = f"states:\n  a: {{task: {{queue: q, timeouts: {{start_to_close: '{text}'}}}}}}\n"
    else:
        body = f"states:\n  a: {{task: {{queue: q, retry: {{max_interval: '{text}'}}}}}}\n"
    with pytest.raises(DefinitionInvalid) as refused:
        load_definition(f"name: far\nversion: 1\n{body}\n")
    assert any("at most 100 years" in p.message for p in refused.value.problems), refused.value
