"""Scenario files: what ``statewrightd test`` reads, checked before anything runs.

A scenario file (``NAME.test.yaml``, beside the definition it tests) holds scenarios; each
starts an instance of a definition, drives it step by step (requests, a worker's answers
to its tasks, the passing of time) and states, after any step, what it expects. Every
problem of a file is found at once, each with the path of the element and its line, as
``statewrightd validate`` reports definitions; a file with any problem runs nothing.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from statewrightd.definitions.files import SCENARIO_SUFFIXES, SUFFIXES, is_definition_file
from statewrightd.definitions.model import TASK_FAILED, Definition
from statewrightd.definitions.parsing import parse_document
from statewrightd.definitions.problems import Problem, did_you_mean
from statewrightd.definitions.registry import FileReport, read_file
from statewrightd.domain import Status
from statewrightd.durations import parse_duration
from statewrightd.scenarios.sandbox import DEFAULT_START

DEFAULT_WORKFLOW_ID = "test"
STATUSES = tuple(s.value for s in Status)
_PARAMETER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

_FILE_KEYS = ("definition", "clock", "scenarios")
_SCENARIO_KEYS = ("name", "definition", "clock", "table", "steps")
_STEP_KINDS = ("start", "resume", "signal", "task", "advance", "cancel")
_EXPECT_KEYS = ("state", "status", "context", "timers", "tasks", "failure", "refused", "revision")
_TASK_KEYS = ("queue", "input", "complete", "fail", "timeout")
_FAIL_KEYS = ("type", "message", "details", "non_retryable", "retry_after")

Path_ = tuple[str | int, ...]


def render_path(path: Path_) -> str:
    """``("scenarios", 0, "steps", 2)`` -> ``scenarios[0].steps[2]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


# -- what a file holds ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimerExpect:
    target: str
    due: timedelta | None  # from the clock's time after the step; None: any


@dataclass(frozen=True, slots=True)
class TaskExpect:
    queue: str
    input: Mapping[str, Any] | None = None  # a subset of the task's input
    attempt: int | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    reason: str | None = None
    message: str | None = None  # a part of the message


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str | None = None
    code: str | None = None
    message: str | None = None  # a part of the message


NO_FAILURE = Failure()


@dataclass(frozen=True, slots=True)
class Expect:
    """What a step is expected to leave; a field that is None is not checked. ``failure``
    is ``NO_FAILURE`` for "no failure" (``failure: null``)."""

    line: int | None
    state: str | None = None
    status: str | None = None
    context: Mapping[str, Any] | None = None
    timers: tuple[TimerExpect, ...] | None = None
    tasks: tuple[TaskExpect, ...] | None = None
    failure: Failure | None = None
    refused: Refusal | None = None
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class Start:
    input: Mapping[str, Any]
    workflow_id: str


@dataclass(frozen=True, slots=True)
class Resume:
    event: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Signal:
    event: str
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Complete:
    result: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Fail:
    type: str
    message: str = ""
    details: Mapping[str, Any] = field(default_factory=dict)
    non_retryable: bool = False
    retry_after: timedelta | None = None


@dataclass(frozen=True, slots=True)
class Timeout:
    pass


@dataclass(frozen=True, slots=True)
class Task:
    queue: str
    answer: Complete | Fail | Timeout
    input: Mapping[str, Any] | None = None  # a subset of the task's input, checked


@dataclass(frozen=True, slots=True)
class Advance:
    delta: timedelta
    text: str


@dataclass(frozen=True, slots=True)
class Cancel:
    reason: str


@dataclass(frozen=True, slots=True)
class Check:
    """A step that only checks (``- expect: ...`` on its own)."""


Action = Start | Resume | Signal | Task | Advance | Cancel | Check


@dataclass(frozen=True, slots=True)
class Step:
    index: int  # 1-based, as reports number steps
    action: Action
    expect: Expect | None
    line: int | None
    text: str  # the step as reports show it: "resume approve", "advance 48h"


@dataclass(frozen=True, slots=True)
class Scenario:
    file: Path
    name: str
    line: int | None
    report: FileReport  # the definition's file, as read
    definition: Definition
    steps: tuple[Step, ...]
    clock: datetime = DEFAULT_START
    parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def workflow_id(self) -> str:
        first = self.steps[0].action
        return first.workflow_id if isinstance(first, Start) else DEFAULT_WORKFLOW_ID


