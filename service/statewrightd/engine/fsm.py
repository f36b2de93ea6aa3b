"""The FSM as pure functions: (definition, snapshot, event) -> StepResult.

No I/O, threads or randomness: the same arguments always give the same result, which
is what lets the runtime replay, test and reason about steps, with one exception: a step
has a budget of processor time (``StepLimits``), and one that runs out of it fails
(EVALUATION_BUDGET_EXCEEDED) at its next evaluation, so that no step holds the EventLoop
for long. The rules are the ones docs/execution.md states.

Choices made here that the rules leave open:
- ``workflow.revision`` in expressions is the revision the step will produce.
- Within one ``set`` block every expression sees the context as it was before the
  block; consecutive blocks (entry list items) see each other's results.
- A step that fails keeps what it did before the failure (state and context), so the
  failed snapshot shows where and with what data it stopped.
- An instance that finishes through ``__finish__`` stays in the state it left, COMPLETED:
  ``__finish__`` is never a state an instance is in, only the target of the transition
  taken (which history records as such).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import MappingProxyType

from statewrightd.definitions.cel import (
    Activation,
    CelBudgetExceeded,
    CelEvaluationError,
    CompiledExpression,
)
from statewrightd.definitions.model import (
    CHILD_FAILED,
    FINISH,
    RESUME_ALIAS,
    TASK_COMPLETED,
    TASK_FAILED,
    TIMER_EVENT,
    ChildSpec,
    Definition,
    SetAction,
    StateKind,
    TaskSpec,
    Transition,
    failed_event,
)
from statewrightd.definitions.problems import closest
from statewrightd.definitions.values import (
    JSONValue,
    Reducer,
    ValueTooDeep,
    ValueTypeError,
    conform,
    describe,
    reduce,
    to_json,
)
from statewrightd.domain import DEFAULT_PRIORITY, MAX_KEY_LENGTH, TERMINAL, Status
from statewrightd.domain import WORKFLOW_ID as CHILD_ID
from statewrightd.durations import MAX_DURATION_TEXT, too_long
from statewrightd.engine.model import (
    NO_TASK_WORK,
    NO_TIMER_WORK,
    FanOutProgress,
    ItemEnd,
    ItemRelease,
    Pause,
    PlannedTask,
    PlannedTimer,
    Snapshot,
    StepError,
    StepResult,
    TaskPlan,
    TimerPlan,
    TransitionTaken,
)
from statewrightd.engine.step_clock import step_time
from statewrightd.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    quote,
)
from statewrightd.reasons import Reason


class _StepFailed(Exception):
    """Internal: unwinds a step to turn it into a FAILED result (rule 4)."""

    def __init__(self, error: StepError) -> None:
        super().__init__(error.message)
        self.error = error


_LIVE = frozenset({Status.RUNNING, Status.WAITING})

# Processor time one step may use for its evaluations: past it, the step fails at its
# next evaluation. Each evaluation is bounded beforehand (statewrightd.definitions.cost),
# so a step ends within this plus one evaluation's budget.
STEP_CPU_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class StepLimits:
    """What one step may use: processor time, and the size of any one context value as
    JSON (checked as each is set, so that a value doubled step after step is stopped as
    soon as it is too large rather than when the step ends)."""

    cpu_seconds: float = STEP_CPU_SECONDS
    value_bytes: int = 256 * 1024
    map_items: int = 10_000  # the longest list a `map` state fans out


# Entering a `map` state evaluates each item's input: the step's budget grows by this much
# processor time per item, so that a long list is bounded rather than refused outright.
ITEM_CPU_SECONDS = 0.0002


DEFAULT_LIMITS = _DEFAULT_LIMITS = StepLimits()
_LIMITS: ContextVar[StepLimits | None] = ContextVar("step_limits", default=None)


@contextmanager
def limited(limits: StepLimits) -> Iterator[None]:
    """Run the steps inside under ``limits`` (the server's configured ones)."""
    token = _LIMITS.set(limits)
    try:
        yield
    finally:
        _LIMITS.reset(token)


def _json_size(value: JSONValue, limit: int) -> int:
    """The value's size in bytes of JSON, or a lower bound of it over ``limit``."""
    if value is None or isinstance(value, bool | int | float):
        return 8
    if isinstance(value, str):
        if len(value) > limit:
            return len(value)  # at least one byte a character
        if 6 * len(value) + 2 <= limit:
            return len(value) + 2  # even fully escaped it fits: no need to encode
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(encoded.encode())


def _step_error(reason: Reason, message: str, **metadata: object) -> _StepFailed:
    meta = {k: str(v) for k, v in metadata.items() if v is not None}
    return _StepFailed(StepError(reason.value, message, MappingProxyType(meta)))


class _Step:
    """Mutable scratch state of one step; never escapes this module."""

    __slots__ = (
        "context",
        "cpu_deadline",
        "cpu_seconds",
        "defn",
        "event",
        "fan_out",
        "finished",
        "map_items",
        "map_limit",
        "origin",
        "own_limit",
        "payload",
        "recursion_limit",
        "result_value",
        "revision",
        "starting",
        "state",
        "transitions",
        "value_bytes",
        "wall_deadline",
        "workflow_id",
    )

    def __init__(  # noqa: PLR0917 - internal, called from three places
        self,
        defn: Definition,
        workflow_id: str,
        state: str,
        context: Mapping[str, JSONValue],
        revision: int,
        event: str,
        payload: Mapping[str, JSONValue],
        *,
        starting: bool = False,
        result: Mapping[str, JSONValue] | None = None,
        fan_out: FanOutProgress | None = None,
        limit: int | None = None,
    ) -> None:
        self.defn = defn
        # The instance's own limit (kept with it, so every one of its steps obeys it) can
        # only lower the definition's.
        self.own_limit = limit
        self.recursion_limit = min(defn.recursion_limit, limit or defn.recursion_limit)
        self.fan_out = fan_out  # the open fan-out of the state it is in
        self.map_items: list[JSONValue] | None = None  # the list of a map state it entered
        self.result_value = result  # a task's result, which its state's `apply` reads
        self.workflow_id = workflow_id
        self.state = state
        self.origin = state  # where the step began: its timers are the ones it may leave
        self.starting = starting  # the instance's first step: it has no timers yet
        self.context = dict(context)
        self.revision = revision
        self.event = event
        self.payload = payload
        self.transitions: list[TransitionTaken] = []
        self.finished = False  # a transition to __finish__ was taken
        limits = _LIMITS.get() or _DEFAULT_LIMITS
        self.cpu_seconds = limits.cpu_seconds
        # The thread's processor time, not the wall clock: a step is not failed because
        # the machine was busy with something else (nor for a garbage collection). Reading
        # it is a system call; the wall clock is not, and a thread's processor time never
        # runs ahead of it, so until the wall deadline the budget cannot have been spent.
        self.cpu_deadline = step_time() + limits.cpu_seconds
        self.wall_deadline = time.perf_counter() + limits.cpu_seconds
        self.value_bytes = limits.value_bytes
        self.map_limit = limits.map_items

    def failed(self, reason: Reason, path: str, message: str, **metadata: object) -> _StepFailed:
        """The error of the definition's ``path``, in the state the step has reached."""
        return _step_error(reason, f"{path}: {message}", path=path, state=self.state, **metadata)

    def activation(self) -> Activation:
        d = self.defn
        workflow = {
            "id": self.workflow_id,
            "state": self.state,
            "revision": self.revision,
            "definition": d.name,
            "version": d.version,
        }
        if self.result_value is not None:
            return d.environment.activation(
                self.context, self.event, self.payload, workflow, self.result_value
            )
        return d.environment.activation(self.context, self.event, self.payload, workflow)

    def evaluate(self, expr: CompiledExpression, path: str, act: Activation) -> JSONValue:
        if time.perf_counter() > self.wall_deadline and step_time() > self.cpu_deadline:
            ms = f"{self.cpu_seconds * 1000:g}"
            raise self.failed(
                Reason.EVALUATION_BUDGET_EXCEEDED,
                path,
                f"the step has used more than its budget of {ms} ms of processor "
                "time for evaluations",
                expression=expr.source,
                budget="step",
                limit=f"{ms}ms",
            )
        try:
            return expr.evaluate(act)
        except CelBudgetExceeded as exc:
            raise self.failed(
                Reason.EVALUATION_BUDGET_EXCEEDED,
                path,
                str(exc),
                expression=expr.source,
                budget=exc.budget,
                limit=exc.limit,
            ) from None
        except CelEvaluationError as exc:
            raise self.failed(
                Reason.EVALUATION_ERROR, path, str(exc), expression=expr.source
            ) from None

    def guard_passes(self, t: Transition, act: Activation) -> bool:
        if t.guard is None:
            return True
        path = f"{t.path}.guard"
        value = self.evaluate(t.guard, path, act)
        if not isinstance(value, bool):
            raise self.failed(
                Reason.TYPE_MISMATCH,
                path,
                f"a guard must give a bool, this one gave {describe(value)}",
                expression=t.guard.source,
            )
        return value

    def first_passing(self, candidates: tuple[Transition, ...]) -> Transition | None:
        act = self.activation()
        for t in candidates:
            if self.guard_passes(t, act):
                return t
        return None

    def run(self, action: SetAction) -> None:
        act = self.activation()
        values = [(a, self.evaluate(a.expression, a.path, act)) for a in action.assignments]
        fields = self.defn.context_fields
        for assignment, value in values:
            field = fields[assignment.field]
            try:
                if field.reducer is Reducer.REPLACE:
                    update = conform(value, field.type, nullable=field.nullable)
                else:
                    update = to_json(value)
                new = reduce(field.reducer, self.context[field.name], update)
                size = _json_size(new, self.value_bytes)
                if size > self.value_bytes:
                    raise self.failed(
                        Reason.CONTEXT_TOO_LARGE,
                        assignment.path,
                        f"field {field.name!r} would be {size:,} bytes of "
                        f"JSON, over the context limit of {self.value_bytes:,}",
                        field=field.name,
                        limit=self.value_bytes,
                        size=size,
                    )
                self.context[field.name] = new
            except ValueTooDeep as exc:
                raise self.failed(
                    Reason.VALUE_TOO_DEEP,
                    assignment.path,
                    str(exc),
                    field=field.name,
                    limit=exc.limit,
                ) from None
            except ValueTypeError as exc:
                raise self.failed(
                    Reason.TYPE_MISMATCH, assignment.path, str(exc), field=field.name
                ) from None

    def fire(self, t: Transition) -> None:
        """Rule 1: source exit actions, then the transition's set, then target entry."""
        if len(self.transitions) >= self.recursion_limit:
            limit = self.recursion_limit
            raise _step_error(
                Reason.RECURSION_LIMIT,
                f"more than {limit} transitions in one step (next: {t.path})",
                state=self.state,
                limit=limit,
                path=t.path,
            )
        for action in self.defn.states[t.source].exit:
            self.run(action)
        self.fan_out, self.map_items = None, None  # leaving cancels the state's items
        if t.set is not None:
            self.run(t.set)
        event = TIMER_EVENT if t.after is not None else t.event
        self.transitions.append(TransitionTaken(t.source, t.target, event, t.index))
        if t.target == FINISH:
            self.finished = True
            return
        self.state = t.target
        for action in self.defn.states[t.target].entry:
            self.run(action)

    def settle(self) -> Status:
        """Rule 2, repeated until the step comes to rest."""
        d = self.defn
        while True:
            if self.finished:
                return Status.COMPLETED
            kind = d.kinds[self.state]
            if kind is StateKind.WAIT:
                return Status.WAITING
            if kind is StateKind.EVENT_ONLY:
                return Status.RUNNING
            if kind is StateKind.TASK and not _joined_at_entry(self):
                return Status.RUNNING  # a task state waits for its task's result
            if kind is StateKind.LEAF:
                return Status.COMPLETED
            chosen = self.first_passing(d.automatic_from[self.state])
            if chosen is None:
                raise _step_error(
                    Reason.NO_TRANSITION_MATCHED,
                    f"no automatic transition from {self.state!r} has a true guard",
                    state=self.state,
                )
            self.fire(chosen)

    def join(self, task: TaskSpec, results: list[JSONValue], failures: list[JSONValue]) -> None:
        """A fan-out's join: its ``apply`` with ``results`` and ``failures``."""
        if task.apply is not None:
            self.result_value = {"results": results, "failures": failures}
            self.run(task.apply)
            self.result_value = None

    def timer_plan(self, status: Status) -> TimerPlan:
        """Leaving a state disarms its timers; coming to rest in a live state arms its own,
        evaluating each ``after_expr`` now (a failure fails the step)."""
        d = self.defn
        moved = bool(self.transitions) or self.starting
        disarm = (
            not self.starting
            and (bool(self.transitions) or status in TERMINAL)
            and self.origin in d.timed_from
        )
        arm: tuple[PlannedTimer, ...] = ()
        if moved and status in _LIVE:
            timed = d.timed_from.get(self.state, ())
            if timed:
                act = self.activation()
                arm = tuple(self.planned(t, act) for t in timed)
        return TimerPlan(disarm, arm) if disarm or arm else NO_TIMER_WORK

    def task_plan(self, status: Status) -> TaskPlan:
        """Leaving a task state cancels its task; coming to rest in one schedules a new task,
        evaluating its ``input`` now (a failure fails the step)."""
        d = self.defn
        moved = bool(self.transitions) or self.starting
        left = not self.starting and (bool(self.transitions) or status in TERMINAL)
        cancel = left and d.states[self.origin].task is not None
        schedule = None
        state = d.states.get(self.state)
        if moved and status in _LIVE and self.map_items is not None:
            assert state is not None and state.task is not None
            return _item_plan(self, state.task, cancel)
        if moved and status in _LIVE and state is not None and state.task is not None:
            spec = state.task
            schedule = PlannedTask(
                self.state,
                spec,
                self.task_input(spec),
                priority=self.task_priority(spec),
                concurrency_key=self.task_key(spec),
            )
        return TaskPlan(cancel, schedule) if cancel or schedule else NO_TASK_WORK

    def task_input(self, spec: TaskSpec) -> dict[str, JSONValue]:
        if spec.child is not None:
            return child_start(self, spec, spec.child)
        return self.evaluated_input(spec, f"states.{self.state}.task.input")

    def evaluated_input(self, spec: TaskSpec, path: str) -> dict[str, JSONValue]:
        if spec.input is None:
            return {}
        value = self.evaluate(spec.input, path, self.activation())
        try:
            plain = to_json(value)
        except ValueTypeError as exc:
            raise _step_error(Reason.TYPE_MISMATCH, f"{path}: {exc}", path=path) from None
        if not isinstance(plain, dict):
            raise self.failed(
                Reason.TYPE_MISMATCH,
                path,
                f"a task's input must be a map, this one gave {describe(value)}",
            )
        return plain

    def task_priority(self, spec: TaskSpec) -> int:
        if spec.priority is None:
            return DEFAULT_PRIORITY
        path = f"states.{self.state}.task.priority"
        value = self.evaluate(spec.priority, path, self.activation())
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            raise self.failed(
                Reason.TYPE_MISMATCH,
                path,
                f"a task's priority must be an int from 1 to 5, this one gave {describe(value)}",
            )
        return value

    def task_key(self, spec: TaskSpec) -> str | None:
        if spec.concurrency_key is None:
            return None
        path = f"states.{self.state}.task.concurrency_key"
        value = self.evaluate(spec.concurrency_key, path, self.activation())
        if not isinstance(value, str) or len(value) > MAX_KEY_LENGTH:
            raise self.failed(
                Reason.TYPE_MISMATCH,
                path,
                f"a task's concurrency_key must be a string of at most {MAX_KEY_LENGTH} "
                f"characters, this one gave {describe(value)}",
            )
        return value or None  # the empty string: no key

    def planned(self, t: Transition, act: Activation) -> PlannedTimer:
        delay = t.after
        assert delay is not None
        if delay.expression is None:
            assert delay.seconds is not None
            return PlannedTimer(
                t.index, t.target, delay.text, delay=timedelta(seconds=delay.seconds)
            )
        path = f"{t.path}.after_expr"
        value = self.evaluate(delay.expression, path, act)
        if isinstance(value, timedelta):
            if too_long(value.total_seconds()):
                raise self.failed(
                    Reason.TIMER_OUT_OF_RANGE,
                    path,
                    f"after_expr gave {value.days:,} days, more than the longest "
                    f"a timer may wait, {MAX_DURATION_TEXT}",
                    limit=MAX_DURATION_TEXT,
                )
            return PlannedTimer(t.index, t.target, delay.text, delay=value)
        if isinstance(value, datetime) and value.tzinfo is not None:
            return PlannedTimer(t.index, t.target, delay.text, at=value)
        raise self.failed(
            Reason.TYPE_MISMATCH,
            path,
            f"after_expr must give a duration or a timestamp, this one gave {describe(value)}",
            expression=delay.expression.source,
        )

    def result(
        self,
        status: Status,
        error: StepError | None = None,
        timers: TimerPlan | None = None,
        task: TaskPlan | None = None,
    ) -> StepResult:
        if timers is None:
            # A failed step arms nothing; it disarms what it may have left behind.
            disarm = not self.starting and self.origin in self.defn.timed_from
            timers = TimerPlan(disarm=True) if disarm else NO_TIMER_WORK
        if task is None:
            # Nor does it schedule a task; it cancels the one of the task state it was in.
            cancel = not self.starting and self.defn.states[self.origin].task is not None
            task = TaskPlan(cancel=True) if cancel and status in TERMINAL else NO_TASK_WORK
        snapshot = Snapshot(
            workflow_id=self.workflow_id,
            definition=self.defn.name,
            version=self.defn.version,
            state=self.state,
            status=status,
            context=MappingProxyType(self.context),
            revision=self.revision,
            error=error,
            fan_out=self.fan_out if status is Status.RUNNING else None,
            recursion_limit=self.own_limit,
        )
        return StepResult(snapshot, tuple(self.transitions), True, timers, task)

    def settle_result(self, before: Transition | None = None) -> StepResult:
        try:
            if before is not None:
                self.fire(before)
            status = self.settle()
            return self.result(status, timers=self.timer_plan(status), task=self.task_plan(status))
        except _StepFailed as failed:
            return self.result(Status.FAILED, failed.error)


# -- entering a map state ---------------------------------------------------------------


def _joined_at_entry(self: _Step) -> bool:
    """A task state just entered with ``map``: its list is read, and an empty one is
    joined at once (True: its automatic transitions decide now)."""
    task = self.defn.states[self.state].task
    entered = bool(self.transitions) or self.starting
    if task is None or task.fan_out is None or not entered or self.map_items is not None:
        return False
    path = f"states.{self.state}.task.map"
    value = self.evaluate(task.fan_out.items, path, self.activation())
    if not isinstance(value, list):
        raise self.failed(
            Reason.TYPE_MISMATCH, path, f"map must give a list, this one gave {describe(value)}"
        )
    if len(value) > self.map_limit:
        raise self.failed(
            Reason.MAP_TOO_LARGE,
            path,
            f"map gave {len(value):,} items, more than the limit of {self.map_limit:,} "
            "(the server's max_map_items)",
            limit=self.map_limit,
            size=len(value),
        )
    self.map_items = value
    self.fan_out = FanOutProgress(self.revision, len(value))
    self.cpu_deadline += len(value) * ITEM_CPU_SECONDS
    if value:
        return False
    self.join(task, [], [])
    # Joined: its automatic transitions decide now (none: it waits for an event).
    return bool(self.defn.automatic_from.get(self.state))


def _item_plan(self: _Step, spec: TaskSpec, cancel: bool) -> TaskPlan:
    """The tasks of a map state entered: one per item, the first ``max_concurrency``
    offered at once."""
    assert self.map_items is not None and spec.fan_out is not None
    priority, key = self.task_priority(spec), self.task_key(spec)
    items = []
    for index, item in enumerate(self.map_items):
        self.result_value = {"item": item, "index": index}
        planned = PlannedTask(self.state, spec, self.task_input(spec), priority, key, item=index)
        items.append(planned)
    self.result_value = None
    limit = spec.fan_out.max_concurrency
    offered = len(items) if limit is None else min(limit, len(items))
    return TaskPlan(cancel, items=tuple(items), offered=offered)


# -- entering a child workflow state ------------------------------------------------------


def child_start(step: _Step, spec: TaskSpec, child: ChildSpec) -> dict[str, JSONValue]:
    """What the task of a child workflow state holds: the start of its child (definition,
    version, id, input), which the server's child runner makes from it."""
    path = f"states.{step.state}.workflow"
    item = step.result_value.get("index") if step.result_value is not None else None
    if child.id is None:
        child_id = f"{step.workflow_id}.{step.state}.{step.revision}"
        child_id += "" if item is None else f".{item}"
    else:
        value = step.evaluate(child.id, f"{path}.id", step.activation())
        if not isinstance(value, str):
            raise step.failed(
                Reason.TYPE_MISMATCH, f"{path}.id", f"id must give a string, not {describe(value)}"
            )
        child_id = value
    if not CHILD_ID.match(child_id):
        raise step.failed(
            Reason.TYPE_MISMATCH,
            f"{path}.id",
            f"the child's id {child_id[:140]!r} is not a workflow id: 1 to 128 letters, "
            "digits, '.', '_', '-', ':' or '@', starting with a letter or digit",
        )
    return {
        "definition": child.definition,
        "version": child.version,
        "workflow_id": child_id,
        "input": step.evaluated_input(spec, f"{path}.input"),
    }


# -- public API ----------------------------------------------------------------------


def validate_input(defn: Definition, input: Mapping[str, object]) -> dict[str, JSONValue]:
    """Check input against the declared fields; return it as plain JSON values.

    Append fields take a list (concatenated) or one value (appended); merge fields take
    a map; other fields take a value of their type.
    """
    if not isinstance(input, Mapping):
        raise InvalidArgument("input must be a map of context fields", reason=Reason.INVALID_INPUT)
    out: dict[str, JSONValue] = {}
    fields = defn.context_fields
    for name, value in input.items():
        field = fields.get(name)
        if field is None:
            raise InvalidArgument(
                f"{quote(name)!r} is not a context field of {defn.name} v{defn.version}",
                reason=Reason.UNKNOWN_FIELD,
                metadata={"field": name, "definition": defn.name},
            )
        try:
            if field.reducer is Reducer.APPEND:
                out[name] = to_json(value)
            elif field.reducer is Reducer.MERGE:
                if not isinstance(value, Mapping):
                    raise ValueTypeError(f"expected map (merged), got {describe(value)}")
                out[name] = to_json(value)
            else:
                out[name] = conform(value, field.type, nullable=field.nullable)
        except ValueTypeError as exc:
            raise InvalidArgument(
                f"input field {name!r}: {exc}",
                reason=Reason.INPUT_TYPE_MISMATCH,
                metadata={"field": name, "expected": field.type.value, "got": describe(value)},
            ) from None
    return out


def _merge(
    defn: Definition, context: dict[str, JSONValue], values: Mapping[str, JSONValue]
) -> None:
    fields = defn.context_fields
    for name, value in values.items():
        field = fields[name]
        context[name] = reduce(field.reducer, context[name], value)


def start(
    defn: Definition,
    workflow_id: str,
    input: Mapping[str, object],
    recursion_limit: int | None = None,
) -> StepResult:
    """First step: defaults, input through reducers, initial entry actions, then rule 2.
    ``recursion_limit``: the start's own limit, kept with the instance for every step."""
    context = _start_context(defn, input)
    return _first_step(defn, workflow_id, context, 1, recursion_limit)


def _start_context(
    defn: Definition,
    input: Mapping[str, object],
    stored: Mapping[str, JSONValue] | None = None,
) -> dict[str, JSONValue]:
    """A start's context: the defaults (or, for a restart, the ``stored`` fields in their
    place), with the input checked and applied over them through the reducers."""
    values = validate_input(defn, input)
    context = {name: f.default_value() for name, f in defn.context_fields.items()}
    if stored is not None:
        context.update((name, value) for name, value in stored.items() if name in context)
    _merge(defn, context, values)
    return context


def _first_step(
    defn: Definition,
    workflow_id: str,
    context: Mapping[str, JSONValue],
    revision: int,
    recursion_limit: int | None,
) -> StepResult:
    """A run's first step at ``revision``: initial entry actions, then rule 2."""
    step = _Step(
        defn, workflow_id, defn.initial, context, revision, "", {}, starting=True,
        limit=recursion_limit,
    )  # fmt: skip
    try:
        for action in defn.states[defn.initial].entry:
            step.run(action)
    except _StepFailed as failed:
        return step.result(Status.FAILED, failed.error)
    return step.settle_result()


def restart(
    defn: Definition,
    snapshot: Snapshot,
    input: Mapping[str, object],
    recursion_limit: int | None = None,
    delay: timedelta | None = None,
) -> StepResult:
    """A new run of a finished instance (a start with if_exists RESTART): the first step
    of a start, at the next revision, with the instance's stored fields in the defaults'
    place and the input applied over them as a start applies it. Its old run left no
    timer and no open task (it finished), so the step starts from nothing as a first
    step does. A live instance is refused ALREADY_EXISTS, as any start of a taken id."""
    _check(defn, snapshot)
    if snapshot.status not in TERMINAL:
        raise AlreadyExists(
            f"workflow {snapshot.workflow_id} already exists and is "
            f"{snapshot.status.value}: only a finished instance can be restarted",
            reason=Reason.WORKFLOW_ALREADY_EXISTS,
            metadata={"workflow_id": snapshot.workflow_id, "status": snapshot.status.value},
        )
    context = _start_context(defn, input, snapshot.context)
    revision = snapshot.revision + 1
    if delay:
        return _delayed(defn, snapshot.workflow_id, context, delay, recursion_limit, revision)
    return _first_step(defn, snapshot.workflow_id, context, revision, recursion_limit)


# The transition index of a delayed start's timer: no transition of a definition has it
# (an index is a place in a list the loader caps far below it), and the timers table
# keeps it as any other index.
START_TRANSITION = 2**31 - 1
START_DELAY = "start_delay"


def is_delayed(snapshot: Snapshot) -> bool:
    """Whether ``snapshot`` is an instance whose delayed start has not run yet."""
    error = snapshot.error
    return (
        snapshot.status is Status.WAITING
        and error is not None
        and error.reason == Reason.START_DELAYED
    )


def scheduled(
    defn: Definition,
    workflow_id: str,
    input: Mapping[str, object],
    delay: timedelta,
    recursion_limit: int | None = None,
) -> StepResult:
    """A start with a delay: the instance exists at once, WAITING in its initial state
    with its context (defaults and input, checked as a start checks them) and the reason
    START_DELAYED; no action has run. Its first step is a timer's (``delayed_start``)."""
    context = _start_context(defn, input)
    return _delayed(defn, workflow_id, context, delay, recursion_limit, 1)


def _delayed(  # noqa: PLR0917 - a delayed start's parts
    defn: Definition,
    workflow_id: str,
    context: dict[str, JSONValue],
    delay: timedelta,
    recursion_limit: int | None,
    revision: int,
) -> StepResult:
    """A run whose first step waits ``delay``, saved at ``revision``."""
    text = f"{START_DELAY} {_duration_text(delay)}"
    error = StepError(
        Reason.START_DELAYED.value,
        f"the first step runs when the {START_DELAY} ({_duration_text(delay)}) has passed",
        MappingProxyType({"state": defn.initial, START_DELAY: _duration_text(delay)}),
    )
    snapshot = Snapshot(
        workflow_id=workflow_id,
        definition=defn.name,
        version=defn.version,
        state=defn.initial,
        status=Status.WAITING,
        context=MappingProxyType(context),
        revision=revision,
        error=error,
        recursion_limit=recursion_limit,
    )
    armed = PlannedTimer(START_TRANSITION, defn.initial, text, delay=delay)
    return StepResult(snapshot, (), True, TimerPlan(arm=(armed,)), NO_TASK_WORK)


def _duration_text(delay: timedelta) -> str:
    seconds = delay.total_seconds()
    return f"{seconds:g}s"


def delayed_start(defn: Definition, snapshot: Snapshot) -> StepResult:
    """The first step of a delayed instance, as ``start`` runs it (entry actions, then
    rule 2), from the context it was created with, at the next revision."""
    return _first_step(
        defn, snapshot.workflow_id, snapshot.context, snapshot.revision + 1,
        snapshot.recursion_limit,
    )  # fmt: skip


def _next_step(
    defn: Definition,
    snapshot: Snapshot,
    event: str,
    payload: Mapping[str, JSONValue],
    *,
    context: Mapping[str, JSONValue] | None = None,
    result: Mapping[str, JSONValue] | None = None,
) -> _Step:
    """The step that follows ``snapshot``: from its state, at the next revision."""
    return _Step(
        defn,
        snapshot.workflow_id,
        snapshot.state,
        snapshot.context if context is None else context,
        snapshot.revision + 1,
        event,
        payload,
        result=result,
        fan_out=snapshot.fan_out,
        limit=snapshot.recursion_limit,
    )


def _check(
    defn: Definition,
    snapshot: Snapshot,
    status: Status | None = None,
    *,
    paused_ok: bool = False,
) -> None:
    """Refuse a step of an instance of another definition, of a paused one (unless
    ``paused_ok``: its unpause, its cancel), or not in ``status`` (when named: a resume
    takes a WAITING instance, a signal a RUNNING one)."""
    if (snapshot.definition, snapshot.version) != (defn.name, defn.version):
        raise FailedPrecondition(
            f"instance runs {snapshot.definition} v{snapshot.version}, "
            f"not {defn.name} v{defn.version}",
            reason=Reason.DEFINITION_MISMATCH,
            metadata={"workflow_id": snapshot.workflow_id},
        )
    if snapshot.pause is not None and not paused_ok:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is paused: nothing steps it until UnpauseWorkflow",
            reason=Reason.WORKFLOW_PAUSED,
            metadata={"workflow_id": snapshot.workflow_id, "status": snapshot.status.value},
        )
    if status is not None and snapshot.status is not status:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is {snapshot.status}, not {status}",
            reason=Reason.NOT_WAITING if status is Status.WAITING else Reason.NOT_RUNNING,
            metadata={"workflow_id": snapshot.workflow_id, "status": snapshot.status.value},
        )


