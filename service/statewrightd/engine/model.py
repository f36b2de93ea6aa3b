"""Values the pure FSM engine takes and returns. All immutable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import MappingProxyType

from statewrightd import errors
from statewrightd.definitions.model import TaskSpec
from statewrightd.definitions.values import JSONValue
from statewrightd.domain import DEFAULT_PRIORITY, Status
from statewrightd.reasons import Reason
from statewrightd.store.records import FanOutProgress, ItemEnd

__all__ = [
    "FAILURE_ERRORS",
    "NO_TASK_WORK",
    "NO_TIMER_WORK",
    "FanOutProgress",
    "ItemEnd",
    "ItemRelease",
    "PlannedTask",
    "PlannedTimer",
    "Snapshot",
    "StepError",
    "StepResult",
    "TaskPlan",
    "TimerPlan",
    "TransitionTaken",
]


# What each reason a step fails an instance stands for as an error: it gives
# ``Workflow.error`` its code (through the one map from errors to codes).
FAILURE_ERRORS: Mapping[str, type[errors.StatewrightError]] = MappingProxyType(
    {
        Reason.NO_TRANSITION_MATCHED: errors.FailedPrecondition,
        Reason.RECURSION_LIMIT: errors.ResourceExhausted,
        Reason.EVALUATION_ERROR: errors.InvalidArgument,
        Reason.EVALUATION_BUDGET_EXCEEDED: errors.ResourceExhausted,
        Reason.TYPE_MISMATCH: errors.InvalidArgument,
        Reason.VALUE_TOO_DEEP: errors.InvalidArgument,
        Reason.CONTEXT_TOO_LARGE: errors.ResourceExhausted,
        Reason.TASK_FAILED: errors.FailedPrecondition,
        Reason.TASK_TIMED_OUT: errors.DeadlineExceeded,
        Reason.CHILD_FAILED: errors.FailedPrecondition,
        Reason.MAP_TOO_LARGE: errors.ResourceExhausted,
        Reason.TIMER_OUT_OF_RANGE: errors.InvalidArgument,
        Reason.CANCELLED: errors.Cancelled,
        # Not a failure: why a delayed instance is WAITING before its first step.
        Reason.START_DELAYED: errors.FailedPrecondition,
    }
)


@dataclass(frozen=True, slots=True)
class StepError:
    """Why an instance is FAILED (or, with reason CANCELLED, why it was cancelled)."""

    reason: str
    message: str
    metadata: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, slots=True)
class TransitionTaken:
    """One fired transition. ``event`` is None for an automatic transition.

    ``index`` is the transition's place in its definition, known to the step that fired
    it (not kept in history): what tells apart two transitions between the same states on
    the same event, as coverage of a definition's transitions must."""

    from_state: str
    to_state: str
    event: str | None
    index: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The durable state of one instance at one revision.

    ``context`` holds plain JSON values. The engine never mutates a snapshot's values;
    new snapshots share unchanged nested values with old ones (copy on write).
    """

    workflow_id: str
    definition: str
    version: int
    state: str
    status: Status
    context: Mapping[str, JSONValue]
    revision: int
    error: StepError | None = None
    # The fan-out (`map`) of the task state it rests in; None: none is open.
    fan_out: FanOutProgress | None = None
    # The start's own bound on the transitions of one step (it can only lower the
    # definition's); None: the definition's alone.
    recursion_limit: int | None = None
    # An operator's pause (PauseWorkflow); None: not paused. Nothing steps a paused
    # instance but its unpause or its cancel.
    pause: Pause | None = None


@dataclass(frozen=True, slots=True)
class Pause:
    """Who paused an instance and why; ``since`` is the pause step's save time (None in
    the pure step that pauses it, which knows no clock: its save fills it in)."""

    reason: str
    actor: str
    since: datetime | None = None


@dataclass(frozen=True, slots=True)
class PlannedTimer:
    """A timer a step arms: ``transition`` fires ``delay`` after the step, or at ``at``."""

    transition: int
    target: str
    after: str  # the delay as the definition writes it
    delay: timedelta | None = None
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class TimerPlan:
    """What a step does to the instance's timers. ``disarm``: it left a state whose timers
    may be armed (they all go); ``arm``: the timers of the state it came to rest in."""

    disarm: bool = False
    arm: tuple[PlannedTimer, ...] = ()


NO_TIMER_WORK = TimerPlan()


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """The task a step schedules: the task state it came to rest in, and its input."""

    state: str
    spec: TaskSpec
    input: Mapping[str, JSONValue]
    priority: int = DEFAULT_PRIORITY  # 1 (served first) .. 5
    concurrency_key: str | None = None
    item: int | None = None  # a fan-out's item: its index in the list


@dataclass(frozen=True, slots=True)
class TaskPlan:
    """What a step does to the instance's task. ``cancel``: it left a task state (its open
    task is cancelled); ``schedule``: the task of the task state it came to rest in.

    A fan-out: ``items``, one task per element, of which the first ``offered`` are
    offered at once and the rest held; ``release``: the item (of the fan-out scheduled at
    revision ``release[0]``, index ``release[1]``) that an item step ending another
    offers in its place."""

    cancel: bool = False
    schedule: PlannedTask | None = None
    items: tuple[PlannedTask, ...] = ()
    offered: int = 0
    release: ItemRelease | None = None


@dataclass(frozen=True, slots=True)
class ItemRelease:
    """A held item to offer: index ``index`` of the fan-out entered at ``revision``."""

    revision: int
    index: int
    spec: TaskSpec


NO_TASK_WORK = TaskPlan()


@dataclass(frozen=True, slots=True)
class StepResult:
    """Outcome of one step.

    When ``changed`` is False (a signal accepted but every guard false) ``snapshot`` is
    the input snapshot, unchanged, and there is nothing to save. Otherwise
    ``snapshot.revision`` is the input revision + 1 and is what the runtime saves.
    """

    snapshot: Snapshot
    transitions: tuple[TransitionTaken, ...]
    changed: bool = True
    timers: TimerPlan = NO_TIMER_WORK
    task: TaskPlan = NO_TASK_WORK

    @property
    def status(self) -> Status:
        return self.snapshot.status

    @property
    def error(self) -> StepError | None:
        return self.snapshot.error
