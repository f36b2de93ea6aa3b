"""Plain, immutable views of the API's messages, with contexts as dicts.

The client returns these instead of protobuf messages so that callers read
``workflow.context["topic"]`` and compare ``workflow.status is WorkflowStatus.COMPLETED``
without touching ``Struct`` or enum numbers. Each view keeps the message it was made from
in ``proto`` for anything not surfaced here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Protocol, TypeAlias, TypeVar

import grpc
from google.protobuf import timestamp_pb2
from google.rpc import error_details_pb2, status_pb2

from statewright.errors import DOMAIN, StatewrightError, error_info_from_status, make_error
from statewright.v1 import (
    batch_service_pb2,
    definition_pb2,
    task_pb2,
    task_service_pb2,
    workflow_pb2,
    workflow_service_pb2,
)
from statewright.values import JSONObject, JSONValue, from_struct, from_value, to_struct

__all__ = [
    "BatchAction",
    "BatchCancel",
    "BatchDelete",
    "BatchItemFailure",
    "BatchMigrate",
    "BatchOperation",
    "BatchPause",
    "BatchReport",
    "BatchReset",
    "BatchRetry",
    "BatchSignal",
    "BatchStartResult",
    "BatchState",
    "BatchUnpause",
    "Definition",
    "SignalRejection",
    "SignalResult",
    "StartResult",
    "StepResult",
    "Task",
    "TaskError",
    "TaskHeartbeat",
    "TaskOutcome",
    "TaskStatus",
    "Timer",
    "Transition",
    "WatchEvent",
    "WatchEventType",
    "Workflow",
    "WorkflowPage",
    "WorkflowPause",
    "WorkflowStatus",
    "batch_action",
    "batch_name",
    "workflow_name",
]

WORKFLOWS_PREFIX = "workflows/"

_Enum = TypeVar("_Enum", bound=enum.StrEnum)


class _ProtoEnum(Protocol):
    def Name(self, number: Any) -> str: ...


def _member(cls: type[_Enum], values: _ProtoEnum, prefix: str, number: int) -> _Enum:
    """The member of ``cls`` for a proto enum number: its proto name without ``prefix``."""
    return cls(values.Name(number).removeprefix(prefix))


def _parse(cls: type[_Enum], prefix: str, text: object) -> _Enum:
    """The member ``text`` names: a member, its name (``WAITING``) or the proto's name of it
    (``WORKFLOW_STATUS_WAITING``), in any case."""
    if isinstance(text, cls):
        return text
    name = str(text).strip().upper()
    try:
        return cls(name.removeprefix(prefix))
    except ValueError:
        choices = ", ".join(m.value for m in cls if m.value != "UNSPECIFIED")
        raise ValueError(
            f"{str(text)[:64]!r} is not a {cls.__name__}: one of {choices} "
            f"(any case, with or without the {prefix} prefix)"
        ) from None


def workflow_name(name_or_id: str) -> str:
    """``workflows/{id}`` for either a resource name or a bare workflow id."""
    return name_or_id if name_or_id.startswith(WORKFLOWS_PREFIX) else WORKFLOWS_PREFIX + name_or_id


class _Named(enum.StrEnum):
    """A StrEnum whose ``auto()`` values are the members' names, as the proto spells them."""

    @staticmethod
    def _generate_next_value_(name: str, start: int, count: int, last_values: list[Any]) -> str:
        return name


class WorkflowStatus(_Named):
    """The lifecycle status of an instance (the proto enum without its prefix)."""

    UNSPECIFIED = enum.auto()
    RUNNING = enum.auto()
    WAITING = enum.auto()
    COMPLETED = enum.auto()
    FAILED = enum.auto()
    CANCELLED = enum.auto()

    @property
    def terminal(self) -> bool:
        """True for statuses an instance never leaves."""
        return self in _TERMINAL

    @classmethod
    def from_proto(cls, value: int) -> WorkflowStatus:
        return _member(cls, workflow_pb2.WorkflowStatus, "WORKFLOW_STATUS_", value)

    @classmethod
    def parse(cls, text: object) -> WorkflowStatus:
        """``WAITING``, ``waiting`` or ``WORKFLOW_STATUS_WAITING``; ValueError otherwise."""
        return _parse(cls, "WORKFLOW_STATUS_", text)

    def to_proto(self) -> workflow_pb2.WorkflowStatus.ValueType:
        return workflow_pb2.WorkflowStatus.Value("WORKFLOW_STATUS_" + self.value)


_TERMINAL = frozenset({WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED})


class SignalRejection(_Named):
    """Why SignalWorkflow did not apply a signal."""

    UNSPECIFIED = enum.auto()
    NOT_RUNNING = enum.auto()
    PERSISTING = enum.auto()
    RECOVERY_REQUIRED = enum.auto()
    SHUTTING_DOWN = enum.auto()
    WORKFLOW_PAUSED = enum.auto()

    @classmethod
    def from_proto(cls, value: int) -> SignalRejection:
        return _member(cls, workflow_service_pb2.SignalRejection, "SIGNAL_REJECTION_", value)


class WatchEventType(_Named):
    """CURRENT: the instance as it was when the watch opened; STEP: one saved step."""

    UNSPECIFIED = enum.auto()
    CURRENT = enum.auto()
    STEP = enum.auto()

    @classmethod
    def from_proto(cls, value: int) -> WatchEventType:
        return _member(cls, workflow_service_pb2.WatchEventType, "WATCH_EVENT_TYPE_", value)


class TaskStatus(_Named):
    """Where a task is in its life (the proto enum without its prefix)."""

    UNSPECIFIED = enum.auto()
    SCHEDULED = enum.auto()  # waiting for a worker to poll it
    LEASED = enum.auto()  # a worker holds it under a lease
    BACKOFF = enum.auto()  # an attempt failed; it waits for its retry delay
    COMPLETED = enum.auto()
    FAILED = enum.auto()  # out of attempts, or a non-retryable failure
    CANCELLED = enum.auto()  # its state was left before it finished
    TIMED_OUT = enum.auto()  # past its schedule_to_close timeout

    @classmethod
    def from_proto(cls, value: int) -> TaskStatus:
        return _member(cls, task_pb2.TaskStatus, "TASK_STATUS_", value)

    @classmethod
    def parse(cls, text: object) -> TaskStatus:
        """``LEASED``, ``leased`` or ``TASK_STATUS_LEASED``; ValueError otherwise."""
        return _parse(cls, "TASK_STATUS_", text)