_TASK_EVENTS = frozenset({TASK_FAILED, CHILD_FAILED, TASK_COMPLETED})


def _candidates(defn: Definition, snapshot: Snapshot, event: str) -> tuple[Transition, ...]:
    if event in _TASK_EVENTS:
        raise InvalidArgument(
            f"{event} is reserved: only a task or a child workflow (ending) fires it",
            reason=Reason.RESERVED_EVENT,
            metadata={"event": event, "workflow_id": snapshot.workflow_id},
        )
    found = defn.event_transitions.get(snapshot.state, _EMPTY_EVENTS).get(event)
    if found:
        return found
    meta = {"event": event, "state": snapshot.state, "workflow_id": snapshot.workflow_id}
    here = defn.events_from(snapshot.state)
    if event in defn.all_events:
        accepted = f" (it accepts {', '.join(here)})" if here else ""
        raise FailedPrecondition(
            f"event {event!r} is not accepted in state {snapshot.state!r}{accepted}",
            reason=Reason.EVENT_NOT_ALLOWED,
            metadata=meta,
        )
    meant = _meant(event, here, defn.all_events)
    raise InvalidArgument(
        f"{defn.name} v{defn.version} declares no event {event!r}"
        + (f"; did you mean {meant!r}?" if meant else ""),
        reason=Reason.UNKNOWN_EVENT,
        metadata={**meta, "did_you_mean": meant} if meant else meta,
    )


