"""The Python conformance runner: executes ``clients/conformance/scenario.yaml`` live.

    STATEWRIGHT_ADDRESS=127.0.0.1:50051 python -m statewright.conformance [SCENARIO]

The connection is the client's default one: the address (STATEWRIGHT_ADDRESS, or the older
STATEWRIGHT_TARGET), and TLS and a token from STATEWRIGHT_TLS_CA, STATEWRIGHT_TLS_CERT,
STATEWRIGHT_TLS_KEY and STATEWRIGHT_TOKEN when they are set.

Every step goes through the ergonomic :class:`statewright.Client` (not the raw stubs), and
``RunWorker`` through :class:`statewright.Worker`, so the run proves the client, not only
the server. A step passes only if every expectation holds; an op, request field or
expectation key the runner does not know fails the step too, so a scenario edit can never
pass by being silently ignored. The last line is
``conformance: N passed, M failed``; the exit status is 1 when anything failed.

Needs PyYAML (installed with the server's development dependencies).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from statewright import _security
from statewright.client import Client
from statewright.errors import StatewrightError
from statewright.models import SignalResult, StepResult, Task, WatchEvent, Workflow
from statewright.worker import RunningTask, TaskFailure, Worker

__all__ = [
    "ConformanceError",
    "Runner",
    "default_scenario_path",
    "fill_input",
    "main",
    "parse_duration",
    "subset_mismatches",
]

# clients/python/statewright/conformance.py -> clients/conformance/scenario.yaml
DEFAULT_SCENARIO = Path(__file__).resolve().parents[2] / "conformance" / "scenario.yaml"
WATCH_FIRST_TIMEOUT = 10.0
WATCH_END_TIMEOUT = 20.0
READY_TIMEOUT = 30.0
# RunWorker: how often the instance is read while the worker runs, the worker's grace for
# running handlers at shutdown (they return at once), and how long run() may take to
# return after stop() before the step fails.
WORKER_CHECK_INTERVAL = 0.1
WORKER_SHUTDOWN_GRACE = 5.0
WORKER_STOP_TIMEOUT = 30.0
# A handler that cannot build its answer (a missing ${input.KEY}) fails its task with this
# type, for good, so the run does not wait out the task's retries.
RUNNER_FAILURE_TYPE = "CONFORMANCE_RUNNER"

_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_.]+)\}")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m)?$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}
_STEP_KEYS = ["id", "op", "request", "expect", "save", "repeat"]
# Step keys only some ops read: anywhere else they would be ignored, so they fail the step.
_OP_STEP_KEYS = {"AwaitWatch": ["watch"], "RunWorker": ["handlers", "until", "timeout"]}
_WORKFLOW_KEYS = [
    "status", "state", "revision", "run", "accepted_events", "context", "pending_task",
]  # fmt: skip
_TASK_KEYS = ["state", "queue", "status", "attempt"]


def _if_exists(name: str | None) -> Any:
    """The client's if_exists value for the enum's proto name the scenario spells
    (IF_EXISTS_POLICY_RESTART -> "restart"), which the other runners read as it is."""
    if name is None:
        return None
    prefix = "IF_EXISTS_POLICY_"
    _require(name.startswith(prefix), f"if_exists: expected {prefix}..., got {name!r}")
    return name.removeprefix(prefix).lower()


class ConformanceError(AssertionError):
    """A step did not behave as the scenario says."""


def default_scenario_path() -> Path:
    return DEFAULT_SCENARIO


def load_scenario(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as handle:
        data = yaml.safe_load(handle)
    if not isinstance(data, dict) or data.get("version") != 1:
        raise ConformanceError(f"{path}: expected a version 1 scenario")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise ConformanceError(f"{path}: the scenario has no steps")
    return data


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ConformanceError(message)


def _check_keys(kind: str, given: Mapping[str, Any], known: Sequence[str]) -> None:
    unknown = sorted(set(given) - set(known))
    _require(not unknown, f"unknown {kind} key(s) {unknown}; this runner knows {sorted(known)}")


def parse_duration(value: object) -> float:
    """Seconds from a scenario duration: ``60s``, ``1.5s``, ``250ms``, ``2m`` or a number."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value).strip())
        _require(match is not None, f"not a duration (like 60s, 250ms, 2m): {value!r}")
        assert match is not None
        seconds = float(match.group(1)) * _DURATION_UNITS[match.group(2) or "s"]
    _require(seconds > 0, f"a duration must be more than 0: {value!r}")
    return seconds