_TASK_TERMINAL = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.TIMED_OUT}
)


def _time(ts: timestamp_pb2.Timestamp, present: bool) -> datetime | None:
    return ts.ToDatetime(tzinfo=UTC) if present else None


@dataclass(frozen=True, slots=True)
class Transition:
    """One transition fired during a step."""

    from_state: str
    to_state: str
    event: str

    @classmethod
    def from_proto(cls, msg: workflow_pb2.Transition) -> Transition:
        return cls(from_state=msg.from_state, to_state=msg.to_state, event=msg.event)

    def to_dict(self) -> JSONObject:
        return {"from_state": self.from_state, "to_state": self.to_state, "event": self.event}


@dataclass(frozen=True, slots=True)
class Timer:
    """A timer armed in an instance's current state: its transition to ``target_state``
    fires at ``due_time`` unless the instance leaves the state first."""

    timer_id: str
    target_state: str
    after: str
    due_time: datetime | None

    @classmethod
    def from_proto(cls, msg: workflow_pb2.Timer) -> Timer:
        return cls(
            timer_id=msg.timer_id,
            target_state=msg.target_state,
            after=msg.after,
            due_time=_time(msg.due_time, msg.HasField("due_time")),
        )

    def to_dict(self) -> JSONObject:
        return {
            "timer_id": self.timer_id,
            "target_state": self.target_state,
            "after": self.after,
            "due_time": _iso(self.due_time),
        }


@dataclass(frozen=True, slots=True)
class TaskError:
    """Why an attempt of a task failed: ``type`` is the UPPER_SNAKE name definitions match."""

    type: str
    message: str
    details: JSONObject

    @classmethod
    def from_proto(cls, msg: task_pb2.TaskError) -> TaskError:
        return cls(type=msg.type, message=msg.message, details=from_struct(msg.details))

    def to_dict(self) -> JSONObject:
        return {"type": self.type, "message": self.message, "details": self.details}


@dataclass(frozen=True, slots=True)
class Task:
    """Durable work a task state hands to a worker, as of one read or lease.

    ``lease_token`` and ``lease_expire_time`` are set only on a task leased to the caller
    (by ``poll_tasks``); ``heartbeat_details`` is what the latest heartbeat carried, so a
    later attempt can pick up where an earlier one stopped.
    """

    name: str
    workflow: str
    state: str
    queue: str
    input: JSONObject
    attempt: int
    status: TaskStatus
    lease_token: str
    lease_expire_time: datetime | None
    schedule_time: datetime | None
    deadline: datetime | None
    heartbeat_details: JSONObject
    last_error: TaskError | None
    revision: int
    priority: int  # 1 (served first) to 5
    concurrency_key: str  # what its queue's per-key limits count it by; "" for none
    proto: task_pb2.Task = field(repr=False, compare=False)
    # An item of a fan-out (`map`): its index in the list (None for a state without
    # `map`), and its result once it completed (kept there until the join).
    item_index: int | None = None
    result: JSONObject | None = None
    # The W3C trace context of the step that scheduled it ("" when tracing was off): the
    # worker's span of the task is its child.
    traceparent: str = ""
    tracestate: str = ""

    @property
    def terminal(self) -> bool:
        """True once the task finished: COMPLETED, FAILED, CANCELLED or TIMED_OUT."""
        return self.status in _TASK_TERMINAL

    @classmethod
    def from_proto(cls, msg: task_pb2.Task) -> Task:
        return cls(
            name=msg.name,
            workflow=msg.workflow,
            state=msg.state,
            queue=msg.queue,
            input=from_struct(msg.input),
            attempt=msg.attempt,
            status=TaskStatus.from_proto(msg.status),
            lease_token=msg.lease_token,
            lease_expire_time=_time(msg.lease_expire_time, msg.HasField("lease_expire_time")),
            schedule_time=_time(msg.schedule_time, msg.HasField("schedule_time")),
            deadline=_time(msg.deadline, msg.HasField("deadline")),
            heartbeat_details=from_struct(msg.heartbeat_details),
            last_error=TaskError.from_proto(msg.last_error) if msg.HasField("last_error") else None,
            revision=msg.revision,
            priority=msg.priority,
            concurrency_key=msg.concurrency_key,
            proto=msg,
            item_index=msg.item_index if msg.HasField("item_index") else None,
            result=from_struct(msg.result) if msg.HasField("result") else None,
            traceparent=msg.traceparent,
            tracestate=msg.tracestate,
        )

    def to_dict(self) -> JSONObject:
        """A JSON-ready view (timestamps as RFC 3339 text; the lease token left out)."""
        return {
            "name": self.name,
            "workflow": self.workflow,
            "state": self.state,
            "queue": self.queue,
            "status": self.status.value,
            "attempt": self.attempt,
            "input": self.input,
            "lease_expire_time": _iso(self.lease_expire_time),
            "schedule_time": _iso(self.schedule_time),
            "deadline": _iso(self.deadline),
            "heartbeat_details": self.heartbeat_details,
            "last_error": self.last_error.to_dict() if self.last_error is not None else None,
            "revision": self.revision,
            "priority": self.priority,
            "concurrency_key": self.concurrency_key,
            "item_index": self.item_index,
            "result": self.result,
            "traceparent": self.traceparent,
            "tracestate": self.tracestate,
        }


@dataclass(frozen=True, slots=True)
class WorkflowParent:
    """A child workflow's parent: its name, and the ``workflow:`` state that started the
    child (and the parent's task that stands for it)."""

    name: str
    state: str
    task_id: str

    @property
    def workflow_id(self) -> str:
        return self.name.removeprefix("workflows/")

    @classmethod
    def from_proto(cls, msg: workflow_pb2.WorkflowParent) -> WorkflowParent:
        return cls(msg.name, msg.state, msg.task_id)

    def to_dict(self) -> JSONObject:
        return {"name": self.name, "state": self.state, "task_id": self.task_id}