_EMPTY_EVENTS: Mapping[str, tuple[Transition, ...]] = MappingProxyType({})
# Looking for a likeness costs time on the loop thread: past this many names, none is sought.
_MAX_SUGGESTION_CHOICES = 200


def _meant(event: str, here: tuple[str, ...], everywhere: Collection[str]) -> str | None:
    """The event a typo most likely meant: one this state accepts, else any declared."""
    for choices in (here, everywhere):
        if len(choices) <= _MAX_SUGGESTION_CHOICES:
            found = closest(event, choices)
            if found:
                return found
    return None


def _settle_first(step: _Step, candidates: tuple[Transition, ...]) -> StepResult | None:
    """The step settled by the first candidate whose guard passes (a guard that fails to
    evaluate fails the instance); None when no guard passes."""
    try:
        chosen = step.first_passing(candidates)
    except _StepFailed as failed:
        return step.result(Status.FAILED, failed.error)
    return None if chosen is None else step.settle_result(chosen)


def resume(
    defn: Definition, snapshot: Snapshot, event: str, input: Mapping[str, object]
) -> StepResult:
    """Rule 6: resume a WAITING instance with an event (default: the first declared)."""
    _check(defn, snapshot, Status.WAITING)
    if is_delayed(snapshot):
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} has not started yet: its first step runs when "
            f"its {START_DELAY} has passed",
            reason=Reason.START_DELAYED,
            metadata={"workflow_id": snapshot.workflow_id},
        )
    if event in ("", RESUME_ALIAS):
        declared = defn.events_from(snapshot.state)
        if not declared:
            raise FailedPrecondition(
                f"wait state {snapshot.state!r} accepts no event: only its timers leave it",
                reason=Reason.EVENT_NOT_ALLOWED,
                metadata={"state": snapshot.state, "workflow_id": snapshot.workflow_id},
            )
        event = declared[0]
    candidates = _candidates(defn, snapshot, event)
    values = validate_input(defn, input)
    context = dict(snapshot.context)
    _merge(defn, context, values)
    # CEL needs a real dict; the step never mutates it.
    step = _next_step(defn, snapshot, event, dict(values), context=context)
    settled = _settle_first(step, candidates)
    if settled is None:
        raise FailedPrecondition(
            f"every guard of event {event!r} from {snapshot.state!r} is false",
            reason=Reason.GUARD_REJECTED,
            metadata={"event": event, "state": snapshot.state, "workflow_id": snapshot.workflow_id},
        )
    return settled