@dataclass(frozen=True, slots=True)
class ScenarioFile:
    path: Path
    scenarios: tuple[Scenario, ...]
    problems: tuple[Problem, ...]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    def lines(self) -> list[str]:
        return [p.render(str(self.path)) for p in self.problems]


# -- finding definitions -------------------------------------------------------------------


class Catalog:
    """Definition files as read, once each; where names are looked up."""

    def __init__(self, search: Sequence[Path] = ()) -> None:
        self._search = list(search)
        self._files: dict[Path, FileReport] = {}
        self._listed: dict[Path, list[Path]] = {}

    def file(self, path: Path) -> FileReport:
        key = path.resolve()
        report = self._files.get(key)
        if report is None:
            report = self._files[key] = read_file(path)
        return report

    def named(self, name: str, version: int | None, near: Path) -> list[FileReport]:
        """The definition files, of ``near`` and the search directories, that hold
        ``name`` (at ``version``), the latest version first."""
        found: list[FileReport] = []
        for directory in dict.fromkeys([near.resolve(), *(d.resolve() for d in self._search)]):
            for path in self._definition_files(directory):
                report = self.file(path)
                d = report.definition
                if d is not None and d.name == name and version in (None, d.version):
                    found.append(report)
        return sorted(found, key=lambda r: -r.definition.version if r.definition else 0)

    def names(self, near: Path) -> list[str]:
        names = []
        for directory in dict.fromkeys([near.resolve(), *(d.resolve() for d in self._search)]):
            for path in self._definition_files(directory):
                d = self.file(path).definition
                if d is not None:
                    names.append(d.name)
        return names

    def _definition_files(self, directory: Path) -> list[Path]:
        listed = self._listed.get(directory)
        if listed is None:
            listed = self._listed[directory] = (
                sorted(p for p in directory.iterdir() if p.is_file() and is_definition_file(p))
                if directory.is_dir()
                else []
            )
        return listed


def default_definition(path: Path) -> Path | None:
    """``order.test.yaml`` tests ``order.yaml`` (or ``.yml``, ``.json``) beside it."""
    for suffix in SCENARIO_SUFFIXES:
        if path.name.endswith(suffix):
            stem = path.name[: -len(suffix)]
            for ext in SUFFIXES:
                candidate = path.with_name(stem + ext)
                if candidate.is_file():
                    return candidate
    return None


# -- lines of elements ---------------------------------------------------------------------


class _Marks:
    """Where each element of the document is, by its path."""

    def __init__(self, text: str) -> None:
        try:
            self._root: yaml.Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError:
            self._root = None

    def at(self, path: Path_, *, key: bool = False) -> tuple[int | None, int | None]:
        """The line and column of the element at ``path`` (with ``key``: of its key)."""
        node = self._root
        if node is None:
            return None, None
        for i, part in enumerate(path):
            child = None
            if isinstance(node, yaml.MappingNode) and isinstance(part, str):
                pair = next(((k, v) for k, v in node.value if k.value == part), None)
                if pair is not None:
                    child = pair[0] if key and i == len(path) - 1 else pair[1]
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                child = node.value[part] if 0 <= part < len(node.value) else None
            if child is None:
                break
            node = child
        return node.start_mark.line + 1, node.start_mark.column + 1


# -- reading -------------------------------------------------------------------------------


class _Invalid(Exception):
    """Unwinds the reading of one element that has a problem (already recorded)."""


