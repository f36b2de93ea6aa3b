"""Plain, immutable views of the API's messages, with contexts as dicts.

The client returns these instead of protobuf messages so that callers read
``workflow.context["topic"]`` and compare ``workflow.status is WorkflowStatus.COMPLETED``
without touching ``Struct`` or enum numbers. Each view keeps the message it was made from
in ``proto`` for anything not surfaced here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import UTC, datetime

import grpc
from google.protobuf import timestamp_pb2
from google.rpc import status_pb2

from statewright.errors import StatewrightError, error_info_from_status, make_error
from statewright.v1 import definition_pb2, workflow_pb2, workflow_service_pb2
from statewright.values import JSONObject, JSONValue, from_struct

__all__ = [
    "Definition",
    "SignalRejection",
    "SignalResult",
    "StartResult",
    "StepResult",
    "Transition",
    "WatchEvent",
    "WatchEventType",
    "Workflow",
    "WorkflowPage",
    "WorkflowStatus",
    "workflow_name",
]

WORKFLOWS_PREFIX = "workflows/"


def workflow_name(name_or_id: str) -> str:
    """``workflows/{id}`` for either a resource name or a bare workflow id."""
    return name_or_id if name_or_id.startswith(WORKFLOWS_PREFIX) else WORKFLOWS_PREFIX + name_or_id


class WorkflowStatus(enum.StrEnum):
    """The lifecycle status of an instance (the proto enum without its prefix)."""

    UNSPECIFIED = "UNSPECIFIED"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        """True for statuses an instance never leaves."""
        return self in _TERMINAL

    @classmethod
    def from_proto(cls, value: int) -> WorkflowStatus:
        name = workflow_pb2.WorkflowStatus.Name(value)  # type: ignore[arg-type]
        return cls(name.removeprefix("WORKFLOW_STATUS_"))

    def to_proto(self) -> workflow_pb2.WorkflowStatus.ValueType:
        return workflow_pb2.WorkflowStatus.Value("WORKFLOW_STATUS_" + self.value)


_TERMINAL = frozenset({WorkflowStatus.COMPLETED, WorkflowStatus.FAILED, WorkflowStatus.CANCELLED})


class SignalRejection(enum.StrEnum):
    """Why SignalWorkflow did not apply a signal."""

    UNSPECIFIED = "UNSPECIFIED"
    NOT_RUNNING = "NOT_RUNNING"
    PERSISTING = "PERSISTING"
    RECOVERY_REQUIRED = "RECOVERY_REQUIRED"
    SHUTTING_DOWN = "SHUTTING_DOWN"

    @classmethod
    def from_proto(cls, value: int) -> SignalRejection:
        name = workflow_service_pb2.SignalRejection.Name(value)  # type: ignore[arg-type]
        return cls(name.removeprefix("SIGNAL_REJECTION_"))


class WatchEventType(enum.StrEnum):
    """CURRENT: the instance as it was when the watch opened; STEP: one saved step."""

    UNSPECIFIED = "UNSPECIFIED"
    CURRENT = "CURRENT"
    STEP = "STEP"

    @classmethod
    def from_proto(cls, value: int) -> WatchEventType:
        name = workflow_service_pb2.WatchEventType.Name(value)  # type: ignore[arg-type]
        return cls(name.removeprefix("WATCH_EVENT_TYPE_"))


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
        }


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

    # False only when the if_exists policy returned an existing instance.
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
class WatchEvent:
    """One message of a watch: the instance at ``revision`` and how it got there."""

    type: WatchEventType
    revision: int
    event: str
    transitions: tuple[Transition, ...]
    workflow: Workflow

    @classmethod
    def from_proto(cls, msg: workflow_service_pb2.WatchWorkflowResponse) -> WatchEvent:
        return cls(
            type=WatchEventType.from_proto(msg.type),
            revision=msg.revision,
            event=msg.event,
            transitions=tuple(Transition.from_proto(t) for t in msg.transitions),
            workflow=Workflow.from_proto(msg.workflow),
        )

    def to_dict(self) -> JSONObject:
        return {
            "type": self.type.value,
            "revision": self.revision,
            "event": self.event,
            "transitions": [t.to_dict() for t in self.transitions],
            "workflow": self.workflow.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class WorkflowPage:
    """One page of ListWorkflows; ``next_page_token`` is empty on the last page."""

    workflows: tuple[Workflow, ...]
    next_page_token: str


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
        }
        if source:
            out["source"] = self.source
            out["mermaid"] = self.mermaid
        return out