def signal(
    defn: Definition, snapshot: Snapshot, event: str, payload: Mapping[str, object]
) -> StepResult:
    """Rules 5 and 7: deliver an event to a RUNNING instance."""
    _check(defn, snapshot, Status.RUNNING)
    candidates = _candidates(defn, snapshot, event)
    if not isinstance(payload, Mapping):
        raise InvalidArgument("payload must be a map", reason=Reason.INVALID_PAYLOAD)
    try:
        if not all(isinstance(k, str) for k in payload):
            raise ValueTypeError("map keys must be strings")
        # Each value on its own: a payload value nests as deep as a context value may.
        plain = {k: to_json(v) for k, v in payload.items()}
    except ValueTypeError as exc:
        raise InvalidArgument(f"payload: {exc}", reason=Reason.INVALID_PAYLOAD) from None
    settled = _settle_first(_next_step(defn, snapshot, event, plain), candidates)
    return StepResult(snapshot, (), changed=False) if settled is None else settled


def signal_with_start(
    defn: Definition,
    workflow_id: str,
    input: Mapping[str, object],
    event: str,
    payload: Mapping[str, object],
    *,
    recursion_limit: int | None = None,
) -> StepResult:
    """The first step of a new instance with an event delivered at its end, as one step:
    revision 1 holds both, so that no reader, watcher or other replica ever sees the
    instance without its event. The event is delivered as ``signal`` would deliver it to
    the instance its start left (guards see revision 1): a first step that does not rest
    RUNNING, or an event that state refuses, refuses the whole, and nothing is created.
    With every guard false the event is accepted and the start alone is the step."""
    started = start(defn, workflow_id, input, recursion_limit)
    if started.status is not Status.RUNNING:
        raise FailedPrecondition(
            f"the first step of {defn.name} v{defn.version} leaves the instance "
            f"{started.status} in state {started.snapshot.state!r}: the event cannot be "
            "delivered to it; nothing was created",
            reason=Reason.SIGNAL_NOT_DELIVERABLE,
            metadata={
                "workflow_id": workflow_id,
                "status": started.status.value,
                "state": started.snapshot.state,
            },
        )
    # Delivered from "revision 0": the event's part of the step produces revision 1 too.
    before = dataclasses.replace(started.snapshot, revision=0)
    delivered = signal(defn, before, event, payload)
    return _joined(started, delivered) if delivered.changed else started