@dataclass(frozen=True, slots=True)
class WorkflowChildren:
    """A parent's live child workflows: how many, and the first names (all of them:
    ``list_workflows(filter='parent = "workflows/ID"')``)."""

    open: int
    names: tuple[str, ...]

    @classmethod
    def from_proto(cls, msg: workflow_pb2.WorkflowChildren) -> WorkflowChildren:
        return cls(msg.open, tuple(msg.names))

    def to_dict(self) -> JSONObject:
        return {"open": self.open, "names": list(self.names)}


@dataclass(frozen=True, slots=True)
class FanOutProgress:
    """Where a fan-out (``map`` on a task state) is: its items, how many are still open,
    completed and given up. The items themselves: ``list_tasks(workflow=...)``."""

    total: int
    open: int
    completed: int
    given_up: int
    revision: int  # the step that entered the state and wrote the items

    @classmethod
    def from_proto(cls, msg: workflow_pb2.FanOutProgress) -> FanOutProgress:
        return cls(msg.total, msg.open, msg.completed, msg.given_up, msg.revision)

    def to_dict(self) -> JSONObject:
        return {
            "total": self.total,
            "open": self.open,
            "completed": self.completed,
            "given_up": self.given_up,
            "revision": self.revision,
        }


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """A task queue's flow control: every limit is shared by all server replicas; 0 means
    none. ``burst`` / ``key_burst``: the token buckets' sizes (0: the rate rounded up)."""

    queue: str
    max_leased: int = 0
    rate: float = 0.0
    burst: int = 0
    key_max_leased: int = 0
    key_rate: float = 0.0
    key_burst: int = 0
    update_time: datetime | None = None

    @classmethod
    def from_proto(cls, msg: task_service_pb2.QueueConfig) -> QueueConfig:
        return cls(
            queue=msg.queue,
            max_leased=msg.max_leased,
            rate=msg.rate,
            burst=msg.burst,
            key_max_leased=msg.key_max_leased,
            key_rate=msg.key_rate,
            key_burst=msg.key_burst,
            update_time=_time(msg.update_time, msg.HasField("update_time")),
        )

    def to_proto(self) -> task_service_pb2.QueueConfig:
        return task_service_pb2.QueueConfig(
            queue=self.queue,
            max_leased=self.max_leased,
            rate=self.rate,
            burst=self.burst,
            key_max_leased=self.key_max_leased,
            key_rate=self.key_rate,
            key_burst=self.key_burst,
        )

    def to_dict(self) -> JSONObject:
        return {
            "queue": self.queue,
            "max_leased": self.max_leased,
            "rate": self.rate,
            "burst": self.burst,
            "key_max_leased": self.key_max_leased,
            "key_rate": self.key_rate,
            "key_burst": self.key_burst,
            "update_time": _iso(self.update_time),
        }


@dataclass(frozen=True, slots=True)
class QueueKey:
    """One concurrency key of a queue: its tasks waiting and leased, and until when it is
    closed (None: open)."""

    key: str
    backlog: int = 0
    leased: int = 0
    closed_until: datetime | None = None

    def to_dict(self) -> JSONObject:
        return {
            "key": self.key,
            "backlog": self.backlog,
            "leased": self.leased,
            "closed_until": _iso(self.closed_until),
        }


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """GetQueueConfig's answer: the config (None: the queue has no limits) and the keys
    closed now."""

    config: QueueConfig | None
    closed_keys: list[QueueKey]

    @classmethod
    def from_proto(cls, msg: task_service_pb2.GetQueueConfigResponse) -> QueueSettings:
        return cls(
            config=QueueConfig.from_proto(msg.config) if msg.HasField("config") else None,
            closed_keys=[_closed(k) for k in msg.closed_keys],
        )

    def to_dict(self) -> JSONObject:
        return {
            "config": self.config.to_dict() if self.config is not None else None,
            "closed_keys": [k.to_dict() for k in self.closed_keys],
        }


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """A queue's health and limits, as ListQueues shows them."""

    queue: str
    config: QueueConfig | None
    backlog: int
    leased: int
    oldest_waiting: float | None  # seconds
    tokens: float
    busiest_keys: list[QueueKey]
    closed_keys: list[QueueKey]

    @classmethod
    def from_proto(cls, msg: task_service_pb2.QueueStatus) -> QueueStatus:
        oldest = None
        if msg.HasField("oldest_waiting"):
            oldest = msg.oldest_waiting.ToTimedelta().total_seconds()
        return cls(
            queue=msg.queue,
            config=QueueConfig.from_proto(msg.config) if msg.HasField("config") else None,
            backlog=msg.backlog,
            leased=msg.leased,
            oldest_waiting=oldest,
            tokens=msg.tokens,
            busiest_keys=[
                QueueKey(
                    k.key,
                    k.backlog,
                    k.leased,
                    _time(k.closed_until, k.HasField("closed_until")),
                )
                for k in msg.busiest_keys
            ],
            closed_keys=[_closed(k) for k in msg.closed_keys],
        )

    def to_dict(self) -> JSONObject:
        return {
            "queue": self.queue,
            "config": self.config.to_dict() if self.config is not None else None,
            "backlog": self.backlog,
            "leased": self.leased,
            "oldest_waiting": self.oldest_waiting,
            "tokens": self.tokens,
            "busiest_keys": [k.to_dict() for k in self.busiest_keys],
            "closed_keys": [k.to_dict() for k in self.closed_keys],
        }


def _closed(msg: task_service_pb2.ClosedKey) -> QueueKey:
    return QueueKey(msg.key, closed_until=_time(msg.closed_until, msg.HasField("closed_until")))


@dataclass(frozen=True, slots=True)
class TaskHeartbeat:
    """HeartbeatTask's answer: the extended lease, and whether the worker should stop."""

    lease_expire_time: datetime | None
    cancel_requested: bool

    @classmethod
    def from_proto(cls, msg: task_service_pb2.HeartbeatTaskResponse) -> TaskHeartbeat:
        return cls(
            lease_expire_time=_time(msg.lease_expire_time, msg.HasField("lease_expire_time")),
            cancel_requested=msg.cancel_requested,
        )


