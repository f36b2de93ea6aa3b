"""Scenarios in Python: the runner for users' own test suites (``statewright.testing``).

``Scenario`` drives one instance of a definition step by step, as a scenario file does,
and shows it after each step; ``run_scenario`` runs a scenario file and fails (an
``AssertionError``, as pytest reports it) when one of its scenarios does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from statewrightd import errors
from statewrightd.definitions.files import SUFFIXES
from statewrightd.durations import parse_duration
from statewrightd.scenarios.language import (
    DEFAULT_WORKFLOW_ID,
    Catalog,
    read_scenario_file,
    scenario_files,
)
from statewrightd.scenarios.language import Scenario as LanguageScenario
from statewrightd.scenarios.report import failure_text, result_line
from statewrightd.scenarios.runner import Refused, ScenarioResult, run_scenarios
from statewrightd.scenarios.sandbox import DEFAULT_START, Found, NoTask, Sandbox


class StepRefused(Exception):
    """The engine refused a step (an error answer, or a signal it did not accept)."""

    def __init__(self, refused: Refused) -> None:
        super().__init__(str(refused))
        self.code = refused.code
        self.reason = refused.reason
        self.message = refused.message


class ScenarioFileInvalid(ValueError):
    """A scenario file with problems; ``problems`` holds each, as the runner prints it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class Timer:
    target: str
    due: timedelta  # from the scenario's clock


@dataclass(frozen=True, slots=True)
class Task:
    queue: str
    status: str
    attempt: int
    input: dict[str, Any]


def _duration(value: str | timedelta | float) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float):
        return timedelta(seconds=value)
    seconds = parse_duration(value)
    if seconds is None:
        raise ValueError(f"not a duration: {value!r} (write 30s, 15m, 48h, 1h30m, 2d)")
    return timedelta(seconds=seconds)