def start_now_with_signal(
    defn: Definition, snapshot: Snapshot, event: str, payload: Mapping[str, object]
) -> StepResult:
    """A delayed instance started before its delay has passed, with an event delivered at
    the end of its first step (signal-with-start with ``start_now``): one step, which
    disarms the start timer. Refused, with nothing changed, as ``signal_with_start``
    refuses a start that cannot take the event."""
    started = delayed_start(defn, snapshot)
    if started.status is not Status.RUNNING:
        raise FailedPrecondition(
            f"the first step of {defn.name} v{defn.version} leaves the instance "
            f"{started.status} in state {started.snapshot.state!r}: the event cannot be "
            "delivered to it; it was not started early",
            reason=Reason.SIGNAL_NOT_DELIVERABLE,
            metadata={
                "workflow_id": snapshot.workflow_id,
                "status": started.status.value,
                "state": started.snapshot.state,
            },
        )
    before = dataclasses.replace(started.snapshot, revision=snapshot.revision)
    delivered = signal(defn, before, event, payload)
    combined = _joined(started, delivered) if delivered.changed else started
    # The start timer goes with the step that does its work.
    timers = TimerPlan(True, combined.timers.arm)
    return dataclasses.replace(combined, timers=timers)


def _joined(started: StepResult, delivered: StepResult) -> StepResult:
    """A first step and the event delivered at its end, as one step: what the event's
    part disarms or cancels is the start's plan (nothing of it is armed or open yet),
    replaced by its own when it moved on."""
    timers = delivered.timers
    if timers.disarm or timers.arm:
        timers = TimerPlan(False, timers.arm) if timers.arm else NO_TIMER_WORK
    else:
        timers = started.timers
    task = delivered.task
    if task.cancel or task.schedule is not None:
        task = TaskPlan(False, task.schedule) if task.schedule is not None else NO_TASK_WORK
    else:
        task = started.task
    return StepResult(
        delivered.snapshot, started.transitions + delivered.transitions, True, timers, task
    )