@dataclass(frozen=True, slots=True)
class Workflow:
    """One instance as of one revision."""

    name: str
    workflow_id: str
    definition: str
    version: int
    state: str
    status: WorkflowStatus
    context: JSONObject
    revision: int
    etag: str
    accepted_events: tuple[str, ...]
    error: StatewrightError | None
    create_time: datetime | None
    update_time: datetime | None
    proto: workflow_pb2.Workflow = field(repr=False, compare=False)
    timers: tuple[Timer, ...] = ()
    # The task of the task state the instance is in, while it has one.
    pending_task: Task | None = None
    # The fan-out of the `map` task state the instance is in, while it is in one.
    fan_out: FanOutProgress | None = None
    # A child workflow's parent; a parent's live children.
    parent: WorkflowParent | None = None
    children: WorkflowChildren | None = None
    # The recursion limit its start gave it (None: its definition's applies).
    recursion_limit: int | None = None
    # The run this revision belongs to: 1, and one more for every restart (a start with
    # if_exists="restart" of the finished instance).
    run: int = 1
    # Whether an operator paused it (``status`` stays the underlying one), and who, when
    # and why (None while it is not paused).
    paused: bool = False
    pause: WorkflowPause | None = None

    @property
    def terminal(self) -> bool:
        return self.status.terminal

    @classmethod
    def from_proto(cls, msg: workflow_pb2.Workflow) -> Workflow:
        # Workflow.error is a google.rpc.Status: typed like a failed call so a caller can
        # branch on the same classes and reasons.
        error = status_error(msg.error) if msg.HasField("error") else None
        return cls(
            name=msg.name,
            workflow_id=msg.workflow_id,
            definition=msg.definition,
            version=msg.version,
            state=msg.state,
            status=WorkflowStatus.from_proto(msg.status),
            context=from_struct(msg.context),
            revision=msg.revision,
            etag=msg.etag,
            accepted_events=tuple(msg.accepted_events),
            error=error,
            create_time=_time(msg.create_time, msg.HasField("create_time")),
            update_time=_time(msg.update_time, msg.HasField("update_time")),
            proto=msg,
            timers=tuple(Timer.from_proto(t) for t in msg.timers),
            pending_task=(
                Task.from_proto(msg.pending_task) if msg.HasField("pending_task") else None
            ),
            fan_out=(FanOutProgress.from_proto(msg.fan_out) if msg.HasField("fan_out") else None),
            parent=WorkflowParent.from_proto(msg.parent) if msg.HasField("parent") else None,
            children=(
                WorkflowChildren.from_proto(msg.children) if msg.HasField("children") else None
            ),
            recursion_limit=(msg.recursion_limit if msg.HasField("recursion_limit") else None),
            run=msg.run or 1,
            paused=msg.paused,
            pause=WorkflowPause.from_proto(msg.pause) if msg.HasField("pause") else None,
        )

    def to_dict(self) -> JSONObject:
        """A JSON-ready view (timestamps as RFC 3339 text)."""
        return {
            "name": self.name,
            "workflow_id": self.workflow_id,
            "definition": self.definition,
            "version": self.version,
            "state": self.state,
            "status": self.status.value,
            "revision": self.revision,
            "etag": self.etag,
            "accepted_events": list(self.accepted_events),
            "context": self.context,
            "error": _error_dict(self.error),
            "create_time": _iso(self.create_time),
            "update_time": _iso(self.update_time),
            "timers": [t.to_dict() for t in self.timers],
            "pending_task": self.pending_task.to_dict() if self.pending_task is not None else None,
            "fan_out": self.fan_out.to_dict() if self.fan_out is not None else None,
            "parent": self.parent.to_dict() if self.parent is not None else None,
            "children": self.children.to_dict() if self.children is not None else None,
            "recursion_limit": self.recursion_limit,
            "run": self.run,
            "paused": self.paused,
            "pause": self.pause.to_dict() if self.pause is not None else None,
        }


@dataclass(frozen=True, slots=True)
class WorkflowPause:
    """An operator's pause of an instance (PauseWorkflow): why, by whom, since when."""

    reason: str
    actor: str
    pause_time: datetime | None

    @classmethod
    def from_proto(cls, msg: workflow_pb2.WorkflowPause) -> WorkflowPause:
        return cls(
            reason=msg.reason,
            actor=msg.actor,
            pause_time=_time(msg.pause_time, msg.HasField("pause_time")),
        )

    def to_dict(self) -> JSONObject:
        return {"reason": self.reason, "actor": self.actor, "pause_time": _iso(self.pause_time)}


def status_error(status: status_pb2.Status) -> StatewrightError:
    """The typed error a ``google.rpc.Status`` stands for, as if a call had failed with it."""
    return make_error(_status_code(status.code), status.message, error_info_from_status(status))


def _status_code(number: int) -> grpc.StatusCode:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code
    return grpc.StatusCode.UNKNOWN


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _error_dict(error: StatewrightError | None) -> JSONValue:
    if error is None:
        return None
    return {
        "code": error.code.name,
        "reason": error.reason,
        "message": error.message,
        "metadata": dict(error.metadata),
    }


@dataclass(frozen=True, slots=True)
class StepResult:
    """The instance after a step (resume) and the transitions that step fired."""

    workflow: Workflow
    transitions: tuple[Transition, ...]

    def to_dict(self) -> JSONObject:
        return {
            "workflow": self.workflow.to_dict(),
            "transitions": [t.to_dict() for t in self.transitions],
        }


@dataclass(frozen=True, slots=True)
class StartResult(StepResult):
    """StartWorkflow's answer: a step result, and whether it made a new instance."""

    # False only when the if_exists policy returned an existing instance (a restart, a
    # new run, is true).
    created: bool = True

    def to_dict(self) -> JSONObject:
        out = StepResult.to_dict(self)
        out["created"] = self.created
        return out