class Scenario:
    """One instance of a definition on the server's engine, a virtual clock and an
    in-memory store. ``definition`` is a definition file, or a definition's name looked up
    in ``definitions`` (directories; default: the working directory).

    Every step returns the scenario, so that steps chain; a step the engine refuses
    raises ``StepRefused``, a task step that finds no task of its queue ``NoTask``."""

    def __init__(
        self,
        definition: str | Path,
        *,
        version: int | None = None,
        definitions: Sequence[str | Path] = (),
        clock: datetime | str | None = None,
        workflow_id: str = DEFAULT_WORKFLOW_ID,
        seed: int = 0,
    ) -> None:
        start = DEFAULT_START
        if isinstance(clock, str):
            start = datetime.fromisoformat(clock.replace("Z", "+00:00"))
        elif clock is not None:
            start = clock
        if start.tzinfo is None:
            raise ValueError("clock needs a time zone")
        self._sandbox = Sandbox(start=start.astimezone(UTC), seed=seed)
        catalog = Catalog([Path(d) for d in definitions])
        path = Path(definition)
        if str(definition).endswith(SUFFIXES) or path.is_file():
            report = catalog.file(path)
        else:
            found = catalog.named(str(definition), version, Path.cwd())
            if not found:
                raise ValueError(f"no definition {definition!r} in {list(definitions) or ['.']}")
            report = found[0]
        if report.definition is None:
            raise ValueError("\n".join(report.lines("error")))
        self.definition = self._sandbox.place(report).definition
        self.workflow_id = workflow_id

    def close(self) -> None:
        self._sandbox.close()

    def __enter__(self) -> Scenario:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # -- steps -------------------------------------------------------------------------

    def _do(self, step: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return step(*args, **kwargs)
        except errors.StatewrightError as exc:
            raise StepRefused(Refused.of(exc)) from None

    def start(self, input: Mapping[str, Any] | None = None) -> Scenario:
        d = self.definition
        self._do(self._sandbox.start, d.name, d.version, workflow_id=self.workflow_id, input=input)
        return self

    def resume(self, event: str = "", input: Mapping[str, Any] | None = None) -> Scenario:
        self._do(self._sandbox.resume, self.workflow_id, event, input)
        return self

    def signal(self, event: str, payload: Mapping[str, Any] | None = None) -> Scenario:
        outcome = self._do(self._sandbox.signal, self.workflow_id, event, payload)
        if not outcome.accepted:
            raise StepRefused(
                Refused("FAILED_PRECONDITION", outcome.rejection, "the signal was not accepted")
            )
        return self

    def cancel(self, reason: str = "") -> Scenario:
        self._do(self._sandbox.cancel, self.workflow_id, reason)
        return self

    def advance(self, delta: str | timedelta | float) -> Scenario:
        """Let time pass (``"48h"``, a ``timedelta`` or seconds): every timer due, task
        lease and deadline that runs out meanwhile happens, in order."""
        self._sandbox.advance(_duration(delta))
        return self

    def complete_task(self, queue: str, result: Mapping[str, Any] | None = None) -> Scenario:
        """A worker takes the next task of ``queue`` (waiting for it, on the virtual
        clock, if it is in backoff) and completes it with ``result``."""
        task = self._do(self._sandbox.take, queue, self.workflow_id)
        self._do(self._sandbox.complete, task, result)
        return self

    def fail_task(
        self,
        queue: str,
        type: str,
        message: str = "",
        *,
        details: Mapping[str, Any] | None = None,
        non_retryable: bool = False,
        retry_after: str | timedelta | float | None = None,
    ) -> Scenario:
        """A worker takes the next task of ``queue`` and fails this attempt of it."""
        task = self._do(self._sandbox.take, queue, self.workflow_id)
        self._do(
            self._sandbox.fail,
            task,
            type=type,
            message=message,
            details=details,
            non_retryable=non_retryable,
            retry_after=None if retry_after is None else _duration(retry_after),
        )
        return self

    def time_out_task(self, queue: str) -> Scenario:
        """A worker takes the next task of ``queue`` and never answers: its lease runs
        out (the clock moves on to then) and the task is retried or gives up."""
        task = self._do(self._sandbox.take, queue, self.workflow_id)
        self._sandbox.time_out(task)
        return self

    # -- what the instance is now -----------------------------------------------------

    def _found(self) -> Found:
        return self._sandbox.get(self.workflow_id)

    @property
    def state(self) -> str:
        return self._found().record.state

    @property
    def status(self) -> str:
        return str(self._found().record.status)

    @property
    def context(self) -> dict[str, Any]:
        return dict(self._found().record.context)

    @property
    def revision(self) -> int:
        return self._found().record.revision

    @property
    def failure(self) -> dict[str, Any] | None:
        """Why the instance failed or was cancelled: reason, message, metadata."""
        error = self._found().record.error
        return None if error is None else dict(error)

    @property
    def timers(self) -> list[Timer]:
        now = self._sandbox.now()
        return [Timer(t.target, t.due_time - now) for t in self._found().timers]

    @property
    def tasks(self) -> list[Task]:
        return [Task(t.queue, str(t.status), t.attempt, dict(t.input)) for t in self._found().tasks]

    @property
    def now(self) -> datetime:
        return self._sandbox.now()


@dataclass(frozen=True, slots=True)
class ScenarioCase:
    """One scenario of a file, to run as a test of its own (``pytest.mark.parametrize``
    over ``scenarios(...)``, with ``ids=str``)."""

    scenario: LanguageScenario

    def __str__(self) -> str:
        return f"{self.scenario.file.name}::{self.scenario.name}"

    def run(self) -> ScenarioResult:
        """Run it; ``AssertionError`` with the runner's report when it fails."""
        (result,) = run_scenarios([self.scenario])
        if not result.passed:
            raise AssertionError(f"{result_line(result)}\n{failure_text(result)}")
        return result


def scenarios(path: str | Path, *, definitions: Sequence[str | Path] = ()) -> list[ScenarioCase]:
    """Every scenario of a scenario file (or of every ``*.test.yaml`` under a directory),
    each to run on its own; ``ScenarioFileInvalid`` when a file is itself invalid."""
    return [ScenarioCase(s) for s in _read(path, definitions)]


def _read(path: str | Path, definitions: Sequence[str | Path]) -> list[LanguageScenario]:
    files, missing = scenario_files([str(path)])
    if missing or not files:
        raise FileNotFoundError(f"no scenario file at {path}")
    catalog = Catalog([Path(d) for d in definitions])
    read = [read_scenario_file(f, catalog) for f in files]
    problems = [line for f in read for line in f.lines() if f.errors]
    if problems:
        raise ScenarioFileInvalid(problems)
    return [s for f in read for s in f.scenarios]


def run_scenario(
    path: str | Path,
    *,
    definitions: Sequence[str | Path] = (),
    match: str | None = None,
) -> list[ScenarioResult]:
    """Run a scenario file (or every ``*.test.yaml`` under a directory); raise
    ``AssertionError`` with the runner's report when a scenario fails, and
    ``ScenarioFileInvalid`` when a file is itself invalid."""
    found = [s for s in _read(path, definitions) if match is None or match in s.name]
    results = run_scenarios(found)
    failed = [r for r in results if not r.passed]
    if failed:
        report = "\n".join(f"{result_line(r)}\n{failure_text(r)}" for r in failed)
        raise AssertionError(f"{len(failed)} of {len(results)} scenario(s) failed:\n{report}")
    return results


__all__ = [
    "NoTask",
    "Scenario",
    "ScenarioCase",
    "ScenarioFileInvalid",
    "StepRefused",
    "Task",
    "Timer",
    "run_scenario",
    "scenarios",
]
