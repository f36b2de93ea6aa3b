"""Running scenarios: each in a sandbox of its own, step by step, checked as it goes.

A scenario stops at its first step whose outcome differs from what it expects; the result
says which step, which fields, what was expected and what happened. A step the server
refuses (an error answer, or a signal it does not accept) fails the scenario unless the
step expects that refusal.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from statewrightd import errors
from statewrightd.api.status import grpc_code
from statewrightd.definitions.model import Definition
from statewrightd.engine.answers import Outcome
from statewrightd.scenarios.language import (
    NO_FAILURE,
    Advance,
    Cancel,
    Check,
    Complete,
    Expect,
    Fail,
    Resume,
    Scenario,
    Signal,
    Start,
    Step,
    Task,
    TaskExpect,
    TimerExpect,
)
from statewrightd.scenarios.sandbox import Found, NoTask, Sandbox
from statewrightd.store.records import HistoryRecord, TaskRecord, TimerRecord


@dataclass(frozen=True, slots=True)
class Refused:
    """A step the server did not apply: an error answer, or a signal not accepted."""

    code: str
    reason: str
    message: str

    @classmethod
    def of(cls, error: errors.StatewrightError) -> Refused:
        return cls(grpc_code(error).name, error.reason, error.message)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One field of one step that is not as expected."""

    field: str
    expected: Any
    actual: Any


@dataclass(frozen=True, slots=True)
class StepFailure:
    step: Step
    summary: str
    mismatches: tuple[Mismatch, ...] = ()
    refused: Refused | None = None  # the refusal the step did not expect


@dataclass(slots=True)
class Visits:
    """What a scenario's instance went through: states entered, transitions taken."""

    definition: Definition
    states: set[str] = field(default_factory=set)
    transitions: set[int] = field(default_factory=set)

    def step(self, outcome: Outcome, history: HistoryRecord) -> None:
        if outcome.loaded.definition.key != self.definition.key:
            return
        self.states.add(outcome.record.state)
        for taken in outcome.transitions:
            self.states.add(taken.from_state)
            if taken.to_state in self.definition.states:
                self.states.add(taken.to_state)
            if taken.index is not None:
                self.transitions.add(taken.index)


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    scenario: Scenario
    steps: int  # steps run
    seconds: float
    visits: Visits
    failure: StepFailure | None = None
    crash: str | None = None  # an error of the runner or the engine itself, with its trace

    @property
    def passed(self) -> bool:
        return self.failure is None and self.crash is None


def run_scenario(scenario: Scenario) -> ScenarioResult:
    """Run one scenario in a fresh sandbox."""
    began = time.perf_counter()
    visits = Visits(scenario.definition)
    sandbox = Sandbox(start=scenario.clock)
    sandbox.on_step(visits.step)
    ran = 0
    try:
        sandbox.place(scenario.report)
        driver = _Driver(sandbox, scenario)
        for step in scenario.steps:
            ran += 1
            failure = driver.run(step)
            if failure is not None:
                return ScenarioResult(
                    scenario, ran, time.perf_counter() - began, visits, failure=failure
                )
    except Exception:
        crash = traceback.format_exc()
        return ScenarioResult(scenario, ran, time.perf_counter() - began, visits, crash=crash)
    finally:
        sandbox.close()
    return ScenarioResult(scenario, ran, time.perf_counter() - began, visits)


def run_scenarios(
    scenarios: Sequence[Scenario], on_result: Callable[[ScenarioResult], None] | None = None
) -> list[ScenarioResult]:
    results = []
    for scenario in scenarios:
        result = run_scenario(scenario)
        if on_result is not None:
            on_result(result)
        results.append(result)
    return results