@dataclass(frozen=True, slots=True)
class SignalResult:
    """SignalWorkflow's answer: accepted means applied and durably saved."""

    accepted: bool
    reason: SignalRejection | None
    workflow: Workflow
    transitions: tuple[Transition, ...]

    def to_dict(self) -> JSONObject:
        return {
            "accepted": self.accepted,
            "reason": self.reason.value if self.reason is not None else None,
            "workflow": self.workflow.to_dict(),
            "transitions": [t.to_dict() for t in self.transitions],
        }


@dataclass(frozen=True, slots=True)
class ContextChange:
    """One context field a repair changes; ``before``/``after`` absent: no value."""

    field: str
    before: JSONValue
    after: JSONValue
    had_before: bool
    has_after: bool

    @classmethod
    def from_proto(cls, msg: workflow_service_pb2.ContextChange) -> ContextChange:
        had, has = msg.HasField("before"), msg.HasField("after")
        return cls(
            field=msg.field,
            before=from_value(msg.before) if had else None,
            after=from_value(msg.after) if has else None,
            had_before=had,
            has_after=has,
        )

    def to_dict(self) -> JSONObject:
        out: JSONObject = {"field": self.field}
        if self.had_before:
            out["before"] = self.before
        if self.has_after:
            out["after"] = self.after
        return out


@dataclass(frozen=True, slots=True)
class RepairResult:
    """RetryWorkflow's or ResetWorkflow's answer: the instance after the repair (on a dry
    run, as it would be: nothing was saved) and the context fields it changes."""

    workflow: Workflow
    context_changes: tuple[ContextChange, ...]
    dry_run: bool

    def to_dict(self) -> JSONObject:
        return {
            "workflow": self.workflow.to_dict(),
            "context_changes": [c.to_dict() for c in self.context_changes],
            "dry_run": self.dry_run,
        }


_TASK_FATES = {
    workflow_service_pb2.MIGRATION_TASK_FATE_NONE: "none",
    workflow_service_pb2.MIGRATION_TASK_FATE_MOVED: "moved",
    workflow_service_pb2.MIGRATION_TASK_FATE_CANCELLED: "cancelled",
}


@dataclass(frozen=True, slots=True)
class MigrationPlan:
    """What a migration does to one instance: its version and state from and to, the
    context fields given their default, set by an expression, or dropped, whether the
    old state's timers were disarmed, and its open task's fate (``none``, ``moved``: offered
    anew in the new state on ``task_queue``, or ``cancelled``)."""

    from_version: int
    to_version: int
    state_from: str
    state_to: str
    defaulted_fields: tuple[str, ...]
    set_fields: tuple[str, ...]
    removed_fields: tuple[str, ...]
    timers_disarmed: bool
    task_fate: str
    task_queue: str

    @classmethod
    def from_proto(cls, msg: workflow_service_pb2.MigrationPlan) -> MigrationPlan:
        return cls(
            from_version=msg.from_version,
            to_version=msg.to_version,
            state_from=msg.state_from,
            state_to=msg.state_to,
            defaulted_fields=tuple(msg.defaulted_fields),
            set_fields=tuple(msg.set_fields),
            removed_fields=tuple(msg.removed_fields),
            timers_disarmed=msg.timers_disarmed,
            task_fate=_TASK_FATES.get(msg.task_fate, "none"),
            task_queue=msg.task_queue,
        )

    def to_dict(self) -> JSONObject:
        return {
            "from_version": self.from_version,
            "to_version": self.to_version,
            "state_from": self.state_from,
            "state_to": self.state_to,
            "defaulted_fields": list(self.defaulted_fields),
            "set_fields": list(self.set_fields),
            "removed_fields": list(self.removed_fields),
            "timers_disarmed": self.timers_disarmed,
            "task_fate": self.task_fate,
            "task_queue": self.task_queue,
        }


@dataclass(frozen=True, slots=True)
class MigrationResult:
    """MigrateWorkflow's answer: the plan, the instance after it (on a dry run, as it
    would be: nothing was saved) and the context fields it changes."""

    plan: MigrationPlan
    workflow: Workflow
    context_changes: tuple[ContextChange, ...]
    dry_run: bool

    def to_dict(self) -> JSONObject:
        return {
            "plan": self.plan.to_dict(),
            "workflow": self.workflow.to_dict(),
            "context_changes": [c.to_dict() for c in self.context_changes],
            "dry_run": self.dry_run,
        }


@dataclass(frozen=True, slots=True)
class PauseResult:
    """PauseWorkflow's or UnpauseWorkflow's answer: the instance after the step (on a dry
    run, as it would be: nothing was saved)."""

    workflow: Workflow
    dry_run: bool

    def to_dict(self) -> JSONObject:
        return {"workflow": self.workflow.to_dict(), "dry_run": self.dry_run}