def fill_input(value: Any, task_input: Mapping[str, Any]) -> Any:
    """``value`` with every ``${input.KEY}`` in its strings replaced by the task input's KEY
    (a string as it is, anything else as compact JSON); a missing KEY is a ConformanceError."""
    if isinstance(value, str):

        def one(match: re.Match[str]) -> str:
            source, _, key = match.group(1).partition(".")
            if source != "input":
                return match.group(0)
            _require(key in task_input, f"${{input.{key}}}: the task input has no {key!r}")
            item = task_input[key]
            return item if isinstance(item, str) else json.dumps(item, separators=(",", ":"))

        return _VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [fill_input(item, task_input) for item in value]
    if isinstance(value, dict):
        return {key: fill_input(item, task_input) for key, item in value.items()}
    return value


def subset_mismatches(expected: Any, actual: Any, path: str) -> list[str]:
    """Where ``actual`` does not match ``expected`` (empty when it does).

    A map matches when every key given matches (other keys may exist), recursively; a list
    when it has as many elements and each matches; a number equals another of any numeric
    type (context numbers arrive as floats); true and false match only themselves.
    """
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected a map, got {actual!r}"]
        found: list[str] = []
        for key, want in expected.items():
            if key not in actual:
                found.append(f"{path}.{key}: missing (expected {want!r})")
            else:
                found.extend(subset_mismatches(want, actual[key], f"{path}.{key}"))
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        return [
            problem
            for i, (want, got) in enumerate(zip(expected, actual, strict=True))
            for problem in subset_mismatches(want, got, f"{path}[{i}]")
        ]
    if isinstance(expected, bool) or isinstance(actual, bool):
        same = type(expected) is type(actual) and expected == actual
    elif isinstance(expected, int | float) and isinstance(actual, int | float):
        same = expected == actual
    else:
        same = type(expected) is type(actual) and expected == actual
    return [] if same else [f"{path}: expected {expected!r}, got {actual!r}"]


@dataclass
class _Watch:
    """A watch consumed on a background thread while later steps run."""

    events: list[WatchEvent] = field(default_factory=list)
    error: BaseException | None = None
    first: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    def consume(self, events: Iterator[WatchEvent]) -> None:
        try:
            for event in events:
                self.events.append(event)
                self.first.set()
        except BaseException as exc:  # reported by AwaitWatch, never lost
            self.error = exc
        finally:
            self.first.set()
            self.done.set()


