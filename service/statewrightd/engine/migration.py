"""Planning the move of one instance to another version of its definition (pure).

A migration is checked against both versions before anything changes, and every problem
is found at once, each with its path into the request (``state_map[review]``,
``set[priority]``) or into the instance (``state``, ``context.total``), as the validator
reports a definition's: the refusal lists them all. What passes becomes a plan (the state
from and to, the context fields added, changed and dropped, what happens to open timers
and to an open task) and one step at the next revision, taken by ``fsm.migrate``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from statewrightd.definitions.cel import CelCompileError, CelEvaluationError, CompiledExpression
from statewrightd.definitions.model import Definition, StateKind
from statewrightd.definitions.problems import did_you_mean
from statewrightd.definitions.values import JSONValue, ValueTypeError, conform
from statewrightd.domain import Status
from statewrightd.engine import fsm
from statewrightd.engine.model import Snapshot, StepResult
from statewrightd.errors import FailedPrecondition
from statewrightd.reasons import Reason

# How many problems the refusal's metadata lists one by one (its message names them all,
# as far as a message goes).
MAX_LISTED_PROBLEMS = 20

# What becomes of an instance's open task: none is open, it is cancelled (the new state
# has no task), or it moves (cancelled and offered anew in the new state, on the same
# queue, with a fresh set of attempts).
TASK_NONE, TASK_CANCELLED, TASK_MOVED = "none", "cancelled", "moved"


@dataclass(frozen=True, slots=True)
class MigrationProblem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True, slots=True)
class AddedField:
    """A context field the target version declares that the instance's context lacks (or
    one ``set`` assigns): its value, and where it came from (``default`` or ``set``)."""

    field: str
    value: JSONValue
    source: str


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """What the migration does, checked: the instance's state from and to, its context's
    new values (``assigned``: fields added or set), the fields it drops, the timers it
    disarms, and its open task's fate (``task``, on ``task_queue``)."""

    from_version: int
    to_version: int
    state_from: str
    state_to: str
    assigned: tuple[AddedField, ...]
    removed: tuple[str, ...]
    context: Mapping[str, JSONValue]
    timers_disarmed: bool
    task: str
    task_queue: str


class MigrationInvalid(FailedPrecondition):
    """The migration cannot apply to the instance as it is: every problem, with its path."""

    default_reason = Reason.MIGRATION_INVALID

    def __init__(self, workflow_id: str, to_version: int, problems: list[MigrationProblem]):
        listed = "; ".join(str(p) for p in problems)
        metadata: dict[str, object] = {
            "workflow_id": workflow_id,
            "to_version": to_version,
            "problems": len(problems),
            "path": problems[0].path,
        }
        for i, problem in enumerate(problems[:MAX_LISTED_PROBLEMS], 1):
            metadata[f"problem_{i}"] = str(problem)
        super().__init__(
            f"workflow {workflow_id} cannot move to version {to_version}: "
            f"{len(problems)} problem(s): {listed}",
            metadata=metadata,
        )
        self.problems = tuple(problems)


def plan(
    source: Definition,
    target: Definition,
    snapshot: Snapshot,
    state_map: Mapping[str, str],
    sets: Mapping[str, str],
) -> MigrationPlan:
    """The checked plan to move ``snapshot`` (of ``source``) to ``target``; raises
    ``MigrationInvalid`` naming every problem when it cannot."""
    problems: list[MigrationProblem] = []
    if target.name != source.name:
        problems.append(MigrationProblem("to_version", f"{target.name} is not {source.name}"))
    if target.version == source.version:
        problems.append(
            MigrationProblem("to_version", f"the instance already runs version {target.version}")
        )
    if snapshot.status not in {Status.RUNNING, Status.WAITING}:
        problems.append(
            MigrationProblem(
                "status",
                f"the instance is {snapshot.status}: only a RUNNING or WAITING one migrates",
            )
        )
    elif fsm.is_delayed(snapshot):
        problems.append(
            MigrationProblem("status", "the instance has not started yet (a delayed start)")
        )
    problems += _map_problems(source, target, state_map)
    state_to = state_map.get(snapshot.state, snapshot.state)
    if snapshot.state not in state_map and state_to not in target.states:
        problems.append(
            MigrationProblem(
                "state",
                f"the instance is in state {snapshot.state!r}, which version "
                f"{target.version} does not declare, and state_map does not map it"
                + did_you_mean(snapshot.state, target.states),
            )
        )
    task, queue = TASK_NONE, ""
    if state_to in target.states:
        task, queue = _task_fate(source, target, snapshot, state_to, problems)
    context = _context(source, target, snapshot, sets, problems)
    if problems:
        raise MigrationInvalid(snapshot.workflow_id, target.version, problems)
    assigned = tuple(
        AddedField(name, context[name], "set" if name in sets else "default")
        for name in target.context_fields
        if name in sets or name not in snapshot.context
    )
    removed = tuple(sorted(set(snapshot.context) - set(target.context_fields)))
    return MigrationPlan(
        from_version=source.version,
        to_version=target.version,
        state_from=snapshot.state,
        state_to=state_to,
        assigned=assigned,
        removed=removed,
        context=context,
        timers_disarmed=snapshot.state in source.timed_from,
        task=task,
        task_queue=queue,
    )