@dataclass(frozen=True, slots=True)
class SignalWithStartResult:
    """SignalWithStartWorkflow's answer: ``started`` when this call created the instance
    (its first revision already carries the event); ``accepted`` and ``reason`` as a
    signal's."""

    started: bool
    accepted: bool
    reason: SignalRejection | None
    workflow: Workflow
    transitions: tuple[Transition, ...]

    def to_dict(self) -> JSONObject:
        return {
            "started": self.started,
            "accepted": self.accepted,
            "reason": self.reason.value if self.reason is not None else None,
            "workflow": self.workflow.to_dict(),
            "transitions": [t.to_dict() for t in self.transitions],
        }


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One message of a watch: the instance at ``revision`` and how it got there.

    ``input`` is what the step took (a resume's input, a signal's payload, a task's result
    or failure, the timer that fired, a cancellation's reason, a start's input); None for
    a CURRENT message and for steps saved before history recorded it. ``context_patch``
    is how the step changed the context, as JSON Patch (RFC 6902) operations, each a dict
    as the RFC writes it (``op``, ``path``, and ``value`` or ``from``)."""

    type: WatchEventType
    revision: int
    event: str
    transitions: tuple[Transition, ...]
    workflow: Workflow
    input: JSONObject | None = None
    context_patch: tuple[JSONObject, ...] = ()

    @classmethod
    def from_proto(cls, msg: workflow_service_pb2.WatchWorkflowResponse) -> WatchEvent:
        return cls(
            type=WatchEventType.from_proto(msg.type),
            revision=msg.revision,
            event=msg.event,
            transitions=tuple(Transition.from_proto(t) for t in msg.transitions),
            workflow=Workflow.from_proto(msg.workflow),
            input=from_struct(msg.input) if msg.HasField("input") else None,
            context_patch=tuple(_patch_operation(op) for op in msg.context_patch),
        )

    def to_dict(self) -> JSONObject:
        return {
            "type": self.type.value,
            "revision": self.revision,
            "event": self.event,
            "transitions": [t.to_dict() for t in self.transitions],
            "workflow": self.workflow.to_dict(),
            "input": self.input,
            "context_patch": list(self.context_patch),
        }


def _patch_operation(op: workflow_service_pb2.ContextPatchOperation) -> JSONObject:
    """One JSON Patch operation as RFC 6902 writes it."""
    out: JSONObject = {"op": op.op, "path": op.path}
    if op.HasField("value"):
        out["value"] = from_value(op.value)
    if op.from_path:
        out["from"] = op.from_path
    return out


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """What CompleteTask and FailTask answer: the task after the call, and its instance.

    After a completion the instance is as of the step that applied the result; after a
    failure it changed only if the task gave up (``task.status`` FAILED or TIMED_OUT rather
    than BACKOFF).
    """

    task: Task
    workflow: Workflow

    def to_dict(self) -> JSONObject:
        return {"task": self.task.to_dict(), "workflow": self.workflow.to_dict()}


@dataclass(frozen=True, slots=True)
class WorkflowPage:
    """One page of ListWorkflows; ``next_page_token`` is empty on the last page."""

    workflows: tuple[Workflow, ...]
    next_page_token: str


@dataclass(frozen=True, slots=True)
class WorkflowCount:
    """CountWorkflows: how many instances a filter matches, and how many in each status
    (a status with none is left out)."""

    total: int
    by_status: Mapping[WorkflowStatus, int]

    @classmethod
    def from_proto(cls, msg: workflow_service_pb2.CountWorkflowsResponse) -> WorkflowCount:
        return cls(
            total=msg.total,
            by_status={WorkflowStatus.from_proto(c.status): c.count for c in msg.by_status},
        )

    def to_dict(self) -> JSONObject:
        return {
            "total": self.total,
            "by_status": {str(s): n for s, n in self.by_status.items()},
        }


@dataclass(frozen=True, slots=True)
class SearchField:
    """One declared search field of a definition: a filter names it ``search.<name>``;
    ``type`` is ``keyword``, ``text``, ``int``, ``number``, ``bool``, ``timestamp`` or
    ``keyword_list``; ``value`` the CEL expression projected at every save."""

    name: str
    type: str
    value: str
    description: str = ""

    @classmethod
    def from_proto(cls, msg: definition_pb2.SearchField) -> SearchField:
        return cls(name=msg.name, type=msg.type, value=msg.value, description=msg.description)

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "type": self.type,
            "value": self.value,
            "description": self.description,
        }


@dataclass(frozen=True, slots=True)
class ContextField:
    """One declared field of a definition's context: its type (``string``, ``int``,
    ``number``, ``bool``, ``list``, ``map`` or ``any``), its reducer (``replace``,
    ``append`` or ``merge``) and the value an instance starts with."""

    name: str
    type: str
    reducer: str
    default: JSONValue
    nullable: bool

    @classmethod
    def from_proto(cls, msg: definition_pb2.ContextField) -> ContextField:
        return cls(
            name=msg.name,
            type=msg.type,
            reducer=msg.reducer,
            default=from_value(msg.default_value),
            nullable=msg.nullable,
        )

    def to_dict(self) -> JSONObject:
        return {
            "name": self.name,
            "type": self.type,
            "reducer": self.reducer,
            "default": self.default,
            "nullable": self.nullable,
        }


@dataclass(frozen=True, slots=True)
class Definition:
    """One immutable definition version."""

    name: str
    definition: str
    version: int
    description: str
    source: str
    source_name: str
    digest: str
    mermaid: str
    states: tuple[str, ...]
    events: tuple[str, ...]
    create_time: datetime | None
    proto: definition_pb2.Definition = field(repr=False, compare=False)
    # The declared context, in declaration order; {f.name: f.default} is a start's input
    # that sets nothing new.
    context_fields: tuple[ContextField, ...] = ()
    # The declared search fields, in declaration order: what filters may name.
    search_fields: tuple[SearchField, ...] = ()

    @classmethod
    def from_proto(cls, msg: definition_pb2.Definition) -> Definition:
        return cls(
            name=msg.name,
            definition=msg.definition,
            version=msg.version,
            description=msg.description,
            source=msg.source,
            source_name=msg.source_name,
            digest=msg.digest,
            mermaid=msg.mermaid,
            states=tuple(msg.states),
            events=tuple(msg.events),
            create_time=_time(msg.create_time, msg.HasField("create_time")),
            proto=msg,
            context_fields=tuple(ContextField.from_proto(f) for f in msg.context_fields),
            search_fields=tuple(SearchField.from_proto(f) for f in msg.search_fields),
        )

    def to_dict(self, *, source: bool = True) -> JSONObject:
        out: JSONObject = {
            "name": self.name,
            "definition": self.definition,
            "version": self.version,
            "description": self.description,
            "source_name": self.source_name,
            "digest": self.digest,
            "states": list(self.states),
            "events": list(self.events),
            "create_time": _iso(self.create_time),
            "context_fields": [f.to_dict() for f in self.context_fields],
            "search_fields": [f.to_dict() for f in self.search_fields],
        }
        if source:
            out["source"] = self.source
            out["mermaid"] = self.mermaid
        return out


# --- batch operations (BatchService) -------------------------------------------------------


class BatchState(_Named):
    """Where a batch is (the proto enum without its prefix); a dry run's is UNSPECIFIED."""

    UNSPECIFIED = enum.auto()
    RUNNING = enum.auto()  # working through its instances
    COMPLETED = enum.auto()  # every instance was tried: each is done or failed
    CANCELLED = enum.auto()  # cancelled before every instance was tried

    @property
    def finished(self) -> bool:
        """True for the states a batch never leaves: COMPLETED and CANCELLED."""
        return self in (BatchState.COMPLETED, BatchState.CANCELLED)

    @classmethod
    def from_proto(cls, value: int) -> BatchState:
        return _member(cls, batch_service_pb2.BatchState, "BATCH_STATE_", value)

    @classmethod
    def parse(cls, text: object) -> BatchState:
        """``RUNNING``, ``running`` or ``BATCH_STATE_RUNNING``; ValueError otherwise."""
        return _parse(cls, "BATCH_STATE_", text)

    def to_proto(self) -> batch_service_pb2.BatchState.ValueType:
        return batch_service_pb2.BatchState.Value("BATCH_STATE_" + self.value)


