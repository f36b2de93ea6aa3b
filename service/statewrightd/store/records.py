"""Plain, immutable values that cross the store boundary.

The engine builds these; the backends persist them. Nothing here knows about SQL.
Timestamps are supplied by the caller (timezone-aware, UTC) so that a save is a pure
function of its input and a read-back after a lost COMMIT can compare exact values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar

from statewrightd.domain import DEFAULT_PRIORITY, Status, TaskStatus, TraceContext

_Item = TypeVar("_Item")


@dataclass(frozen=True, slots=True)
class InstanceRecord:
    workflow_id: str
    definition: str
    version: int
    state: str
    status: Status
    context: dict[str, Any]
    revision: int
    error: dict[str, Any] | None
    create_time: datetime
    update_time: datetime
    # When a finished instance may be removed (set by the step that finishes it); None
    # while it lives, and for instances finished before retention existed.
    expire_time: datetime | None = None
    # The open fan-out of the task state it rests in (not a column: read from its items,
    # and carried from the step that saved it).
    fan_out: FanOutProgress | None = None
    # The start's own recursion limit (at most the definition's); None: the definition's.
    recursion_limit: int | None = None
    # The run the instance is in: 1 from its creation, one more for every restart (a
    # start with if_exists RESTART of the finished instance).
    run: int = 1
    # An operator's pause ({reason, actor, time}); None: not paused. While it is set, the
    # store offers none of the instance's tasks and claims none of its timers.
    pause: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class WholeInstance:
    """An instance's row with its armed timers (in due order) and its open task, as one
    read found them (``Repository.load_whole``)."""

    record: InstanceRecord
    timers: tuple[TimerRecord, ...]
    task: TaskRecord | None


@dataclass(frozen=True, slots=True)
class ChildLink:
    """A child workflow's parent: the instance, the task (on the children's queue) that
    stands for the child in it, and the state that task belongs to. Written by the child
    runner before it starts the child, so that an id another instance already holds is
    never taken for a child."""

    workflow_id: str  # the child
    parent_id: str
    parent_task: str
    parent_state: str
    create_time: datetime


@dataclass(frozen=True, slots=True)
class ItemEnd:
    """An ended item of a fan-out: its result (completed) or its error (given up)."""

    result: Any = None
    error: Any = None


@dataclass(frozen=True, slots=True)
class FanOutProgress:
    """Where a fan-out is: its items (scheduled by the step at ``revision``), how many
    completed and gave up. Every item step saves it with the instance's revision, so a
    snapshot's progress is the store's at that revision. ``ended``: by index, the items
    that ended before the step to come, loaded only when at most one is still open (the
    join needs them, and they no longer change); ``errors``: the first few failures."""

    revision: int
    total: int
    completed: int = 0
    given_up: int = 0
    ended: Mapping[int, ItemEnd] | None = None
    errors: tuple[Mapping[str, Any], ...] = ()

    @property
    def open(self) -> int:
        return self.total - self.completed - self.given_up


@dataclass(frozen=True, slots=True)
class ScheduleRecord:
    """A schedule as stored: its whole document (spec, action, policies, state, the record
    of its fires) and the columns its claims read. ``version`` counts every write (fires
    too): a write names the version it read and fails on another."""

    schedule_id: str
    document: dict[str, Any]
    next_fire_time: datetime | None  # when it is next to be looked at (None: never)
    version: int
    create_time: datetime
    update_time: datetime


@dataclass(frozen=True, slots=True)
class TimerRecord:
    """An armed timer: ``transition`` of the instance's definition fires at ``due_time``
    unless the instance leaves the state first. ``timer_id`` is "{revision}.{transition}",
    ``revision`` that of the step that armed it."""

    workflow_id: str
    timer_id: str
    revision: int
    transition: int
    target: str
    after: str  # the delay as the definition writes it
    due_time: datetime
    # The trace context of the step that armed it (None: that step was not traced): the
    # step the timer fires is linked to it.
    trace: TraceContext | None = None


@dataclass(frozen=True, slots=True)
class TimerChange:
    """What a step does to its instance's timers, in its own transaction."""

    disarm: bool = False  # the step left the state: every armed timer of the instance goes
    arm: tuple[TimerRecord, ...] = ()
    # The timer this step fires. The step saves only if it is still armed, so a timer
    # fires (or is consumed) once, whichever replicas race.
    fired: str | None = None

    def __bool__(self) -> bool:
        return self.disarm or bool(self.arm) or self.fired is not None


NO_TIMERS = TimerChange()