class _Reader:
    def __init__(self, path: Path, text: str, catalog: Catalog) -> None:
        self.path = path
        self.catalog = catalog
        self.marks = _Marks(text)
        self.problems: list[Problem] = []
        self.definition_broken = False

    # -- problems --

    def problem(self, path: Path_, message: str, *, key: bool = False) -> _Invalid:
        line, column = self.marks.at(path, key=key)
        self.problems.append(Problem(render_path(path), message, line=line, column=column))
        return _Invalid()

    def line(self, path: Path_) -> int | None:
        return self.marks.at(path)[0]

    def keys(self, value: Mapping[str, Any], allowed: Sequence[str], path: Path_) -> None:
        for key in value:
            if key not in allowed:
                self.problem(
                    (*path, str(key)),
                    f"unknown key {key!r}; expected one of {', '.join(allowed)}"
                    + did_you_mean(key, allowed),
                    key=True,
                )

    # -- plain values --

    def mapping(self, value: object, path: Path_, what: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.problem(path, f"{what} must be a map, not {_kind(value)}")
        return value

    def text(self, value: object, path: Path_, what: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.problem(path, f"{what} must be a non-empty string, not {_kind(value)}")
        return value

    def values(self, value: object, path: Path_, what: str) -> dict[str, Any]:
        """A map of JSON values (an input, a payload, a result); null is an empty one."""
        if value is None:
            return {}
        mapping = self.mapping(value, path, what)
        self.json(mapping, path)
        return dict(mapping)

    def json(self, value: object, path: Path_) -> None:
        if value is None or isinstance(value, bool | int | str):
            return
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.problem(path, f"{value} is not a number JSON can hold")
            return
        if isinstance(value, datetime | date):
            raise self.problem(
                path, f"{value.isoformat()} reads as a YAML timestamp: quote it to mean a string"
            )
        if isinstance(value, list):
            for i, item in enumerate(value):
                self.json(item, (*path, i))
            return
        if isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise self.problem(path, f"map key {key!r} is not a string")
                self.json(item, (*path, key))
            return
        raise self.problem(path, f"{_kind(value)} is not a JSON value")

    def duration(self, value: object, path: Path_, what: str) -> timedelta:
        seconds = parse_duration(value) if isinstance(value, str) else None
        if seconds is None:
            hint = " (with a unit: 30s, 15m, 48h, 1h30m, 2d)" if isinstance(value, int) else ""
            raise self.problem(path, f"{what} must be a duration like 48h, not {value!r}{hint}")
        return timedelta(seconds=seconds)

    def clock(self, value: object, path: Path_) -> datetime:
        if isinstance(value, datetime):
            when = value
        elif isinstance(value, str):
            try:
                when = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError:
                raise self.problem(path, f"clock must be a timestamp, not {value!r}") from None
        else:
            raise self.problem(path, f"clock must be a timestamp, not {_kind(value)}")
        if when.tzinfo is None:
            raise self.problem(path, "clock must have a time zone (Z, or an offset such as +02:00)")
        return when.astimezone(UTC)

    # -- the file --

    def file(self, document: object) -> list[Scenario]:
        if document is None:
            self.problem((), "the file is empty: expected a map with `scenarios`")
            return []
        try:
            top = self.mapping(document, (), "a scenario file")
        except _Invalid:
            return []
        self.keys(top, _FILE_KEYS, ())
        try:
            definition = self.definition_of(top.get("definition"), ("definition",), None)
        except _Invalid:
            definition, self.definition_broken = None, True
        clock = DEFAULT_START
        if "clock" in top:
            with contextlib.suppress(_Invalid):
                clock = self.clock(top["clock"], ("clock",))
        raw = top.get("scenarios")
        if not isinstance(raw, list) or not raw:
            self.problem(("scenarios",), "scenarios must be a non-empty list of scenarios")
            return []
        scenarios: list[Scenario] = []
        for i, item in enumerate(raw):
            try:
                scenarios.extend(self.scenario(item, ("scenarios", i), definition, clock))
            except _Invalid:
                continue
        seen: dict[str, int] = {}
        for scenario in scenarios:
            if scenario.name in seen:
                self.problems.append(
                    Problem(
                        "",
                        f"scenario name {scenario.name!r} is used twice (lines "
                        f"{seen[scenario.name]} and {scenario.line}); every scenario needs a "
                        "name of its own",
                        line=scenario.line,
                    )
                )
            seen.setdefault(scenario.name, scenario.line or 0)
        return scenarios

    def definition_of(
        self, value: object, path: Path_, inherited: FileReport | None
    ) -> FileReport | None:
        """The definition file a ``definition`` names (a file, a name, or a map with
        ``name`` and ``version``); without one, what the file says, else the definition
        beside this file that shares its name."""
        here = self.path.parent
        if value is None:
            if inherited is not None or path != ("definition",):
                return inherited
            default = default_definition(self.path)
            return None if default is None else self.checked(self.catalog.file(default), path)
        name: str | None = None
        version: int | None = None
        if isinstance(value, str) and (value.endswith(SUFFIXES) or "/" in value):
            target = here / value
            if not target.is_file():
                raise self.problem(path, f"definition file {value!r} not found beside this file")
            return self.checked(self.catalog.file(target), path)
        if isinstance(value, str):
            name = value
        elif isinstance(value, Mapping):
            self.keys(value, ("name", "version"), path)
            name = self.text(value.get("name"), (*path, "name"), "definition.name")
            raw_version = value.get("version")
            if raw_version is not None:
                if isinstance(raw_version, bool) or not isinstance(raw_version, int):
                    raise self.problem((*path, "version"), "version must be a positive integer")
                version = raw_version
        else:
            raise self.problem(
                path, f"definition must be a file, a name or {{name, version}}, not {_kind(value)}"
            )
        found = self.catalog.named(name, version, here)
        if not found:
            what = f"{name!r}" + ("" if version is None else f" version {version}")
            raise self.problem(
                path,
                f"no definition {what} in the definitions beside this file or in --definitions"
                + did_you_mean(name, self.catalog.names(here)),
            )
        return self.checked(found[0], path)

    def checked(self, report: FileReport, path: Path_) -> FileReport:
        if report.definition is None:
            lines = "; ".join(report.lines("error")) or "it could not be read"
            raise self.problem(path, f"the definition has errors: {lines}")
        return report

    def scenario(
        self,
        value: object,
        path: Path_,
        inherited: FileReport | None,
        clock: datetime,
    ) -> list[Scenario]:
        raw = self.mapping(value, path, "a scenario")
        self.keys(raw, _SCENARIO_KEYS, path)
        name = raw.get("name")
        if name is None:
            name = f"scenario {path[-1] + 1 if isinstance(path[-1], int) else 1}"
        name = self.text(name if isinstance(name, str) else str(name), (*path, "name"), "name")
        report = self.definition_of(raw.get("definition"), (*path, "definition"), inherited)
        if report is None:
            if self.definition_broken:
                raise _Invalid()  # the file's `definition` has its problem already
            raise self.problem(
                path,
                "no definition: name one with `definition:` (in the scenario or at the top of "
                f"the file), or put it beside this file as {self.default_name()}",
            )
        assert report.definition is not None
        if "clock" in raw:
            clock = self.clock(raw["clock"], (*path, "clock"))
        rows = self.table(raw.get("table"), (*path, "table")) if "table" in raw else [{}]
        steps = raw.get("steps")
        if not isinstance(steps, list) or not steps:
            raise self.problem((*path, "steps"), "steps must be a non-empty list of steps")
        out = []
        for row in rows:
            named = _substitute(name, row) if row else name
            if row and named == name:
                named = f"{name} [{', '.join(f'{k}={_shown(v)}' for k, v in row.items())}]"
            reader = _StepsReader(self, report.definition, row, path)
            parsed = reader.steps(steps, (*path, "steps"))
            if parsed is None:
                if row:
                    continue
                raise _Invalid()
            out.append(
                Scenario(
                    file=self.path,
                    name=str(named),
                    line=self.line(path),
                    report=report,
                    definition=report.definition,
                    steps=tuple(parsed),
                    clock=clock,
                    parameters=dict(row),
                )
            )
        return out

    def default_name(self) -> str:
        for suffix in SCENARIO_SUFFIXES:
            if self.path.name.endswith(suffix):
                return self.path.name[: -len(suffix)] + ".yaml"
        return "NAME.yaml"

    def table(self, value: object, path: Path_) -> list[dict[str, Any]]:
        """Rows of parameters: a list of maps, or a list of lists whose first is the header."""
        if not isinstance(value, list) or not value:
            raise self.problem(path, "table must be a non-empty list of rows")
        if all(isinstance(row, list) for row in value):
            header = value[0]
            if not header or not all(isinstance(h, str) and h for h in header):
                raise self.problem((*path, 0), "a table's first row names its columns")
            if len(value) < 2:
                raise self.problem(path, "the table has a header and no rows")
            rows = []
            for i, row in enumerate(value[1:], 1):
                if len(row) != len(header):
                    raise self.problem(
                        (*path, i), f"row has {len(row)} values for {len(header)} columns"
                    )
                self.json(row, (*path, i))
                rows.append(dict(zip(header, row, strict=True)))
            return rows
        rows = []
        for i, row in enumerate(value):
            mapping = self.mapping(row, (*path, i), "a table row")
            self.json(mapping, (*path, i))
            rows.append(dict(mapping))
        columns = set(rows[0])
        for i, row in enumerate(rows):
            if set(row) != columns:
                raise self.problem(
                    (*path, i), f"row names {sorted(row)}; the first row names {sorted(columns)}"
                )
        return rows


class _StepsReader:
    """The steps of one scenario (of one row of its table), checked against its definition."""

    def __init__(
        self, reader: _Reader, definition: Definition, row: Mapping[str, Any], path: Path_
    ) -> None:
        self.r = reader
        self.d = definition
        self.row = row
        self.path = path
        self.failed = False

    def problem(self, path: Path_, message: str) -> _Invalid:
        if self.row:
            message += f" (table row {_row_text(self.row)})"
        self.failed = True
        return self.r.problem(path, message)

    def steps(self, raw: list[Any], path: Path_) -> list[Step] | None:
        before = len(self.r.problems)
        steps: list[Step] = []
        for i, item in enumerate(raw):
            try:
                value = _substitute(item, self.row, self, (*path, i)) if self.row else item
                steps.append(self.step(value, (*path, i), i + 1, started=bool(steps)))
            except _Invalid:
                self.failed = True
        if steps and not isinstance(steps[0].action, Start) and not self.failed:
            self.problem((*path, 0), "a scenario's first step is `start`")
        return None if self.failed or len(self.r.problems) > before else steps

    def step(self, value: object, path: Path_, index: int, *, started: bool) -> Step:
        raw = self.r.mapping(value, path, "a step")
        kinds = [k for k in raw if k in _STEP_KINDS]
        extra = [k for k in raw if k not in _STEP_KINDS and k != "expect"]
        if extra:
            allowed = (*_STEP_KINDS, "expect")
            for key in extra:
                self.problem(
                    (*path, str(key)),
                    f"unknown step {key!r}; a step is one of {', '.join(_STEP_KINDS)}, with or "
                    "without `expect`" + did_you_mean(key, allowed),
                )
            raise _Invalid()
        if len(kinds) > 1:
            raise self.problem(path, f"a step does one thing; this one has {', '.join(kinds)}")
        expect_raw = raw.get("expect")
        expect = None
        refusal_expected = False
        if "expect" in raw:
            expect = self.expect(expect_raw, (*path, "expect"))
            refusal_expected = expect.refused is not None
        if not kinds:
            if expect is None:
                raise self.problem(path, "an empty step: give one of " + ", ".join(_STEP_KINDS))
            return Step(index, Check(), expect, self.r.line(path), "expect")
        kind = kinds[0]
        arg = raw[kind]
        at = (*path, kind)
        if kind == "start" and started:
            raise self.problem(at, "a scenario starts its instance once, in its first step")
        action, text = self.action(kind, arg, at, lenient=refusal_expected)
        return Step(index, action, expect, self.r.line(path), text)

    def action(self, kind: str, arg: object, path: Path_, *, lenient: bool) -> tuple[Action, str]:
        """``lenient``: the step expects a refusal, so what the definition declares (its
        events, fields, queues) is not held against it."""
        if kind == "start":
            return self.start(arg, path, lenient=lenient)
        if kind == "resume":
            return self.resume(arg, path, lenient=lenient)
        if kind == "signal":
            return self.signal(arg, path, lenient=lenient)
        if kind == "task":
            return self.task(arg, path, lenient=lenient)
        if kind == "advance":
            delta = self.r.duration(arg, path, "advance")
            return Advance(delta, str(arg)), f"advance {arg}"
        return self.cancel(arg, path)

    def start(self, arg: object, path: Path_, *, lenient: bool) -> tuple[Action, str]:
        r = self.r
        if arg is None:
            return Start({}, DEFAULT_WORKFLOW_ID), "start"
        raw = r.mapping(arg, path, "start")
        r.keys(raw, ("input", "workflow_id"), path)
        values = r.values(raw.get("input"), (*path, "input"), "start.input")
        if not lenient:
            self.fields(values, (*path, "input"))
        workflow_id = raw.get("workflow_id", DEFAULT_WORKFLOW_ID)
        workflow_id = r.text(workflow_id, (*path, "workflow_id"), "workflow_id")
        return Start(values, workflow_id), "start"

    def resume(self, arg: object, path: Path_, *, lenient: bool) -> tuple[Action, str]:
        r = self.r
        values: dict[str, Any] = {}
        if arg is None or isinstance(arg, str):
            event = arg or ""
        else:
            raw = r.mapping(arg, path, "resume")
            r.keys(raw, ("event", "input"), path)
            event = raw.get("event") or ""
            if not isinstance(event, str):
                raise self.problem((*path, "event"), "event must be a string")
            values = r.values(raw.get("input"), (*path, "input"), "resume.input")
            if not lenient:
                self.fields(values, (*path, "input"))
        if event and not lenient:
            self.event(event, path)
        return Resume(event, values), f"resume {event}".rstrip()

    def signal(self, arg: object, path: Path_, *, lenient: bool) -> tuple[Action, str]:
        r = self.r
        if isinstance(arg, str):
            event, payload = arg, {}
        else:
            raw = r.mapping(arg, path, "signal")
            r.keys(raw, ("event", "payload"), path)
            event = r.text(raw.get("event"), (*path, "event"), "signal.event")
            payload = r.values(raw.get("payload"), (*path, "payload"), "signal.payload")
        if not lenient:
            self.event(event, path)
        return Signal(event, payload), f"signal {event}"

    def cancel(self, arg: object, path: Path_) -> tuple[Action, str]:
        if arg is None or isinstance(arg, str):
            return Cancel(arg or ""), "cancel"
        raw = self.r.mapping(arg, path, "cancel")
        self.r.keys(raw, ("reason",), path)
        reason = raw.get("reason") or ""
        if not isinstance(reason, str):
            raise self.problem((*path, "reason"), "reason must be a string")
        return Cancel(reason), "cancel"

    def task(self, arg: object, path: Path_, *, lenient: bool) -> tuple[Action, str]:
        r = self.r
        raw = r.mapping(arg, path, "task")
        r.keys(raw, _TASK_KEYS, path)
        queue = r.text(raw.get("queue"), (*path, "queue"), "task.queue")
        queues = sorted({s.task.queue for s in self.d.states.values() if s.task is not None})
        if queue not in queues and not lenient:
            known = ", ".join(queues) if queues else "none: it has no task state"
            raise self.problem(
                (*path, "queue"),
                f"{self.d.name} v{self.d.version} has no task on queue {queue!r} (its queues: "
                f"{known})" + did_you_mean(queue, queues),
            )
        expected_input = None
        if "input" in raw:
            expected_input = r.values(raw["input"], (*path, "input"), "task.input")
        answers = [k for k in ("complete", "fail", "timeout") if k in raw]
        if len(answers) != 1:
            raise self.problem(
                path,
                "a task step answers the task one way: complete (a result), fail (an error) or "
                f"timeout; this one has {', '.join(answers) or 'none'}",
            )
        answer: Complete | Fail | Timeout
        how = answers[0]
        if how == "complete":
            answer = Complete(r.values(raw["complete"], (*path, "complete"), "task.complete"))
        elif how == "fail":
            answer = self.fail(raw["fail"], (*path, "fail"))
        else:
            if raw["timeout"] is not True:
                raise self.problem((*path, "timeout"), "timeout takes `true`")
            answer = Timeout()
        return Task(queue, answer, expected_input), f"task {queue} {how}"

    def fail(self, arg: object, path: Path_) -> Fail:
        r = self.r
        if isinstance(arg, str):
            return Fail(arg)
        raw = r.mapping(arg, path, "fail")
        r.keys(raw, _FAIL_KEYS, path)
        kind = r.text(raw.get("type"), (*path, "type"), "fail.type")
        message = raw.get("message", "")
        if not isinstance(message, str):
            raise self.problem((*path, "message"), "message must be a string")
        details = r.values(raw.get("details"), (*path, "details"), "fail.details")
        non_retryable = raw.get("non_retryable", False)
        if not isinstance(non_retryable, bool):
            raise self.problem((*path, "non_retryable"), "non_retryable is true or false")
        retry_after = None
        if "retry_after" in raw:
            retry_after = r.duration(raw["retry_after"], (*path, "retry_after"), "retry_after")
        return Fail(kind, message, details, non_retryable, retry_after)

    def expect(self, value: object, path: Path_) -> Expect:
        r = self.r
        raw = r.mapping(value, path, "expect")
        r.keys(raw, _EXPECT_KEYS, path)
        out: dict[str, Any] = {}
        if "state" in raw:
            state = r.text(raw["state"], (*path, "state"), "expect.state")
            if state not in self.d.states:
                raise self.problem(
                    (*path, "state"),
                    f"{self.d.name} v{self.d.version} has no state {state!r}"
                    + did_you_mean(state, self.d.states),
                )
            out["state"] = state
        if "status" in raw:
            status = r.text(raw["status"], (*path, "status"), "expect.status").upper()
            if status not in STATUSES:
                raise self.problem(
                    (*path, "status"),
                    f"status is one of {', '.join(STATUSES)}, not {raw['status']!r}",
                )
            out["status"] = status
        if "context" in raw:
            context = r.values(raw["context"], (*path, "context"), "expect.context")
            self.fields(context, (*path, "context"))
            out["context"] = context
        if "timers" in raw:
            out["timers"] = self.timers(raw["timers"], (*path, "timers"))
        if "tasks" in raw:
            out["tasks"] = self.tasks(raw["tasks"], (*path, "tasks"))
        if "failure" in raw:
            out["failure"] = self.failure(raw["failure"], (*path, "failure"))
        if "refused" in raw:
            out["refused"] = self.refusal(raw["refused"], (*path, "refused"))
        if "revision" in raw:
            revision = raw["revision"]
            if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
                raise self.problem((*path, "revision"), "revision must be a positive integer")
            out["revision"] = revision
        return Expect(line=r.line(path), **out)

    def timers(self, value: object, path: Path_) -> tuple[TimerExpect, ...]:
        r = self.r
        if not isinstance(value, list):
            raise self.problem(path, "timers must be a list of {target, due} (or [] for none)")
        targets = sorted({t.target for t in self.d.transitions if t.after is not None})
        out = []
        for i, item in enumerate(value):
            at = (*path, i)
            raw = r.mapping(item, at, "a timer")
            r.keys(raw, ("target", "due"), at)
            target = r.text(raw.get("target"), (*at, "target"), "timer target")
            if target not in targets:
                raise self.problem(
                    (*at, "target"),
                    f"no timer of {self.d.name} v{self.d.version} leads to {target!r} (timers "
                    f"lead to: {', '.join(targets) or 'none'})" + did_you_mean(target, targets),
                )
            due = r.duration(raw["due"], (*at, "due"), "due") if "due" in raw else None
            out.append(TimerExpect(target, due))
        return tuple(out)

    def tasks(self, value: object, path: Path_) -> tuple[TaskExpect, ...]:
        r = self.r
        if not isinstance(value, list):
            raise self.problem(path, "tasks must be a list of {queue, ...} (or [] for none)")
        out = []
        for i, item in enumerate(value):
            at = (*path, i)
            raw = r.mapping(item, at, "a task")
            r.keys(raw, ("queue", "input", "attempt", "status"), at)
            queue = r.text(raw.get("queue"), (*at, "queue"), "task queue")
            expected_input = None
            if "input" in raw:
                expected_input = r.values(raw["input"], (*at, "input"), "task input")
            attempt = raw.get("attempt")
            if attempt is not None and (
                isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0
            ):
                raise self.problem((*at, "attempt"), "attempt must be 0 or more")
            status = raw.get("status")
            if status is not None:
                status = r.text(status, (*at, "status"), "task status").upper()
                if status not in ("SCHEDULED", "LEASED", "BACKOFF"):
                    raise self.problem(
                        (*at, "status"), "an open task is SCHEDULED, LEASED or BACKOFF"
                    )
            out.append(TaskExpect(queue, expected_input, attempt, status))
        return tuple(out)

    def failure(self, value: object, path: Path_) -> Failure:
        r = self.r
        if value is None:
            return NO_FAILURE
        if isinstance(value, str):
            return Failure(reason=value)
        raw = r.mapping(value, path, "failure")
        r.keys(raw, ("reason", "message"), path)
        reason = raw.get("reason")
        message = raw.get("message")
        if reason is not None:
            reason = r.text(reason, (*path, "reason"), "failure.reason")
        if message is not None:
            message = r.text(message, (*path, "message"), "failure.message")
        if reason is None and message is None:
            raise self.problem(path, "failure names a reason, a message, or both")
        return Failure(reason, message)

    def refusal(self, value: object, path: Path_) -> Refusal:
        r = self.r
        if isinstance(value, str) and value:
            return Refusal(reason=value)
        raw = r.mapping(value, path, "refused")
        r.keys(raw, ("reason", "code", "message"), path)
        parts = {}
        for key in ("reason", "code", "message"):
            if key in raw:
                parts[key] = r.text(raw[key], (*path, key), f"refused.{key}")
        if not parts:
            raise self.problem(path, "refused names a reason, a code, a message, or some of them")
        return Refusal(**parts)

    def fields(self, values: Mapping[str, Any], path: Path_) -> None:
        fields = self.d.context_fields
        for key in values:
            if key not in fields:
                raise self.problem(
                    (*path, key),
                    f"{key!r} is not a context field of {self.d.name} v{self.d.version}"
                    + did_you_mean(key, fields),
                )

    def event(self, event: str, path: Path_) -> None:
        events = [e for e in self.d.all_events if e != TASK_FAILED]
        if event not in self.d.all_events and event != "resume":
            raise self.problem(
                path,
                f"{self.d.name} v{self.d.version} declares no event {event!r} (its events: "
                f"{', '.join(events) or 'none'})" + did_you_mean(event, events),
            )


# -- parameters ----------------------------------------------------------------------------


def _substitute(
    value: Any,
    row: Mapping[str, Any],
    steps: _StepsReader | None = None,
    path: Path_ = (),
) -> Any:
    """``value`` with ``${name}`` replaced by the row's value: a string that is only a
    parameter takes the value itself (a number stays a number), one that holds some has
    them written in."""
    if isinstance(value, str):
        whole = _PARAMETER.fullmatch(value)
        if whole is not None:
            return _parameter(whole.group(1), row, steps, path)
        return _PARAMETER.sub(lambda m: _shown(_parameter(m.group(1), row, steps, path)), value)
    if isinstance(value, list):
        return [_substitute(v, row, steps, (*path, i)) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        return {k: _substitute(v, row, steps, (*path, k)) for k, v in value.items()}
    return value


def _parameter(name: str, row: Mapping[str, Any], steps: _StepsReader | None, path: Path_) -> Any:
    if name in row:
        return row[name]
    if steps is None:
        return "${" + name + "}"
    raise steps.problem(
        path,
        f"no column {name!r} in the table (its columns: {', '.join(row)})"
        + did_you_mean(name, row),
    )


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def _row_text(row: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={_shown(v)}" for k, v in row.items())


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}" if value else "an empty string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a map"
    return type(value).__name__


# -- entry points --------------------------------------------------------------------------


def read_scenario_file(path: Path, catalog: Catalog | None = None) -> ScenarioFile:
    """Every scenario of ``path`` and every problem of it."""
    catalog = catalog or Catalog()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problem = Problem("", f"cannot read: {getattr(exc, 'strerror', None) or exc}")
        return ScenarioFile(path, (), (problem,))
    document, problems = parse_document(text)
    reader = _Reader(path, text, catalog)
    scenarios = reader.file(document) if document is not None or not problems else []
    found = [*problems, *reader.problems]
    return ScenarioFile(path, tuple(scenarios) if not found else (), tuple(found))


def scenario_files(paths: Sequence[str]) -> tuple[list[Path], list[str]]:
    """The scenario files ``paths`` name (directories searched for ``*.test.yaml``), and
    the paths that do not exist."""
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and p.name.endswith(SCENARIO_SUFFIXES)
                    and not any(
                        part.startswith(".") or part == "node_modules"
                        for part in p.relative_to(path).parts
                    )
                )
            )
        elif path.is_file():
            files.append(path)
        else:
            missing.append(raw)
    return list(dict.fromkeys(files)), missing