BATCHES_PREFIX = "batches/"


def batch_name(name_or_id: str) -> str:
    """``batches/{id}`` for either a resource name or a bare batch id."""
    return name_or_id if name_or_id.startswith(BATCHES_PREFIX) else BATCHES_PREFIX + name_or_id


# The messages that carry a batch's operation (the same oneof, `operation`, in both).
_WithOperation: TypeAlias = (
    batch_service_pb2.BatchOperation | batch_service_pb2.StartBatchOperationRequest
)


@dataclass(frozen=True, slots=True)
class BatchCancel:
    """Cancel each instance, as ``cancel`` does (the batch's reason is the cancel's)."""

    kind: ClassVar[str] = "cancel"

    def fill(self, msg: _WithOperation) -> None:
        msg.cancel.SetInParent()

    def to_dict(self) -> JSONObject:
        return {}


@dataclass(frozen=True, slots=True)
class BatchSignal:
    """Signal each instance with ``event`` and ``payload``, as ``signal`` does. A signal an
    instance does not accept is a success of the batch: the instance answered."""

    event: str
    payload: JSONObject = field(default_factory=dict)
    kind: ClassVar[str] = "signal"

    def fill(self, msg: _WithOperation) -> None:
        msg.signal.event = self.event
        if self.payload:
            msg.signal.payload.CopyFrom(to_struct(self.payload))

    def to_dict(self) -> JSONObject:
        return {"event": self.event, "payload": self.payload}


@dataclass(frozen=True, slots=True)
class BatchReset:
    """Reset each instance, as ``reset`` does, to the latest revision where it entered
    ``entered_state``; empty: the last revision before it failed (an instance that is not
    FAILED is then a failure of its item)."""

    entered_state: str = ""
    kind: ClassVar[str] = "reset"

    def fill(self, msg: _WithOperation) -> None:
        msg.reset.entered_state = self.entered_state

    def to_dict(self) -> JSONObject:
        return {"entered_state": self.entered_state}


@dataclass(frozen=True, slots=True)
class BatchRetry:
    """Retry each instance, as ``retry`` does."""

    kind: ClassVar[str] = "retry"

    def fill(self, msg: _WithOperation) -> None:
        msg.retry.SetInParent()

    def to_dict(self) -> JSONObject:
        return {}


@dataclass(frozen=True, slots=True)
class BatchMigrate:
    """Migrate each instance to ``to_version``, as ``migrate`` does: ``state_map`` renames
    states (old -> new), ``set`` gives context fields a CEL value over the old context."""

    to_version: int
    state_map: Mapping[str, str] = field(default_factory=dict)
    set: Mapping[str, str] = field(default_factory=dict)
    kind: ClassVar[str] = "migrate"

    def fill(self, msg: _WithOperation) -> None:
        msg.migrate.to_version = self.to_version
        msg.migrate.state_map.update(self.state_map)
        msg.migrate.set.update(self.set)

    def to_dict(self) -> JSONObject:
        return {
            "to_version": self.to_version,
            "state_map": dict(self.state_map),
            "set": dict(self.set),
        }


@dataclass(frozen=True, slots=True)
class BatchPause:
    """Pause each instance, as ``pause`` does."""

    kind: ClassVar[str] = "pause"

    def fill(self, msg: _WithOperation) -> None:
        msg.pause.SetInParent()

    def to_dict(self) -> JSONObject:
        return {}


@dataclass(frozen=True, slots=True)
class BatchUnpause:
    """Unpause each instance, as ``unpause`` does."""

    kind: ClassVar[str] = "unpause"

    def fill(self, msg: _WithOperation) -> None:
        msg.unpause.SetInParent()

    def to_dict(self) -> JSONObject:
        return {}


@dataclass(frozen=True, slots=True)
class BatchDelete:
    """Delete each instance, as DeleteWorkflow does; one already gone counts as done.
    Without ``force``, a running or waiting instance is a failure of its item."""

    force: bool = False
    kind: ClassVar[str] = "delete"

    def fill(self, msg: _WithOperation) -> None:
        msg.delete.force = self.force

    def to_dict(self) -> JSONObject:
        return {"force": self.force}


BatchAction: TypeAlias = (
    BatchCancel
    | BatchSignal
    | BatchReset
    | BatchRetry
    | BatchMigrate
    | BatchPause
    | BatchUnpause
    | BatchDelete
)
"""What a batch does to each instance."""

# The operations that need nothing but their name, by it.
_PLAIN_ACTIONS: dict[str, BatchAction] = {
    "cancel": BatchCancel(),
    "reset": BatchReset(),
    "retry": BatchRetry(),
    "pause": BatchPause(),
    "unpause": BatchUnpause(),
    "delete": BatchDelete(),
}
BATCH_OPERATIONS = ("cancel", "signal", "reset", "retry", "migrate", "pause", "unpause", "delete")


def batch_action(operation: BatchAction | str) -> BatchAction:
    """The operation ``operation`` names: an action as it is, or the name of one that
    needs no parameters (``"retry"``, ``"cancel"``, ...). ValueError for ``"signal"`` and
    ``"migrate"`` (they need an event, a version: give BatchSignal or BatchMigrate) and for
    any other text."""
    if not isinstance(operation, str):
        return operation
    found = _PLAIN_ACTIONS.get(operation.strip().lower())
    if found is not None:
        return found
    if operation.strip().lower() in ("signal", "migrate"):
        raise ValueError(
            f"a batch {operation.strip().lower()} needs its parameters: give "
            "BatchSignal(event, payload) or BatchMigrate(to_version, state_map, set)"
        )
    raise ValueError(
        f"{operation[:64]!r} is not a batch operation: one of {', '.join(BATCH_OPERATIONS)}"
    )