def timer(defn: Definition, snapshot: Snapshot, transition: int) -> StepResult:
    """A timer of the state the instance rests in came due: its transition fires like an
    event (event ``after``); with its guard false the timer is consumed and nothing
    changes (``changed`` False)."""
    _check(defn, snapshot)
    if transition == START_TRANSITION:
        if not is_delayed(snapshot):
            raise FailedPrecondition(
                f"workflow {snapshot.workflow_id} has started already",
                reason=Reason.TIMER_STALE,
                metadata={"workflow_id": snapshot.workflow_id, "state": snapshot.state},
            )
        started = delayed_start(defn, snapshot)
        # The start timer is the instance's only one: its firing disarms it, as leaving a
        # state disarms that state's timers.
        return dataclasses.replace(started, timers=TimerPlan(True, started.timers.arm))
    t = defn.transitions[transition] if 0 <= transition < len(defn.transitions) else None
    if t is None or t.after is None or t.source != snapshot.state or snapshot.status not in _LIVE:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is not in the state that armed this timer",
            reason=Reason.TIMER_STALE,
            metadata={"workflow_id": snapshot.workflow_id, "state": snapshot.state},
        )
    step = _next_step(defn, snapshot, TIMER_EVENT, {})
    try:
        passes = step.guard_passes(t, step.activation())
    except _StepFailed as failed:
        return step.result(Status.FAILED, failed.error)
    if not passes:
        return StepResult(snapshot, (), changed=False)
    return step.settle_result(t)


def _task_state(defn: Definition, snapshot: Snapshot, state: str) -> TaskSpec:
    spec = defn.states[state].task if state in defn.states else None
    if spec is None or snapshot.state != state or snapshot.status is not Status.RUNNING:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} has left task state {state!r}",
            reason=Reason.TASK_CANCELLED,
            metadata={"workflow_id": snapshot.workflow_id, "state": state},
        )
    return spec


def complete_task(
    defn: Definition, snapshot: Snapshot, state: str, result: Mapping[str, object]
) -> StepResult:
    """A task of ``state`` completed: its ``apply`` runs with ``result`` (through the
    reducers), then the state's automatic transitions decide, as after entering a state."""
    _check(defn, snapshot)
    spec = _task_state(defn, snapshot, state)
    try:
        plain = {str(k): to_json(v) for k, v in result.items()}
    except ValueTypeError as exc:
        raise InvalidArgument(f"result: {exc}", reason=Reason.INVALID_RESULT) from None
    step = _next_step(defn, snapshot, "", {}, result=plain)
    apply = spec.apply
    return _applied_then_automatic(step, lambda: step.run(apply) if apply is not None else None)


def _applied_then_automatic(step: _Step, apply: Callable[[], None]) -> StepResult:
    """A task's result (or a fan-out's join) applied, then the state's automatic
    transitions, as after entering it; none: the instance stays, RUNNING."""
    try:
        apply()
        automatic = step.defn.automatic_from.get(step.state, ())
        if not automatic:
            return step.result(Status.RUNNING, timers=NO_TIMER_WORK, task=NO_TASK_WORK)
        chosen = step.first_passing(automatic)
        if chosen is None:
            raise _step_error(
                Reason.NO_TRANSITION_MATCHED,
                f"no automatic transition from {step.state!r} has a true guard",
                state=step.state,
            )
    except _StepFailed as failed:
        return step.result(Status.FAILED, failed.error)
    return step.settle_result(chosen)


def task_gave_up(
    defn: Definition, snapshot: Snapshot, state: str, failure: Mapping[str, JSONValue]
) -> StepResult:
    """A task of ``state`` gave up: the reserved event ``task_failed`` fires from the state,
    its payload the failure; with no transition to take, the instance fails
    (``TASK_TIMED_OUT`` when the last attempt timed out, ``TASK_FAILED`` otherwise)."""
    _check(defn, snapshot)
    spec = _task_state(defn, snapshot, state)
    payload = dict(failure)
    event = failed_event(spec)
    step = _next_step(defn, snapshot, event, payload)
    candidates = defn.event_transitions.get(state, _EMPTY_EVENTS).get(event, ())
    settled = _settle_first(step, candidates)
    if settled is not None:
        return settled
    if spec.child is not None:
        return step.result(Status.FAILED, _child_error(state, payload))
    timed_out = payload.get("type") == "TIMED_OUT"
    reason = Reason.TASK_TIMED_OUT if timed_out else Reason.TASK_FAILED
    error = StepError(
        reason.value,
        f"the task of {state!r} gave up after {payload.get('attempts')} attempt(s): "
        f"{payload.get('type')}: {payload.get('message')}",
        MappingProxyType(
            {
                "state": state,
                "type": str(payload.get("type")),
                "attempts": str(payload.get("attempts")),
            }
        ),
    )
    return step.result(Status.FAILED, error)


def cancel(defn: Definition, snapshot: Snapshot, reason: str) -> StepResult:
    """Stop a live instance where it is; no actions run. A paused one is cancelled too
    (and is no longer paused)."""
    _check(defn, snapshot, paused_ok=True)
    if snapshot.status in TERMINAL:
        raise _already_terminal(snapshot, "")
    error = StepError(
        Reason.CANCELLED.value,
        reason or "cancelled",
        MappingProxyType({"state": snapshot.state}),
    )
    return _ended_in_place(defn, snapshot, Status.CANCELLED, error)