@dataclass(frozen=True, slots=True)
class TaskRecord:
    """One task: the work one entry of a task state hands to a worker on ``queue``."""

    workflow_id: str
    task_id: str  # the revision of the step that scheduled it, as text
    revision: int
    state: str
    queue: str
    input: dict[str, Any]
    status: TaskStatus
    attempt: int  # the current (or last) attempt; 0 before the first lease
    max_attempts: int
    lease_token: str | None
    lease_expire_time: datetime | None
    attempt_start_time: datetime | None
    available_time: datetime  # when it may be leased (scheduled, or after a backoff)
    schedule_time: datetime
    deadline: datetime  # schedule_to_close
    start_to_close: float  # seconds, one attempt
    heartbeat: float | None  # seconds a worker may go without a heartbeat
    retry: dict[str, Any]  # initial_interval, backoff, max_interval, non_retryable
    heartbeat_details: dict[str, Any] | None
    last_error: dict[str, Any] | None  # type, message, details
    last_request_id: str | None
    update_time: datetime
    priority: int = DEFAULT_PRIORITY  # 1 (served first) .. 5
    concurrency_key: str | None = None  # what the queue's per-key limits count by
    # An item of a fan-out (`map`): its index in the list, and once it completed its
    # result, kept here (not in the context) until the join.
    item_index: int | None = None
    result: dict[str, Any] | None = None
    # The trace context of the step that scheduled it (None: that step was not traced).
    trace: TraceContext | None = None


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """A task queue's open tasks, as the database counts them."""

    queue: str
    ready: int  # scheduled, or past their backoff: waiting for a worker
    oldest_ready: datetime | None
    leased: int


@dataclass(frozen=True, slots=True)
class TaskFinish:
    """A task that a step finishes. The step saves only while the task is as the step saw
    it: leased with ``lease_token`` (``leased``), or open at ``attempt`` with that token."""

    task_id: str
    status: TaskStatus  # COMPLETED, FAILED or TIMED_OUT
    lease_token: str | None
    attempt: int | None  # None: any (the lease token names the attempt)
    leased: bool  # the fence requires a current lease (a completion)
    last_error: dict[str, Any] | None = None
    result: dict[str, Any] | None = None  # an item's result, kept on its task
    # The task's update_time as the finishing server last saw it written; None: any. A
    # server that completes a lease from its memory of it (no read first) requires the
    # row unchanged since, so that what it answers of the task is what is stored.
    seen: datetime | None = None