def _action_from_proto(msg: _WithOperation) -> BatchAction | None:
    match msg.WhichOneof("operation"):
        case "signal":
            return BatchSignal(msg.signal.event, from_struct(msg.signal.payload))
        case "reset":
            return BatchReset(msg.reset.entered_state)
        case "migrate":
            return BatchMigrate(
                msg.migrate.to_version, dict(msg.migrate.state_map), dict(msg.migrate.set)
            )
        case "delete":
            return BatchDelete(msg.delete.force)
        case None:
            return None  # an operation this client does not know (a newer server)
        case plain:
            return _PLAIN_ACTIONS.get(plain)


@dataclass(frozen=True, slots=True)
class BatchOperation:
    """A batch: what it does (``action``) to the instances ``filter`` matched in
    ``definition`` (their ids starting with ``id_prefix``, when set) when it started, and
    how far it got. ``done`` counts the instances it applied its operation to, ``failed``
    those it could not (each with its :class:`BatchItemFailure`); ``remaining`` is what is
    left of ``matched``."""

    name: str  # batches/{id}; empty on a dry run
    definition: str
    filter: str
    action: BatchAction | None
    reason: str
    rate: float  # instances per second
    state: BatchState
    matched: int
    done: int
    failed: int
    actor: str
    cancel_reason: str
    create_time: datetime | None
    update_time: datetime | None
    end_time: datetime | None
    proto: batch_service_pb2.BatchOperation = field(repr=False, compare=False)
    id_prefix: str = ""  # "": any id

    @property
    def batch_id(self) -> str:
        return self.name.removeprefix(BATCHES_PREFIX)

    @property
    def finished(self) -> bool:
        """True once it completed or was cancelled."""
        return self.state.finished

    @property
    def remaining(self) -> int:
        return max(0, self.matched - self.done - self.failed)

    @classmethod
    def from_proto(cls, msg: batch_service_pb2.BatchOperation) -> BatchOperation:
        return cls(
            name=msg.name,
            definition=msg.definition,
            filter=msg.filter,
            action=_action_from_proto(msg),
            reason=msg.reason,
            rate=msg.rate,
            state=BatchState.from_proto(msg.state),
            matched=msg.matched,
            done=msg.done,
            failed=msg.failed,
            actor=msg.actor,
            cancel_reason=msg.cancel_reason,
            create_time=_time(msg.create_time, msg.HasField("create_time")),
            update_time=_time(msg.update_time, msg.HasField("update_time")),
            end_time=_time(msg.end_time, msg.HasField("end_time")),
            proto=msg,
            id_prefix=msg.id_prefix,
        )

    def to_dict(self) -> JSONObject:
        """A JSON-ready view; ``operation`` is ``{kind: parameters}``, as the HTTP API's
        JSON writes it."""
        action = self.action
        return {
            "name": self.name,
            "definition": self.definition,
            "filter": self.filter,
            "id_prefix": self.id_prefix,
            "operation": {action.kind: action.to_dict()} if action is not None else None,
            "reason": self.reason,
            "rate": self.rate,
            "state": self.state.value,
            "matched": self.matched,
            "done": self.done,
            "failed": self.failed,
            "actor": self.actor,
            "cancel_reason": self.cancel_reason,
            "create_time": _iso(self.create_time),
            "update_time": _iso(self.update_time),
            "end_time": _iso(self.end_time),
        }


@dataclass(frozen=True, slots=True)
class BatchItemFailure:
    """An instance a batch could not apply its operation to: the gRPC status code's name
    (``FAILED_PRECONDITION``), the ErrorInfo reason (``NOT_FAILED``) and message of the
    refusal, as the single call would have raised it (``error``)."""

    workflow: str  # workflows/{id}
    code: str
    reason: str
    message: str
    time: datetime | None

    @property
    def workflow_id(self) -> str:
        return self.workflow.removeprefix(WORKFLOWS_PREFIX)

    @property
    def error(self) -> StatewrightError:
        """The typed error the single call would have raised (``NotFound``, ...)."""
        code = getattr(grpc.StatusCode, self.code, grpc.StatusCode.UNKNOWN)
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN)
        return make_error(code, self.message, info if self.reason else None)

    @classmethod
    def from_proto(cls, msg: batch_service_pb2.BatchItemFailure) -> BatchItemFailure:
        return cls(
            workflow=msg.workflow,
            code=msg.code,
            reason=msg.reason,
            message=msg.message,
            time=_time(msg.time, msg.HasField("time")),
        )

    def to_dict(self) -> JSONObject:
        return {
            "workflow": self.workflow,
            "code": self.code,
            "reason": self.reason,
            "message": self.message,
            "time": _iso(self.time),
        }


@dataclass(frozen=True, slots=True)
class BatchStartResult:
    """StartBatchOperation's answer: the batch as started and the first instances it
    matched (at most 20, ``workflows/{id}``, in the order it works through them). On a dry
    run nothing was saved: the batch has no name, and only ``matched`` among its counts."""

    batch: BatchOperation
    sample: tuple[str, ...]

    @property
    def dry_run(self) -> bool:
        return not self.batch.name

    def to_dict(self) -> JSONObject:
        return {"batch": self.batch.to_dict(), "sample": list(self.sample)}


@dataclass(frozen=True, slots=True)
class BatchReport:
    """GetBatchOperation's answer: the batch, and one page of the instances it failed on
    (by workflow id); ``next_failures_page_token`` is empty on the last page."""

    batch: BatchOperation
    failures: tuple[BatchItemFailure, ...]
    next_failures_page_token: str

    def to_dict(self) -> JSONObject:
        return {
            "batch": self.batch.to_dict(),
            "failures": [f.to_dict() for f in self.failures],
            "next_failures_page_token": self.next_failures_page_token,
        }