def migrate(
    source: Definition,
    target: Definition,
    snapshot: Snapshot,
    state_map: Mapping[str, str],
    sets: Mapping[str, str],
) -> tuple[MigrationPlan, StepResult]:
    """The plan, and the step that carries it out (see ``fsm.migrate``)."""
    checked = plan(source, target, snapshot, state_map, sets)
    return checked, fsm.migrate(source, target, snapshot, checked.state_to, checked.context)


def _map_problems(
    source: Definition, target: Definition, state_map: Mapping[str, str]
) -> list[MigrationProblem]:
    problems = []
    for old, new in state_map.items():
        path = f"state_map[{old}]"
        if old not in source.states:
            problems.append(_undeclared(path, source, "state", old, source.states))
        if new not in target.states:
            problems.append(_undeclared(path, target, "state", new, target.states))
    return problems


def _undeclared(
    path: str, definition: Definition, what: str, name: str, declared: Iterable[str]
) -> MigrationProblem:
    return MigrationProblem(
        path,
        f"version {definition.version} declares no {what} {name!r}" + did_you_mean(name, declared),
    )


def _task_fate(
    source: Definition,
    target: Definition,
    snapshot: Snapshot,
    state_to: str,
    problems: list[MigrationProblem],
) -> tuple[str, str]:
    """What becomes of the open task (one is open when a RUNNING instance rests in a task
    state): it moves to a plain task state on the same queue, or is cancelled when the new
    state has none; any other task state is a problem."""
    old = source.states.get(snapshot.state)
    if old is None or old.task is None or snapshot.status is not Status.RUNNING:
        return TASK_NONE, ""
    path = f"state_map[{snapshot.state}]" if snapshot.state != state_to else "state"
    if old.task.fan_out is not None or old.task.child is not None:
        what = "fan-out (map)" if old.task.fan_out is not None else "child workflow"
        problems.append(
            MigrationProblem(
                "state",
                f"the instance's {what} in state {snapshot.state!r} is open: it cannot "
                "move; migrate it once it has left that state",
            )
        )
        return TASK_NONE, ""
    new = target.states[state_to]
    if target.kind(state_to) is not StateKind.TASK or new.task is None:
        return TASK_CANCELLED, old.task.queue
    if new.task.fan_out is not None or new.task.child is not None:
        problems.append(
            MigrationProblem(
                path,
                f"state {state_to!r} is no plain task state: the open task "
                "of the instance cannot move to it",
            )
        )
    elif new.task.queue != old.task.queue:
        problems.append(
            MigrationProblem(
                path,
                f"the open task is on queue {old.task.queue!r}; state {state_to!r} serves "
                f"queue {new.task.queue!r}: a task moves only to a state on its own queue",
            )
        )
    return TASK_MOVED, old.task.queue


def _context(
    source: Definition,
    target: Definition,
    snapshot: Snapshot,
    sets: Mapping[str, str],
    problems: list[MigrationProblem],
) -> dict[str, JSONValue]:
    """The context under ``target``: its fields kept (conformed to their new type), set
    (``sets``, CEL over the old context) or given their default; others dropped."""
    values = _evaluated(source, target, snapshot, sets, problems)
    context: dict[str, JSONValue] = {}
    for name, spec in target.context_fields.items():
        if name in values:
            value, path = values[name], f"set[{name}]"
        elif name in snapshot.context:
            value, path = snapshot.context[name], f"context.{name}"
            old = source.context_fields.get(name)
            if old is not None and (old.type, old.nullable) == (spec.type, spec.nullable):
                context[name] = value  # declared alike: the value already fits
                continue
        else:
            context[name] = spec.default_value()
            continue
        try:
            context[name] = conform(value, spec.type, nullable=spec.nullable)
        except ValueTypeError as exc:
            problems.append(
                MigrationProblem(
                    path,
                    f"not a valid {spec.type} for version {target.version}'s field {name!r}: {exc}",
                )
            )
    return context


def _evaluated(
    source: Definition,
    target: Definition,
    snapshot: Snapshot,
    sets: Mapping[str, str],
    problems: list[MigrationProblem],
) -> dict[str, JSONValue]:
    workflow: dict[str, JSONValue] = {
        "id": snapshot.workflow_id,
        "state": snapshot.state,
        "revision": snapshot.revision,
        "definition": source.name,
        "version": source.version,
    }
    activation = source.environment.activation(snapshot.context, "", {}, workflow)
    values: dict[str, JSONValue] = {}
    for name, source_text in sets.items():
        path = f"set[{name}]"
        if name not in target.context_fields:
            fields = target.context_fields
            problems.append(_undeclared(path, target, "context field", name, fields))
            continue
        try:
            values[name] = _compiled(source, source_text).evaluate(activation)
        except (CelCompileError, CelEvaluationError) as exc:
            problems.append(MigrationProblem(path, f"{source_text!r}: {exc}"))
    return values


# A batch of migrations repeats one request's expressions instance after instance:
# compiling them once (per definition version) keeps a migration's cost near a reset's.
@functools.lru_cache(maxsize=256)
def _compiled(source: Definition, text: str) -> CompiledExpression:
    return source.environment.compile(text)