def _already_terminal(snapshot: Snapshot, why: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"workflow {snapshot.workflow_id} is already {snapshot.status}{why}",
        reason=Reason.ALREADY_TERMINAL,
        metadata={"workflow_id": snapshot.workflow_id, "status": snapshot.status.value},
    )


def context_too_large(defn: Definition, snapshot: Snapshot, size: int, limit: int) -> StepResult:
    """The step after ``snapshot`` built a context of ``size`` bytes, over ``limit``: none
    of it is kept, and the instance fails where it was, with the context it had."""
    error = StepError(
        Reason.CONTEXT_TOO_LARGE.value,
        f"the step would make the context {size:,} bytes, over the limit of {limit:,}",
        MappingProxyType({"state": snapshot.state, "limit": str(limit), "size": str(size)}),
    )
    return _ended_in_place(defn, snapshot, Status.FAILED, error)


def _ended_in_place(
    defn: Definition, snapshot: Snapshot, status: Status, error: StepError
) -> StepResult:
    """A step that ends the instance in its state, with its context, running no actions."""
    new = dataclasses.replace(
        snapshot,
        status=status,
        revision=snapshot.revision + 1,
        error=error,
        fan_out=None,
        pause=None,
    )
    delayed = is_delayed(snapshot)
    disarm = delayed or snapshot.state in defn.timed_from
    state = defn.states.get(snapshot.state)
    # A delayed instance has not entered its state: no task of it was scheduled.
    tasked = not delayed and state is not None and state.task is not None
    task = TaskPlan(cancel=True) if tasked else NO_TASK_WORK
    return StepResult(
        new, (), timers=TimerPlan(disarm=True) if disarm else NO_TIMER_WORK, task=task
    )


def accepted_events(defn: Definition, snapshot: Snapshot) -> tuple[str, ...]:
    """Events a resume (WAITING) or signal (RUNNING) would accept now; not ``task_failed``,
    which only the state's task fires."""
    if is_delayed(snapshot):
        return ()
    if snapshot.status in (Status.WAITING, Status.RUNNING) and snapshot.state in defn.kinds:
        events = defn.events_from(snapshot.state)
        if TASK_FAILED in events or CHILD_FAILED in events:
            return tuple(e for e in events if e not in _TASK_EVENTS)
        return events
    return ()


# -- fan-out items ---------------------------------------------------------------------

# How many of a fan-out's item errors a `task_failed` payload (and the progress) carry.
FIRST_ERRORS = 5


def _fan_out(
    defn: Definition, snapshot: Snapshot, state: str, revision: int, item: int
) -> tuple[TaskSpec, FanOutProgress]:
    """The task state and open fan-out an item (of the map entered at ``revision``)
    ends; refused when the instance has left it since."""
    spec = _task_state(defn, snapshot, state)
    progress = snapshot.fan_out
    if progress is None or progress.revision != revision or not 0 <= item < progress.total:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} has left the fan-out of {state!r} that "
            f"item {item} belongs to",
            reason=Reason.TASK_CANCELLED,
            metadata={"workflow_id": snapshot.workflow_id, "state": state},
        )
    return spec, progress


def complete_item(
    defn: Definition,
    snapshot: Snapshot,
    state: str,
    *,
    revision: int,
    item: int,
    result: Mapping[str, object],
) -> StepResult:
    """Item ``item`` of the fan-out entered at ``revision`` completed: a step of its own
    (its result is kept on its task until the join), or the join when it is the last."""
    _check(defn, snapshot)
    spec, progress = _fan_out(defn, snapshot, state, revision, item)
    try:
        plain: JSONValue = {str(k): to_json(v) for k, v in result.items()}
    except ValueTypeError as exc:
        raise InvalidArgument(f"result: {exc}", reason=Reason.INVALID_RESULT) from None
    ended = dataclasses.replace(progress, completed=progress.completed + 1, ended=None)
    step = _next_step(defn, snapshot, "", {})
    return _item_ended(
        step, spec, before=progress, after=ended, item=item, end=ItemEnd(result=plain)
    )


def item_gave_up(
    defn: Definition,
    snapshot: Snapshot,
    state: str,
    *,
    revision: int,
    item: int,
    failure: Mapping[str, JSONValue],
) -> StepResult:
    """Item ``item`` gave up. Past the state's ``tolerated_failures``, the reserved event
    ``task_failed`` fires (payload: the counts and the first errors), which leaves the
    state and so cancels the other items, or fails the instance; otherwise it is a step
    like a completion (the join when it is the last)."""
    _check(defn, snapshot)
    spec, progress = _fan_out(defn, snapshot, state, revision, item)
    assert spec.fan_out is not None
    error: dict[str, JSONValue] = {"item": item}
    error.update({k: failure.get(k) for k in ("type", "message", "attempts")})
    errors = progress.errors
    if len(errors) < FIRST_ERRORS:
        errors = (*errors, MappingProxyType(error))
    ended = dataclasses.replace(progress, given_up=progress.given_up + 1, ended=None, errors=errors)
    if ended.given_up <= spec.fan_out.tolerated_failures:
        step = _next_step(defn, snapshot, "", {})
        return _item_ended(
            step, spec, before=progress, after=ended, item=item, end=ItemEnd(error=error)
        )
    payload: dict[str, JSONValue] = {
        **error,
        "details": failure.get("details") or {},
        "total": ended.total,
        "completed": ended.completed,
        "given_up": ended.given_up,
        "errors": [dict(e) for e in errors],
    }
    event = failed_event(spec)
    step = _next_step(defn, snapshot, event, payload)
    candidates = defn.event_transitions.get(state, _EMPTY_EVENTS).get(event, ())
    settled = _settle_first(step, candidates)
    if settled is not None:
        return settled
    tolerated = spec.fan_out.tolerated_failures
    message = (
        f"{ended.given_up} of the {ended.total} items of {state!r} gave up, more than the "
        f"{tolerated} tolerated; item {item}: {failure.get('type')}: {failure.get('message')}"
    )
    meta = {"state": state, "type": str(failure.get("type")), "item": str(item)}
    reason = Reason.TASK_FAILED if spec.child is None else Reason.CHILD_FAILED
    return step.result(Status.FAILED, StepError(reason.value, message, MappingProxyType(meta)))


def _child_error(state: str, payload: Mapping[str, JSONValue]) -> StepError:
    """Why a parent fails when its child ended badly and no ``child_failed`` took it."""
    child, status = payload.get("child"), payload.get("status")
    message = f"the child workflow {child} of {state!r} ended {status}"
    if payload.get("message"):
        message += f": {payload.get('message')}"
    meta = {"state": state, "child": str(child), "status": str(status)}
    return StepError(Reason.CHILD_FAILED.value, message, MappingProxyType(meta))