class _Driver:
    """Carries out one scenario's steps on its sandbox."""

    def __init__(self, sandbox: Sandbox, scenario: Scenario) -> None:
        self.sandbox = sandbox
        self.scenario = scenario
        self.workflow_id = scenario.workflow_id
        self.started = False

    def run(self, step: Step) -> StepFailure | None:
        refused: Refused | None = None
        try:
            failure = self.act(step)
        except errors.StatewrightError as exc:
            refused, failure = Refused.of(exc), None
        if isinstance(failure, Refused):
            refused, failure = failure, None
        if failure is not None:
            return failure
        return self.check(step, refused)

    def act(self, step: Step) -> StepFailure | Refused | None:
        action, sandbox, wid = step.action, self.sandbox, self.workflow_id
        if isinstance(action, Start):
            definition = self.scenario.definition
            sandbox.start(
                definition.name,
                definition.version,
                workflow_id=action.workflow_id,
                input=action.input,
            )
            return None
        if isinstance(action, Resume):
            sandbox.resume(wid, action.event, action.input)
            return None
        if isinstance(action, Signal):
            outcome = sandbox.signal(wid, action.event, action.payload)
            if not outcome.accepted:
                return Refused(
                    "FAILED_PRECONDITION",
                    outcome.rejection or "",
                    f"the signal was not accepted: the instance is {outcome.record.status}",
                )
            return None
        if isinstance(action, Task):
            return self.task(step, action)
        if isinstance(action, Advance):
            sandbox.advance(action.delta)
            return None
        if isinstance(action, Cancel):
            sandbox.cancel(wid, action.reason)
            return None
        assert isinstance(action, Check)
        return None

    def task(self, step: Step, action: Task) -> StepFailure | None:
        sandbox = self.sandbox
        try:
            task = sandbox.take(action.queue, self.workflow_id)
        except NoTask as exc:
            return StepFailure(step, f"a worker found no task: {exc}")
        if action.input is not None:
            mismatches = list(_subset(action.input, task.input, "task.input"))
            if mismatches:
                return StepFailure(
                    step,
                    f"the task leased from {action.queue} has another input",
                    tuple(mismatches),
                )
        answer = action.answer
        if isinstance(answer, Complete):
            sandbox.complete(task, answer.result)
        elif isinstance(answer, Fail):
            sandbox.fail(
                task,
                type=answer.type,
                message=answer.message,
                details=answer.details,
                non_retryable=answer.non_retryable,
                retry_after=answer.retry_after,
            )
        else:
            sandbox.time_out(task)
        return None

    # -- checking ------------------------------------------------------------------------

    def check(self, step: Step, refused: Refused | None) -> StepFailure | None:
        expect = step.expect
        wanted = None if expect is None else expect.refused
        if refused is not None and wanted is None:
            return StepFailure(step, f"the step was refused: {refused}", refused=refused)
        mismatches: list[Mismatch] = []
        if wanted is not None:
            if refused is None:
                expected = {k: v for k, v in _fields(wanted).items() if v is not None}
                mismatches.append(Mismatch("refused", expected, "the step was applied"))
            else:
                mismatches.extend(_refusal(wanted, refused))
        if expect is not None:
            mismatches.extend(self.compare(expect))
        if mismatches:
            fields = ", ".join(
                dict.fromkeys(m.field.split(".")[0].split("[")[0] for m in mismatches)
            )
            return StepFailure(step, f"not as expected: {fields}", tuple(mismatches))
        return None

    def compare(self, expect: Expect) -> Iterator[Mismatch]:
        wants_instance = any(
            v is not None
            for v in (
                expect.state,
                expect.status,
                expect.context,
                expect.timers,
                expect.tasks,
                expect.failure,
                expect.revision,
            )
        )
        if not wants_instance:
            return
        try:
            found = self.sandbox.get(self.workflow_id)
        except errors.StatewrightError:
            yield Mismatch("instance", f"workflow {self.workflow_id}", "no such instance")
            return
        record = found.record
        if expect.state is not None and record.state != expect.state:
            yield Mismatch("state", expect.state, record.state)
        if expect.status is not None and record.status != expect.status:
            yield Mismatch("status", expect.status, str(record.status))
        if expect.revision is not None and record.revision != expect.revision:
            yield Mismatch("revision", expect.revision, record.revision)
        if expect.context is not None:
            yield from _subset(expect.context, record.context, "context")
        if expect.failure is not None:
            yield from _failure(expect.failure, record.error)
        if expect.timers is not None:
            yield from self.timers(expect.timers, found)
        if expect.tasks is not None:
            yield from _tasks(expect.tasks, found.tasks)

    def timers(self, expected: Sequence[TimerExpect], found: Found) -> Iterator[Mismatch]:
        now = self.sandbox.now()
        actual = [_timer_view(t, now) for t in found.timers]
        wanted = [
            {"target": t.target} | ({} if t.due is None else {"due": _duration(t.due)})
            for t in expected
        ]
        matches = len(actual) == len(wanted) and all(
            {k: a[k] for k in w} == w for a, w in zip(actual, wanted, strict=True)
        )
        if not matches:
            yield Mismatch("timers", wanted, actual)