# A held item of a fan-out waits for its turn with its times here: never available, past
# no deadline. Its release sets them (see TaskRelease).
HELD_UNTIL = datetime(9999, 12, 31, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class TaskRelease:
    """A held item offered now: available from ``now``, its schedule_to_close from then."""

    task_id: str
    queue: str
    now: datetime
    deadline: datetime


@dataclass(frozen=True, slots=True)
class TaskChange:
    """What a step does to its instance's tasks, in its own transaction."""

    schedule: TaskRecord | None = None
    cancel: bool = False  # the step left a task state: its open task is cancelled
    finish: TaskFinish | None = None
    # A fan-out: the items a step entering a map state writes (held ones have their
    # ``available_time`` at HELD_UNTIL), and the held item an item step offers instead.
    items: tuple[TaskRecord, ...] = ()
    release: TaskRelease | None = None

    def __bool__(self) -> bool:
        return (
            self.schedule is not None
            or self.cancel
            or self.finish is not None
            or bool(self.items)
            or self.release is not None
        )

    def ready_queue(self) -> TaskRecord | TaskRelease | None:
        """What names the queue this step makes a task ready on (polls to wake), if any."""
        return self.schedule or (self.items[0] if self.items else None) or self.release


NO_TASKS = TaskChange()


@dataclass(frozen=True, slots=True)
class HistoryRecord:
    """One row per revision: the step's transitions plus the instance as of that revision."""

    workflow_id: str
    revision: int
    event: str | None
    transitions: list[dict[str, Any]]
    state: str
    status: Status
    context: dict[str, Any]
    error: dict[str, Any] | None
    time: datetime
    # The timers this step armed (as plain values), when it armed any.
    timers: list[dict[str, Any]] | None = None
    # Who caused the step (a principal); None for rows saved before it was recorded.
    actor: str | None = None
    # What the step took (a resume's input, a signal's payload, a task's result or
    # failure, the fired timer, a cancellation's reason, a start's input); None for rows
    # saved before it was recorded.
    input: dict[str, Any] | None = None
    # The run of the instance the step belongs to (the instance row's, as it saved it).
    run: int = 1


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """An idempotency record, written in the same transaction as the step it answered."""

    request_id: str
    workflow_id: str
    method: str
    fingerprint: str
    response: bytes
    create_time: datetime
    # A record of the same request id created at or before this is out of its window (it
    # answers no retry any more): this one takes its place. None: records never expire.
    live_after: datetime | None = None


@dataclass(frozen=True, slots=True)
class SearchValue:
    """One projected value of a search field: ``text`` for the text kinds (a text field's
    value in lower case, one row per element of a keyword list), ``number`` for the
    others (a bool as 0 or 1, a timestamp as its seconds since the epoch)."""

    field: str
    text: str | None = None
    number: float | None = None


# An instance's search values after a save; None on an operation: they did not change.
SearchValues = tuple[SearchValue, ...]


@dataclass(frozen=True, slots=True)
class Create:
    record: InstanceRecord
    history: HistoryRecord
    request: RequestRecord | None = None
    timers: TimerChange = NO_TIMERS
    tasks: TaskChange = NO_TASKS
    search: SearchValues | None = None


@dataclass(frozen=True, slots=True)
class Save:
    new: InstanceRecord
    expected_revision: int
    history: HistoryRecord
    request: RequestRecord | None = None
    timers: TimerChange = NO_TIMERS
    tasks: TaskChange = NO_TASKS
    search: SearchValues | None = None


Operation = Create | Save


@dataclass(frozen=True, slots=True)
class Tombstone:
    """What the purge left of an instance it removed: when, and when it was due."""

    workflow_id: str
    expire_time: datetime
    removed_time: datetime


@dataclass(frozen=True, slots=True)
class Purged:
    """One purge batch: the instances it removed and the rows of each table it deleted."""

    workflow_ids: tuple[str, ...] = ()
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows deleted


@dataclass(frozen=True, slots=True)
class RetentionCounts:
    """What is past its time and not yet removed, as the database counts it now."""

    overdue_instances: int  # counted up to a cap (see Repository.retention_counts)
    oldest_instance_due: datetime | None  # the earliest expire_time that has passed
    overdue_requests: int
    oldest_request_time: datetime | None  # when the oldest of them was recorded


@dataclass(frozen=True, slots=True)
class DefinitionRecord:
    name: str
    version: int
    source: str
    digest: str
    source_name: str
    create_time: datetime


@dataclass(frozen=True, slots=True)
class Page(Generic[_Item]):
    """One page of a listing (instances, tasks)."""

    items: list[_Item]
    next_page_token: str  # "" when there are no more items


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One key of a listing's order: a column of the instance (create_time, update_time,
    definition, state, status, or name: the workflow id) or a search field."""

    column: str
    descending: bool = False
    # For a search field: the search table's column its values are in (text or number).
    value_column: Literal["", "text", "number"] = ""

    @property
    def spelled(self) -> str:
        return self.column + " desc" * self.descending


@dataclass(frozen=True, slots=True)
class ListOrder:
    """The order of an instance listing: by a time column, ties broken by workflow id in
    the same direction, so that (time, id) is a total order a page token can resume; or
    by several keys (``then`` after the first), ties by workflow id in the last one's
    direction."""

    column: str = "create_time"  # create_time, update_time or search.<field>
    descending: bool = False
    # For a search field: the search table's column its values are in (text or number).
    value_column: Literal["", "text", "number"] = ""
    then: tuple[OrderKey, ...] = ()

    @property
    def keys(self) -> tuple[OrderKey, ...]:
        return (OrderKey(self.column, self.descending, self.value_column), *self.then)

    @property
    def by_keys(self) -> bool:
        """Whether it is read by the listing of several keys (store.ordering): anything
        but one time or one search field, which have listings of their own."""
        return bool(self.then) or self.column in ("definition", "state", "status", "name")

    @property
    def search_field(self) -> str | None:
        """The search field it orders by (ties by workflow id), or None."""
        if self.then:
            return None
        return self.column.removeprefix("search.") if self.value_column else None

    @property
    def spelled(self) -> str:
        """As ListWorkflowsRequest.order_by spells it."""
        return ", ".join(key.spelled for key in self.keys)


OLDEST_FIRST = ListOrder()


def target_of(op: Operation) -> InstanceRecord:
    """The instance as it is meant to be once ``op`` commits."""
    return op.record if isinstance(op, Create) else op.new


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """A batch operation as stored. ``document`` holds what it was started with (the
    operation and its arguments, definition, filter, reason, rate, actor, the caller's
    definition patterns) and, once cancelled, ``cancel_reason``; the store reads none of
    it. ``state`` is "RUNNING", "COMPLETED" or "CANCELLED"; the counts are kept by the
    store as items end. ``version`` counts every write."""

    batch_id: str
    document: dict[str, Any]
    state: str
    matched: int
    done: int
    failed: int
    version: int
    create_time: datetime
    update_time: datetime
    end_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class BatchItemEnd:
    """How one item of a batch ended: ``failed`` False (done), or True with the error's
    gRPC code name, ErrorInfo reason and message."""

    workflow_id: str
    failed: bool = False
    code: str = ""
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class BatchItemFailure:
    """An item a batch failed on, as recorded."""

    workflow_id: str
    code: str
    reason: str
    message: str
    time: datetime