def _item_ended(
    step: _Step,
    spec: TaskSpec,
    *,
    before: FanOutProgress,
    after: FanOutProgress,
    item: int,
    end: ItemEnd,
) -> StepResult:
    """The step of an ended item: the next held item is offered in its place, or, the
    last one ended, the join runs and then the state's automatic transitions."""
    assert spec.fan_out is not None
    if before.ended is not None and item in before.ended:
        # A second end of an item that ended already (a duplicate completion that the
        # store's fence would refuse at save): refused as the fence does, before the count
        # takes it for the last item's end and the join looks for an end never made.
        raise FailedPrecondition(
            f"workflow {step.workflow_id}: item {item} has ended already",
            reason=Reason.LEASE_SUPERSEDED,
            metadata={"workflow_id": step.workflow_id, "item": str(item)},
        )
    step.fan_out = after
    if after.open > 0:
        limit = spec.fan_out.max_concurrency
        offered = before.total if limit is None else min(limit, before.total)
        index = offered + before.completed + before.given_up
        release = ItemRelease(before.revision, index, spec) if index < before.total else None
        return step.result(Status.RUNNING, timers=NO_TIMER_WORK, task=TaskPlan(release=release))
    known = before.ended
    if known is None or len(known) != before.total - 1:
        # Decided on a snapshot without the other items' ends: only one loaded with them
        # (the loader reads them once at most one item is open) can join.
        raise Aborted(
            f"workflow {step.workflow_id}: the join needs every item's result; retry",
            reason=Reason.WORKFLOW_BUSY,
            metadata={"workflow_id": step.workflow_id},
        )
    ends = {**known, item: end}
    results = [ends[i].result for i in range(before.total)]
    failures = [ends[i].error for i in range(before.total)]
    return _applied_then_automatic(step, lambda: step.join(spec, results, failures))


# -- repair: retry and reset -----------------------------------------------------------

REPAIR_EVENTS = ("retry", "reset", "migrate")  # what history shows for a repair's step

# A task (or a child workflow) that gave up fails the instance with one of these: its
# retry schedules the task anew rather than re-running the state's entry (which its
# entering step ran already).
_GAVE_UP = frozenset(
    {Reason.TASK_FAILED.value, Reason.TASK_TIMED_OUT.value, Reason.CHILD_FAILED.value}
)


def retry(defn: Definition, snapshot: Snapshot) -> StepResult:
    """A FAILED instance re-enters the state it failed in, at the next revision: a task
    that gave up (or a fan-out past its tolerated failures) is scheduled anew, every item
    with a fresh set of attempts; any other failure re-runs the state's entry actions
    from the context it failed with, then rule 2, arming the state's timers."""
    _check(defn, snapshot)
    if snapshot.status is not Status.FAILED:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is {snapshot.status}, not FAILED: only a failed "
            "instance is retried (ResetWorkflow puts any instance back at a revision)",
            reason=Reason.NOT_FAILED,
            metadata={"workflow_id": snapshot.workflow_id, "status": snapshot.status.value},
        )
    state = defn.states.get(snapshot.state)
    if state is None:
        raise _unknown_state(defn, snapshot, snapshot.state)
    error = snapshot.error
    gave_up = error is not None and error.reason in _GAVE_UP and state.task is not None
    return _reentered(defn, snapshot, snapshot.state, snapshot.context, entry=not gave_up)


def reset(
    defn: Definition,
    snapshot: Snapshot,
    to_revision: int,
    state: str,
    context: Mapping[str, JSONValue],
) -> StepResult:
    """Put the instance back at revision ``to_revision`` (whose ``state`` and ``context``
    history kept), as a step at the next revision: no action runs; the state's timers are
    armed anew and its task (or map items) scheduled anew; the status follows from the
    state by rule 2. Whatever the instance has open now is disarmed and cancelled."""
    _check(defn, snapshot)
    if not 1 <= to_revision <= snapshot.revision:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is at revision {snapshot.revision}: there is "
            f"no revision {to_revision} to reset it to",
            reason=Reason.REVISION_NOT_FOUND,
            metadata={"workflow_id": snapshot.workflow_id, "revision": str(to_revision)},
        )
    if state not in defn.states:
        raise _unknown_state(defn, snapshot, state)
    return _reentered(defn, snapshot, state, context, entry=False)


def migrate(
    source: Definition,
    target: Definition,
    snapshot: Snapshot,
    state: str,
    context: Mapping[str, JSONValue],
) -> StepResult:
    """Move the instance (of ``source``) to ``target``'s ``state`` with ``context``, as
    checked by engine.migration's plan, in one step at the next revision: no action runs;
    what it has open is disarmed and cancelled, the new state's timers armed from its
    ``after`` and its task scheduled anew; the status follows from the state by rule 2."""
    _check(source, snapshot)
    if state not in target.states:
        raise _unknown_state(target, snapshot, state)
    return _reentered(target, snapshot, state, context, entry=False)


def _unknown_state(defn: Definition, snapshot: Snapshot, state: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"{defn.name} v{defn.version} has no state {state!r} to put workflow "
        f"{snapshot.workflow_id} back in",
        reason=Reason.STATE_NOT_FOUND,
        metadata={"workflow_id": snapshot.workflow_id, "state": state},
    )


def _reentered(
    defn: Definition,
    snapshot: Snapshot,
    state: str,
    context: Mapping[str, JSONValue],
    *,
    entry: bool,
) -> StepResult:
    """The instance as if it had just entered ``state`` with ``context`` (its entry
    actions run when ``entry``), settled by rule 2. What it has open now goes in the same
    step: its timers are disarmed and its tasks cancelled, whatever status it had."""
    step = _Step(
        defn,
        snapshot.workflow_id,
        state,
        context,
        snapshot.revision + 1,
        "",
        {},
        starting=True,  # entered anew: it arms and schedules as a first step does
        limit=snapshot.recursion_limit,
    )
    try:
        for action in defn.states[state].entry if entry else ():
            step.run(action)
    except _StepFailed as failed:
        result = step.result(Status.FAILED, failed.error)
    else:
        result = step.settle_result()
    live = snapshot.status not in TERMINAL
    # Its open work ends in this step's transaction: a live instance may have armed timers
    # and open tasks (a finished one has neither).
    timers = TimerPlan(disarm=live or result.timers.disarm, arm=result.timers.arm)
    task = dataclasses.replace(result.task, cancel=live)
    return dataclasses.replace(result, timers=timers, task=task)


# -- pause and unpause -----------------------------------------------------------------

PAUSE_EVENTS = ("pause", "unpause")  # what history shows for their steps


def pause(defn: Definition, snapshot: Snapshot, actor: str, reason: str) -> StepResult:
    """Pause a live instance, as a step at the next revision that changes nothing else:
    no action runs, its timers stay armed and its task open (the store holds both back
    while it is paused). A finished instance, or one paused already, is refused."""
    _check(defn, snapshot, paused_ok=True)
    if snapshot.status in TERMINAL:
        raise _already_terminal(snapshot, ": only a RUNNING or WAITING instance is paused")
    if snapshot.pause is not None:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is paused already (by {snapshot.pause.actor})",
            reason=Reason.ALREADY_PAUSED,
            metadata={"workflow_id": snapshot.workflow_id, "actor": snapshot.pause.actor},
        )
    paused = dataclasses.replace(
        snapshot, revision=snapshot.revision + 1, pause=Pause(reason, actor)
    )
    return StepResult(paused, ())


def unpause(defn: Definition, snapshot: Snapshot) -> StepResult:
    """Unpause a paused instance, as a step at the next revision that changes nothing
    else: its due timers fire and its tasks are offered again after it is saved."""
    _check(defn, snapshot, paused_ok=True)
    if snapshot.pause is None:
        raise FailedPrecondition(
            f"workflow {snapshot.workflow_id} is not paused",
            reason=Reason.NOT_PAUSED,
            metadata={"workflow_id": snapshot.workflow_id, "status": snapshot.status.value},
        )
    return StepResult(dataclasses.replace(snapshot, revision=snapshot.revision + 1, pause=None), ())
