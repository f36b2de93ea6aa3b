"""Statewright client: generated ``statewright.v1`` stubs plus an ergonomic client.

>>> from statewright import Client
>>> with Client("127.0.0.1:50051") as client:  # doctest: +SKIP
...     wf = client.start("mail-approval", {"topic": "launch"}).workflow
...     client.resume(wf.name, "approve").workflow.status
<WorkflowStatus.COMPLETED: 'COMPLETED'>
"""

from statewright._security import AccessToken, InsecureTokenError
from statewright._worker import RunningTask, TaskFailure
from statewright.aio import AsyncClient, AsyncWorker
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
    PermissionDenied,
    RateLimited,
    RecoveryRequired,
    ResourceExhausted,
    RevisionMismatch,
    StatewrightError,
    TaskCancelled,
    TaskNotFound,
    Unauthenticated,
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
    StartResult,
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
from statewright.worker import Worker

__all__ = [
    "Aborted",
    "AccessToken",
    "AlreadyExists",
    "AsyncClient",
    "AsyncWorker",
    "Client",
    "DeadlineExceeded",
    "Definition",
    "DefinitionNotFound",
    "FailedPrecondition",
    "InsecureTokenError",
    "InvalidArgument",
    "LeaseSuperseded",
    "NotFound",
    "Overloaded",
    "PermissionDenied",
    "RateLimited",
    "RecoveryRequired",
    "ResourceExhausted",
    "RevisionMismatch",
    "RunningTask",
    "SignalRejection",
    "SignalResult",
    "StartResult",
    "StatewrightError",
    "StepResult",
    "Task",
    "TaskCancelled",
    "TaskError",
    "TaskFailure",
    "TaskHeartbeat",
    "TaskNotFound",
    "TaskOutcome",
    "TaskStatus",
    "Timer",
    "Transition",
    "Unauthenticated",
    "Unavailable",
    "UnknownEvent",
    "WatchEvent",
    "WatchEventType",
    "Worker",
    "Workflow",
    "WorkflowAlreadyExists",
    "WorkflowBusy",
    "WorkflowNotFound",
    "WorkflowPage",
    "WorkflowStatus",
]