def _fields(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__slots__}


def _refusal(wanted: Any, refused: Refused) -> Iterator[Mismatch]:
    if wanted.reason is not None and wanted.reason not in (refused.reason, refused.code):
        yield Mismatch("refused.reason", wanted.reason, refused.reason)
    if wanted.code is not None and wanted.code.upper() != refused.code:
        yield Mismatch("refused.code", wanted.code, refused.code)
    if wanted.message is not None and wanted.message not in refused.message:
        yield Mismatch("refused.message", f"… {wanted.message} …", refused.message)


def _failure(expected: Any, error: Mapping[str, Any] | None) -> Iterator[Mismatch]:
    if expected is NO_FAILURE:
        if error is not None:
            yield Mismatch(
                "failure", None, {"reason": error.get("reason"), "message": error.get("message")}
            )
        return
    if error is None:
        wanted = {k: v for k, v in _fields(expected).items() if v is not None}
        yield Mismatch("failure", wanted, None)
        return
    if expected.reason is not None and expected.reason != error.get("reason"):
        yield Mismatch("failure.reason", expected.reason, error.get("reason"))
    message = str(error.get("message", ""))
    if expected.message is not None and expected.message not in message:
        yield Mismatch("failure.message", f"… {expected.message} …", message)


def _tasks(expected: Sequence[TaskExpect], actual: Sequence[TaskRecord]) -> Iterator[Mismatch]:
    views = [_task_view(t) for t in actual]
    if len(expected) != len(actual):
        yield Mismatch("tasks", [_fields_set(e) for e in expected], views)
        return
    for i, (want, task) in enumerate(zip(expected, actual, strict=True)):
        at = f"tasks[{i}]"
        if want.queue != task.queue:
            yield Mismatch(f"{at}.queue", want.queue, task.queue)
        if want.attempt is not None and want.attempt != task.attempt:
            yield Mismatch(f"{at}.attempt", want.attempt, task.attempt)
        if want.status is not None and want.status != task.status:
            yield Mismatch(f"{at}.status", want.status, str(task.status))
        if want.input is not None:
            yield from _subset(want.input, task.input, f"{at}.input")


def _fields_set(value: Any) -> dict[str, Any]:
    return {k: v for k, v in _fields(value).items() if v is not None}


def _task_view(task: TaskRecord) -> dict[str, Any]:
    return {
        "queue": task.queue,
        "status": str(task.status),
        "attempt": task.attempt,
        "input": task.input,
    }


def _timer_view(timer: TimerRecord, now: Any) -> dict[str, Any]:
    return {"target": timer.target, "due": _duration(timer.due_time - now)}


def _duration(delta: timedelta) -> str:
    """A delay as scenario files write it: ``15m``, ``1h30m``, ``-2s`` (overdue)."""
    total = delta.total_seconds()
    sign = "-" if total < 0 else ""
    total = abs(total)
    if total == 0:
        return "0s"
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if total >= size:
            count = math.floor(total / size)
            parts.append(f"{count}{unit}")
            total -= count * size
    if total:
        seconds = round(total, 3)
        if seconds == int(seconds):
            parts.append(f"{int(seconds)}s")
        elif seconds * 1000 == int(seconds * 1000) and seconds < 1 and not parts:
            parts.append(f"{int(seconds * 1000)}ms")
        else:
            parts.append(f"{seconds:g}s")
    return sign + "".join(parts)


def _subset(expected: Any, actual: Any, path: str) -> Iterator[Mismatch]:
    """Mismatches of ``actual`` against ``expected``: maps compare the keys ``expected``
    names (recursively), lists and scalars compare whole."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            yield Mismatch(path, expected, actual)
            return
        for key, value in expected.items():
            if key not in actual:
                yield Mismatch(f"{path}.{key}", value, _ABSENT)
            else:
                yield from _subset(value, actual[key], f"{path}.{key}")
        return
    if not same(expected, actual):
        yield Mismatch(path, expected, actual)


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


_ABSENT = _Absent()


def same(a: Any, b: Any) -> bool:
    """JSON equality: 1 and 1.0 are the same number, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
