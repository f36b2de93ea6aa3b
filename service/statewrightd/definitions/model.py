"""The compiled, immutable form of a workflow definition."""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from statewrightd.definitions.cel import CompiledExpression, Environment
from statewrightd.definitions.values import FieldType, JSONValue, Reducer, to_json
from statewrightd.domain import SearchKind

FINISH = "__finish__"
# The event a task state's task fires when it gives up (out of attempts, non-retryable,
# or past its schedule_to_close timeout).
TASK_FAILED = "task_failed"
# The event a child workflow state fires when its child ends FAILED or CANCELLED (or could
# not be started).
CHILD_FAILED = "child_failed"
# The queue of the tasks that stand for child workflows: the server's own runner leases
# them (it starts each child, and ends the task with the child's outcome). No worker can
# poll it: a queue name a definition may write never starts with "@".
CHILD_QUEUE = "@children"
# A child's task is held for as long as the child runs: its lease and deadline are this
# far away (a child running longer than this gives up, as a task past its deadline does).
CHILD_HOLD_SECONDS = 10 * 365 * 86400.0
# The event history and watchers report for the step that applied a task's result.
TASK_COMPLETED = "task_completed"
# The event name history and watchers report for a step a timer started.
TIMER_EVENT = "after"
# A definition's name, which is also part of resource names and URLs.
DEFINITION_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}\Z")
# A task queue's name, which workers poll by.
QUEUE_NAME = re.compile(r"^[a-z][a-z0-9-.]{0,62}\Z")
# The event a resume means when it names none (or names this): the wait state's first.
RESUME_ALIAS = "resume"
DEFAULT_RECURSION_LIMIT = 25
# A definition's ``retention: forever``: its finished instances are never removed.
FOREVER = math.inf


class StateKind(enum.Enum):
    """What a step does once it has entered the state (the execution rules' second one):
    halt (WAIT), take an automatic transition (AUTOMATIC), rest RUNNING until an event or
    a timer moves it (EVENT_ONLY), or complete (LEAF)."""

    WAIT = "wait"
    AUTOMATIC = "automatic"
    EVENT_ONLY = "event_only"
    LEAF = "leaf"
    TASK = "task"  # rests RUNNING until its task's result (or an event) moves it on


@dataclass(frozen=True, slots=True)
class Delay:
    """When a timer transition fires after its state is entered: a fixed ``seconds``
    (``after: 48h``), or an ``expression`` giving a duration or a timestamp
    (``after_expr``), evaluated by the step that enters the state."""

    text: str  # as written: the literal or the expression's source
    seconds: float | None = None
    expression: CompiledExpression | None = None


@dataclass(frozen=True, slots=True)
class ContextField:
    name: str
    type: FieldType
    reducer: Reducer
    default: object  # frozen JSON (tuples / read-only maps); see default_value()
    nullable: bool  # declared without a default: starts as null and may be set to null

    def default_value(self) -> JSONValue:
        """A fresh, mutable-safe copy of the default."""
        return to_json(self.default)


@dataclass(frozen=True, slots=True)
class Assignment:
    """One ``field: expression`` of a ``set``."""

    field: str
    expression: CompiledExpression
    path: str


