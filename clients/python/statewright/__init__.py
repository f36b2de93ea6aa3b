"""Statewright client: generated ``statewright.v1`` stubs plus an ergonomic client.

>>> from statewright import Client
>>> with Client("127.0.0.1:50051") as client:  # doctest: +SKIP
...     wf = client.start("mail-approval", {"topic": "launch"}).workflow
...     client.resume(wf.name, "approve").workflow.status
<WorkflowStatus.COMPLETED: 'COMPLETED'>
"""

from statewright.aio import AsyncClient
from statewright.client import Client
from statewright.errors import (
    Aborted,
    AlreadyExists,
    DeadlineExceeded,
    DefinitionNotFound,
    FailedPrecondition,
    InvalidArgument,
    LeaseSuperseded,
    NotFound,
    Overloaded,
    RecoveryRequired,
    ResourceExhausted,
    RevisionMismatch,
    StatewrightError,
    TaskCancelled,
    TaskNotFound,
    Unavailable,
    UnknownEvent,
    WorkflowAlreadyExists,
    WorkflowBusy,
    WorkflowNotFound,
)
from statewright.models import (
    Definition,
    SignalRejection,
    SignalResult,
    StepResult,
    Task,
    TaskError,
    TaskHeartbeat,
    TaskOutcome,
    TaskStatus,
    Timer,
    Transition,
    WatchEvent,
    WatchEventType,
    Workflow,
    WorkflowPage,
    WorkflowStatus,
)

__all__ = [
    "Aborted",
    "AlreadyExists",
    "AsyncClient",
    "Client",
    "DeadlineExceeded",
    "Definition",
    "DefinitionNotFound",
    "FailedPrecondition",
    "InvalidArgument",
    "LeaseSuperseded",
    "NotFound",
    "Overloaded",
    "RecoveryRequired",
    "ResourceExhausted",
    "RevisionMismatch",
    "SignalRejection",
    "SignalResult",
    "StatewrightError",
    "StepResult",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskHeartbeat",
    "TaskNotFound",
    "TaskOutcome",
    "TaskStatus",
    "Timer",
    "Transition",
    "Unavailable",
    "UnknownEvent",
    "WatchEvent",
    "WatchEventType",
    "Workflow",
    "WorkflowAlreadyExists",
    "WorkflowBusy",
    "WorkflowNotFound",
    "WorkflowPage",
    "WorkflowStatus",
]