class Runner:
    """Runs one scenario against one client; ``run`` returns the number of failed steps."""

    def __init__(
        self,
        client: Client,
        scenario: Mapping[str, Any],
        *,
        run_id: str | None = None,
        out: TextIO | None = None,
    ) -> None:
        self.client = client
        self.scenario = scenario
        self.run_id = run_id or f"{int(time.time())}-{secrets.token_hex(3)}"
        self.out = out or sys.stdout
        self.saved: dict[str, dict[str, Any]] = {}
        self.watches: dict[str, _Watch] = {}
        self.passed = 0
        self.failed = 0
        self._ops: dict[str, Callable[[Mapping[str, Any], dict[str, str]], str]] = {
            "StartWorkflow": self._start,
            "ResumeWorkflow": self._resume,
            "SignalWorkflow": self._signal,
            "GetWorkflow": self._get,
            "CancelWorkflow": self._cancel,
            "WatchWorkflow": self._watch,
            "AwaitWatch": self._await_watch,
            "ListWorkflows": self._list,
            "GetDiagnostics": self._diagnostics,
            "RunWorker": self._run_worker,
        }

    # --- driver -------------------------------------------------------------------------

    def wait_until_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Polls GetDiagnostics until the server answers, so a just-started server is fine."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.client.diagnostics(timeout=2.0)
                return
            except StatewrightError as exc:
                if time.monotonic() >= deadline:
                    raise ConformanceError(f"server {self.client.target} not ready: {exc}") from exc
                time.sleep(0.2)

    def run(self) -> int:
        self._print(f"conformance run {self.run_id} against {self.client.target}")
        for step in self.scenario["steps"]:
            step_id = str(step.get("id", "?"))
            try:
                detail = self._run_step(step)
            except (ConformanceError, StatewrightError, KeyError, TypeError, ValueError) as exc:
                self.failed += 1
                self._print(f"FAIL {step_id}: {type(exc).__name__}: {exc}")
            else:
                self.passed += 1
                self._print(f"PASS {step_id}{': ' + detail if detail else ''}")
        self._print(f"conformance: {self.passed} passed, {self.failed} failed")
        return self.failed

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def _run_step(self, step: Mapping[str, Any]) -> str:
        op = step.get("op")
        handler = self._ops.get(str(op))
        _require(handler is not None, f"unknown op {op!r}; this runner knows {sorted(self._ops)}")
        assert handler is not None
        _check_keys("step", step, _STEP_KEYS + _OP_STEP_KEYS.get(str(op), []))
        repeat = int(step.get("repeat", 1))
        _require(repeat >= 1, "repeat must be at least 1")
        details = []
        for i in range(repeat):
            variables = {"run": self.run_id, "i": str(i)}
            details.append(handler(step, variables))
        return details[0] if repeat == 1 else f"{repeat}x {details[-1]}"

    # --- substitution -------------------------------------------------------------------

    def _substitute(
        self, value: Any, variables: Mapping[str, str], *, keep: Sequence[str] = ()
    ) -> Any:
        """``value`` with ``${...}`` replaced; a ``${source.KEY}`` whose source is in ``keep``
        stays as it is, for a later substitution (a handler's ``${input.KEY}``)."""
        if isinstance(value, str):
            return _VARIABLE.sub(lambda m: self._variable(m, variables, keep), value)
        if isinstance(value, list):
            return [self._substitute(item, variables, keep=keep) for item in value]
        if isinstance(value, dict):
            return {
                key: self._substitute(item, variables, keep=keep) for key, item in value.items()
            }
        return value

    def _variable(
        self, match: re.Match[str], variables: Mapping[str, str], keep: Sequence[str]
    ) -> str:
        name = match.group(1)
        if name in variables:
            return variables[name]
        if "." in name and name.partition(".")[0] in keep:
            return match.group(0)
        saved, _, attribute = name.partition(".")
        _require(saved in self.saved, f"${{{name}}}: no step saved {saved!r}")
        _require(attribute in self.saved[saved], f"${{{name}}}: no field {attribute!r}")
        return str(self.saved[saved][attribute])

    def _request(
        self, step: Mapping[str, Any], variables: Mapping[str, str], known: Sequence[str]
    ) -> dict[str, Any]:
        request: dict[str, Any] = self._substitute(dict(step.get("request") or {}), variables)
        _check_keys("request", request, known)
        return request

    def _expect(self, step: Mapping[str, Any], variables: Mapping[str, str]) -> dict[str, Any]:
        return dict(self._substitute(dict(step.get("expect") or {}), variables))

    # --- expectations -------------------------------------------------------------------

    def _unary(
        self,
        step: Mapping[str, Any],
        variables: Mapping[str, str],
        call: Callable[[], StepResult | SignalResult | Workflow],
    ) -> str:
        expect = self._expect(step, variables)
        if "error" in expect:
            _check_keys("expect", expect, ["error"])
            return self._expect_error(call, expect["error"])
        try:
            result = call()
        except StatewrightError as exc:
            raise ConformanceError(f"unexpected error {exc!r}") from exc
        workflow = result if isinstance(result, Workflow) else result.workflow
        if isinstance(result, SignalResult):
            self._check_signal(result, expect)
            expect = {k: v for k, v in expect.items() if k not in ("accepted", "reason")}
        self._check_workflow(workflow, expect)
        if "save" in step:
            self.saved[str(step["save"])] = dict(workflow.to_dict())
        return f"{workflow.name} {workflow.status.value} r{workflow.revision}"

    def _expect_error(self, call: Callable[[], object], want: Mapping[str, Any]) -> str:
        _check_keys("error expectation", want, ["code", "reason", "domain", "metadata"])
        try:
            call()
        except StatewrightError as exc:
            self._compare("error code", exc.code.name, want.get("code"))
            self._compare("error reason", exc.reason, want.get("reason"))
            self._compare("error domain", exc.domain, want.get("domain"))
            for key, value in dict(want.get("metadata") or {}).items():
                self._compare(f"error metadata[{key}]", exc.metadata.get(key), str(value))
            return f"{exc.code.name}/{exc.reason}"
        raise ConformanceError(f"expected error {dict(want)}, but the call succeeded")

    @staticmethod
    def _compare(what: str, actual: object, expected: object) -> None:
        if expected is None:
            return
        _require(actual == expected, f"{what}: expected {expected!r}, got {actual!r}")

    def _check_workflow(self, workflow: Workflow, expect: Mapping[str, Any]) -> None:
        _check_keys("expect", expect, _WORKFLOW_KEYS)
        self._compare("status", workflow.status.value, expect.get("status"))
        self._compare("state", workflow.state, expect.get("state"))
        self._compare("revision", workflow.revision, expect.get("revision"))
        self._compare("run", workflow.run, expect.get("run"))
        if "accepted_events" in expect:
            self._compare(
                "accepted_events", list(workflow.accepted_events), list(expect["accepted_events"])
            )
        if "context" in expect:
            problems = subset_mismatches(expect["context"], workflow.context, "context")
            _require(not problems, "; ".join(problems))
        if "pending_task" in expect:
            self._check_pending_task(workflow.pending_task, expect["pending_task"])

    def _check_pending_task(self, task: Task | None, want: Mapping[str, Any] | None) -> None:
        if want is None:  # `pending_task: null`: the instance waits for no task
            _require(task is None, f"pending_task: expected none, got {_task_summary(task)}")
            return
        _check_keys("pending_task expectation", want, _TASK_KEYS)
        _require(task is not None, f"pending_task: expected {dict(want)}, got none")
        assert task is not None
        self._check_task("pending_task", task, want)

    def _check_task(self, what: str, task: Task, want: Mapping[str, Any]) -> None:
        self._compare(f"{what} state", task.state, want.get("state"))
        self._compare(f"{what} queue", task.queue, want.get("queue"))
        self._compare(f"{what} status", task.status.value, want.get("status"))
        self._compare(f"{what} attempt", task.attempt, want.get("attempt"))

    def _check_signal(self, result: SignalResult, expect: Mapping[str, Any]) -> None:
        self._compare("accepted", result.accepted, expect.get("accepted"))
        reason = result.reason.value if result.reason is not None else None
        self._compare("reason", reason, expect.get("reason"))

    def _check_watch_event(self, what: str, event: WatchEvent, want: Mapping[str, Any]) -> None:
        _check_keys(f"{what} expectation", want, ["type", "status", "state", "revision"])
        self._compare(f"{what} type", event.type.value, want.get("type"))
        self._compare(f"{what} status", event.workflow.status.value, want.get("status"))
        self._compare(f"{what} state", event.workflow.state, want.get("state"))
        self._compare(f"{what} revision", event.revision, want.get("revision"))

    # --- ops ----------------------------------------------------------------------------

    def _start(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(
            step,
            variables,
            ["definition", "workflow_id", "input", "version", "request_id", "if_exists"],
        )
        return self._unary(
            step,
            variables,
            lambda: self.client.start(
                r["definition"],
                r.get("input"),
                workflow_id=r.get("workflow_id"),
                version=r.get("version"),
                request_id=r.get("request_id"),
                if_exists=_if_exists(r.get("if_exists")),
            ),
        )

    def _resume(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(
            step, variables, ["name", "event", "input", "expected_revision", "request_id"]
        )
        return self._unary(
            step,
            variables,
            lambda: self.client.resume(
                r["name"],
                r.get("event"),
                r.get("input"),
                expected_revision=r.get("expected_revision"),
                request_id=r.get("request_id"),
            ),
        )

    def _signal(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(step, variables, ["name", "event", "payload", "request_id"])
        return self._unary(
            step,
            variables,
            lambda: self.client.signal(
                r["name"], r["event"], r.get("payload"), request_id=r.get("request_id")
            ),
        )

    def _get(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(step, variables, ["name"])
        return self._unary(step, variables, lambda: self.client.get(r["name"]))

    def _cancel(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(step, variables, ["name", "reason", "expected_revision", "request_id"])
        return self._unary(
            step,
            variables,
            lambda: self.client.cancel(
                r["name"],
                r.get("reason"),
                expected_revision=r.get("expected_revision"),
                request_id=r.get("request_id"),
            ),
        )

    def _watch(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(step, variables, ["name", "after_revision"])
        expect = self._expect(step, variables)
        _check_keys("expect", expect, ["first"])
        watch = _Watch()
        events = self.client.watch(r["name"], after_revision=r.get("after_revision"))
        threading.Thread(
            target=watch.consume, args=(events,), name=f"watch-{step['id']}", daemon=True
        ).start()
        self.watches[str(step["id"])] = watch
        # Later steps change the instance: they may only run once the watch has its first
        # message, or the CURRENT message could already show their effect.
        _require(
            watch.first.wait(WATCH_FIRST_TIMEOUT),
            f"no watch message within {WATCH_FIRST_TIMEOUT}s",
        )
        if watch.error is not None and not watch.events:
            raise ConformanceError(f"watch failed before its first message: {watch.error!r}")
        _require(bool(watch.events), "watch ended without a message")
        if "first" in expect:
            self._check_watch_event("first", watch.events[0], expect["first"])
        first = watch.events[0]
        return f"{first.type.value} r{first.revision} {first.workflow.status.value}"

    def _await_watch(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        name = str(step.get("watch"))
        _require(name in self.watches, f"no watch was opened by a step {name!r}")
        watch = self.watches[name]
        expect = self._expect(step, variables)
        _check_keys("expect", expect, ["last", "ends"])
        _require(
            watch.done.wait(WATCH_END_TIMEOUT),
            f"watch {name} did not end within {WATCH_END_TIMEOUT}s; saw "
            f"{[(e.type.value, e.revision) for e in watch.events]}",
        )
        ends = "OK" if watch.error is None else _code_name(watch.error)
        self._compare("watch end", ends, expect.get("ends"))
        revisions = [e.revision for e in watch.events]
        # Exactly once, in order: each revision one more than the one before.
        _require(
            all(b == a + 1 for a, b in itertools.pairwise(revisions)),
            f"watch revisions not consecutive: {revisions}",
        )
        if "last" in expect:
            _require(bool(watch.events), "watch delivered nothing")
            self._check_watch_event("last", watch.events[-1], expect["last"])
        return f"revisions {revisions}, ended {ends}"

    def _list(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        r = self._request(step, variables, ["definition", "status", "page_size"])
        expect = self._expect(step, variables)
        _check_keys(
            "expect", expect, ["min_pages", "page_size_at_most", "no_duplicates", "contains"]
        )
        pages = list(
            self.client.list_pages(
                definition=r.get("definition"), status=r.get("status"), page_size=r.get("page_size")
            )
        )
        ids = [w.workflow_id for page in pages for w in page.workflows]
        if "min_pages" in expect:
            _require(
                len(pages) >= int(expect["min_pages"]),
                f"expected at least {expect['min_pages']} pages, got {len(pages)}",
            )
        if "page_size_at_most" in expect:
            sizes = [len(page.workflows) for page in pages]
            _require(
                max(sizes, default=0) <= int(expect["page_size_at_most"]),
                f"page sizes {sizes} exceed {expect['page_size_at_most']}",
            )
        if expect.get("no_duplicates"):
            duplicates = sorted({i for i in ids if ids.count(i) > 1})
            _require(not duplicates, f"duplicated across pages: {duplicates}")
        missing = [i for i in expect.get("contains", []) if i not in ids]
        _require(not missing, f"missing from the listing: {missing}")
        return f"{len(pages)} pages, {len(ids)} workflows"

    def _diagnostics(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        self._request(step, variables, [])
        expect = self._expect(step, variables)
        _check_keys("expect", expect, ["build_version_set", "definitions_contain"])
        diagnostics = self.client.diagnostics()
        if expect.get("build_version_set"):
            _require(bool(diagnostics.build.version), "build.version is empty")
        missing = [
            d for d in expect.get("definitions_contain", []) if d not in diagnostics.definitions
        ]
        _require(not missing, f"definitions missing: {missing}")
        return f"build {diagnostics.build.version}, {len(diagnostics.definitions)} definitions"

    def _run_worker(self, step: Mapping[str, Any], variables: dict[str, str]) -> str:
        self._request(step, variables, [])
        _require("handlers" in step, "RunWorker needs handlers")
        _require("until" in step, "RunWorker needs until")
        handlers = self._substitute(step["handlers"], variables, keep=["input"])
        _require(
            isinstance(handlers, dict) and bool(handlers), "handlers: a map of queue to handler"
        )
        until = self._substitute(step["until"], variables)
        _require(isinstance(until, dict), "until: a map with the instance's name")
        _check_keys("until", until, ["name"])
        _require("name" in until, "until: the instance's name")
        name = str(until["name"])
        timeout = parse_duration(step.get("timeout", "60s"))
        expect = self._expect(step, variables)
        _check_keys("expect", expect, [*_WORKFLOW_KEYS, "tasks"])
        wanted_tasks = expect.pop("tasks", None)
        if wanted_tasks is not None:
            _require(isinstance(wanted_tasks, list), "expect.tasks: a list of tasks")
            for i, want in enumerate(wanted_tasks):
                _require(isinstance(want, dict), f"expect.tasks[{i}]: a map")
                _check_keys(f"expect.tasks[{i}]", want, _TASK_KEYS)

        handled = _Handled()
        worker = Worker(
            self.client,
            identity=f"conformance-{self.run_id}",
            shutdown_grace=WORKER_SHUTDOWN_GRACE,
        )
        for queue, spec in handlers.items():
            worker.register(str(queue), _task_handler(str(queue), spec, handled))
        run = _WorkerRun(worker)
        run.start(str(step.get("id", "worker")))
        try:
            final = self._await_terminal(name, timeout)
        finally:
            stopped = run.stop(WORKER_STOP_TIMEOUT)
        _require(stopped, f"the worker did not shut down within {WORKER_STOP_TIMEOUT}s")
        if run.error is not None:
            raise ConformanceError(f"the worker failed: {run.error!r}")
        _require(not handled.problems, "; ".join(handled.problems))
        _require(
            final.terminal,
            f"{name} not terminal within {timeout}s: {final.status.value} {final.state} "
            f"r{final.revision}, pending task {_task_summary(final.pending_task)}; "
            f"{handled.summary()}",
        )
        # After the shutdown: the instance as the worker left it.
        workflow = self.client.get(name)
        self._check_workflow(workflow, expect)
        tasks = list(self.client.list_tasks(workflow=name))
        if wanted_tasks is not None:
            listed = [_task_summary(t) for t in tasks]
            _require(
                len(tasks) == len(wanted_tasks),
                f"expected {len(wanted_tasks)} tasks, got {len(tasks)}: {listed}",
            )
            for i, (task, want) in enumerate(zip(tasks, wanted_tasks, strict=True)):
                self._check_task(f"tasks[{i}]", task, want)
        if "save" in step:
            self.saved[str(step["save"])] = dict(workflow.to_dict())
        return (
            f"{workflow.name} {workflow.status.value} r{workflow.revision} {workflow.state}, "
            f"{len(tasks)} tasks, {handled.count()} attempts handled"
        )

    def _await_terminal(self, name: str, timeout: float) -> Workflow:
        """The instance once its status is terminal, or as last read when ``timeout`` passed."""
        deadline = time.monotonic() + timeout
        while True:
            workflow = self.client.get(name)
            left = deadline - time.monotonic()
            if workflow.terminal or left <= 0:
                return workflow
            time.sleep(min(WORKER_CHECK_INTERVAL, left))


class _Handled:
    """What the handlers did, written from the worker's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.attempts: list[str] = []
        self.problems: list[str] = []

    def record(self, task: RunningTask, outcome: str) -> None:
        with self._lock:
            self.attempts.append(f"{task.queue} {task.name}#{task.attempt} {outcome}")

    def problem(self, text: str) -> None:
        with self._lock:
            self.problems.append(text)

    def count(self) -> int:
        with self._lock:
            return len(self.attempts)

    def summary(self) -> str:
        with self._lock:
            return f"handled {len(self.attempts)}: {self.attempts}"


def _task_handler(
    queue: str, spec: object, handled: _Handled
) -> Callable[[RunningTask], Mapping[str, object] | None]:
    """The handler a scenario gives a queue: ``{result: {...}}`` or ``{fail: {...}}``."""
    what = f"handlers.{queue}"
    _require(isinstance(spec, dict), f"{what}: a map with result or fail")
    assert isinstance(spec, dict)
    _check_keys(what, spec, ["result", "fail"])
    _require(len(spec) == 1, f"{what}: exactly one of result and fail")
    if "result" in spec:
        result = spec["result"]
        _require(isinstance(result, dict), f"{what}.result: a map")

        def complete(task: RunningTask) -> Mapping[str, object]:
            try:
                answer: dict[str, object] = fill_input(result, task.input)
            except ConformanceError as exc:
                handled.problem(f"{what} for {task.name}: {exc}")
                raise TaskFailure(RUNNER_FAILURE_TYPE, str(exc), non_retryable=True) from exc
            handled.record(task, "completed")
            return answer

        return complete
    fail = spec["fail"]
    _require(isinstance(fail, dict), f"{what}.fail: a map")
    _check_keys(f"{what}.fail", fail, ["type", "message", "non_retryable"])
    _require(isinstance(fail.get("type"), str) and bool(fail["type"]), f"{what}.fail: a type")
    non_retryable = fail.get("non_retryable", False)
    _require(isinstance(non_retryable, bool), f"{what}.fail.non_retryable: true or false")

    def failing(task: RunningTask) -> Mapping[str, object]:
        try:
            kind, message = fill_input([fail["type"], str(fail.get("message", ""))], task.input)
        except ConformanceError as exc:
            handled.problem(f"{what} for {task.name}: {exc}")
            raise TaskFailure(RUNNER_FAILURE_TYPE, str(exc), non_retryable=True) from exc
        handled.record(task, f"failed {kind}")
        raise TaskFailure(kind, message, non_retryable=non_retryable)

    return failing


class _WorkerRun:
    """A worker's ``run()`` on a background thread, as a program would run it on its own."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._run, name=f"worker-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.worker.run(handle_signals=False)
        except BaseException as exc:  # reported by the step, never lost
            self.error = exc

    def stop(self, timeout: float) -> bool:
        """Stops the worker gracefully; False if run() has not returned within ``timeout``."""
        self.worker.stop()
        assert self._thread is not None
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _task_summary(task: Task | None) -> str:
    if task is None:
        return "none"
    return f"{task.state}/{task.queue} {task.status.value} attempt {task.attempt}"


def _code_name(error: BaseException) -> str:
    return error.code.name if isinstance(error, StatewrightError) else type(error).__name__


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m statewright.conformance",
        description="Run the client conformance scenario against a live server.",
    )
    parser.add_argument(
        "scenario", nargs="?", type=Path, default=None, help=f"default: {DEFAULT_SCENARIO}"
    )
    address = os.environ.get(_security.ADDRESS_ENV) or os.environ.get(_security.TARGET_ENV)
    parser.add_argument(
        "--address",
        "--target",
        dest="target",
        default=address,
        help=f"host:port (default: ${_security.ADDRESS_ENV} or ${_security.TARGET_ENV}, required)",
    )
    args = parser.parse_args(argv)
    if not args.target:
        parser.error(f"set {_security.ADDRESS_ENV} or pass --address")
    path: Path = args.scenario or DEFAULT_SCENARIO
    if not path.is_file():
        parser.error(f"scenario not found: {path}")
    scenario = load_scenario(path)
    with Client(args.target) as client:
        runner = Runner(client, scenario)
        try:
            runner.wait_until_ready()
        except ConformanceError as exc:
            print(f"FAIL setup: {exc}\nconformance: 0 passed, 1 failed", flush=True)
            return 1
        return 1 if runner.run() else 0


if __name__ == "__main__":
    sys.exit(main())