@dataclass(frozen=True, slots=True)
class SetAction:
    """A ``set`` block: every expression sees the context as it was before the block."""

    assignments: tuple[Assignment, ...]
    path: str


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a task's failed attempts are retried: up to ``max_attempts`` in all, the n-th
    retry after a random delay up to min(max_interval, initial_interval * backoff**(n-1))
    (full jitter). A failure whose type is in ``non_retryable`` gives up at once."""

    max_attempts: int = 3
    initial_interval: float = 1.0
    backoff: float = 2.0
    max_interval: float = 60.0
    non_retryable: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """The work a task state hands to a worker on ``queue`` when it is entered."""

    queue: str
    input: CompiledExpression | None  # gives a map; None: an empty one
    apply: SetAction | None  # assignments that read ``result``, run on completion
    start_to_close: float = 300.0  # one attempt, seconds
    heartbeat: float | None = None  # the longest a worker may go without a heartbeat
    schedule_to_close: float = 3600.0  # every attempt together
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    # Flow control on the queue: an int 1 (served first) .. 5, and the key a queue's
    # per-key limits count by (None: the default priority, and no key).
    priority: CompiledExpression | None = None
    concurrency_key: CompiledExpression | None = None
    fan_out: FanOut | None = None  # `map`: one task per element of a list
    child: ChildSpec | None = None  # a `workflow:` state: the task starts a child workflow


@dataclass(frozen=True, slots=True)
class ChildSpec:
    """A ``workflow:`` state's child: its definition (and version; None: the latest when
    it starts), and the expression of its id (None: ``<parent id>.<state>.<revision>``,
    and for an item of a ``map`` ``.<index>`` after it)."""

    definition: str
    version: int | None = None
    id: CompiledExpression | None = None


def failed_event(spec: TaskSpec) -> str:
    """The reserved event a task state's task fires when it gives up: ``child_failed`` for
    a child workflow's, ``task_failed`` for a worker's."""
    return TASK_FAILED if spec.child is None else CHILD_FAILED


@dataclass(frozen=True, slots=True)
class FanOut:
    """A task state's ``map``: the list whose elements become one task each, how many of
    them are offered at once, and how many may give up before the state does."""

    items: CompiledExpression  # gives a list; `input` reads `item` and `index`
    max_concurrency: int | None = None  # None: every item at once
    tolerated_failures: int = 0


@dataclass(frozen=True, slots=True)
class State:
    name: str
    wait: bool
    entry: tuple[SetAction, ...]
    exit: tuple[SetAction, ...]
    description: str = ""
    task: TaskSpec | None = None


@dataclass(frozen=True, slots=True)
class Transition:
    index: int
    source: str
    target: str
    event: str | None  # None: automatic, or a timer's
    guard: CompiledExpression | None
    set: SetAction | None
    after: Delay | None = None  # a timer transition

    @property
    def path(self) -> str:
        return f"transitions[{self.index}]"

    @property
    def automatic(self) -> bool:
        return self.event is None and self.after is None


@dataclass(frozen=True, slots=True)
class SearchField:
    """One declared search field: its name in filters (search.<name>), its kind, and the
    expression whose value each save projects."""

    name: str
    kind: SearchKind
    value: CompiledExpression
    description: str = ""

    @property
    def path(self) -> str:
        return f"search.{self.name}.value"


@dataclass(frozen=True, slots=True, eq=False)
class Definition:
    name: str
    version: int
    description: str
    source: str
    digest: str
    initial: str
    states: Mapping[str, State]  # ordered as declared
    transitions: tuple[Transition, ...]
    context_fields: Mapping[str, ContextField]
    recursion_limit: int
    environment: Environment = field(repr=False)
    # Derived lookup tables, computed once by the loader.
    kinds: Mapping[str, StateKind] = field(repr=False)
    automatic_from: Mapping[str, tuple[Transition, ...]] = field(repr=False)
    event_transitions: Mapping[str, Mapping[str, tuple[Transition, ...]]] = field(repr=False)
    all_events: tuple[str, ...] = field(repr=False)
    # Timer transitions by source state, in declaration order.
    timed_from: Mapping[str, tuple[Transition, ...]] = field(repr=False)
    # Seconds a finished instance is kept before it is removed (FOREVER: never); None
    # leaves it to the server's --retention.
    retention: float | None = None
    # The search fields, as declared (see definitions.search).
    search_fields: Mapping[str, SearchField] = field(default_factory=dict, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Definition):
            return NotImplemented
        return self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    @property
    def key(self) -> tuple[str, int]:
        return (self.name, self.version)

    def events(self) -> tuple[str, ...]:
        """Every event name the definition declares, in first-declared order."""
        return self.all_events

    def events_from(self, state: str) -> tuple[str, ...]:
        """Events declared from ``state``, in first-declared order."""
        return tuple(self.event_transitions.get(state, {}))

    def kind(self, state: str) -> StateKind:
        return self.kinds[state]
