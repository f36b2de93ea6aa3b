"""Typed exceptions for Statewright RPC failures.

Every status the server sends carries exactly one ``google.rpc.ErrorInfo`` (domain
``statewright.dev``) whose ``reason`` is the stable identifier to branch on and whose
``metadata`` holds the dynamic values. :func:`from_rpc_error` turns a ``grpc.RpcError`` into
the most specific class for that reason; an unknown reason (a newer server) or a status with
no ErrorInfo (a transport failure such as a refused connection) falls back to the class for
the status code, so ``except NotFound`` keeps working as reasons are added. A status that
also carries a ``google.rpc.RetryInfo`` (RATE_LIMITED does) gives its delay as
``retry_delay``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2, status_pb2

from statewright.values import JSONObject

if TYPE_CHECKING:  # models imports this module
    from statewright.models import Workflow

DOMAIN = "statewright.dev"
_STATUS_DETAILS_KEY = "grpc-status-details-bin"

__all__ = [
    "DOMAIN",
    "Aborted",
    "AlreadyExists",
    "AlreadyTerminal",
    "Cancelled",
    "DeadlineExceeded",
    "DefinitionNotFound",
    "EventNotAllowed",
    "FailedPrecondition",
    "GuardRejected",
    "Internal",
    "InvalidArgument",
    "LeaseSuperseded",
    "NotFound",
    "NotRunning",
    "NotWaiting",
    "Overloaded",
    "PermissionDenied",
    "RateLimited",
    "RecoveryRequired",
    "RequestInDoubt",
    "ResourceExhausted",
    "RevisionMismatch",
    "ShuttingDown",
    "StatewrightError",
    "TaskCancelled",
    "TaskNotFound",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "UnknownEvent",
    "WorkflowAlreadyExists",
    "WorkflowBusy",
    "WorkflowNotFound",
    "from_rpc_error",
]


class StatewrightError(Exception):
    """A failed Statewright call: its gRPC code, ErrorInfo reason and metadata.

    ``reason`` is empty when the status carried no ErrorInfo (for example a connection
    refused before the request reached a server). ``retry_delay`` is the seconds the server
    asked the caller to wait before trying again (its RetryInfo), or None.
    """

    code: grpc.StatusCode
    reason: str
    domain: str
    metadata: dict[str, str]
    message: str
    retry_delay: float | None

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode = grpc.StatusCode.UNKNOWN,
        reason: str = "",
        domain: str = "",
        metadata: Mapping[str, str] | None = None,
        retry_delay: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.domain = domain
        self.metadata = dict(metadata or {})
        self.retry_delay = retry_delay

    def __str__(self) -> str:
        label = f"{self.code.name}/{self.reason}" if self.reason else self.code.name
        return f"{label}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, code={self.code.name}, "
            f"reason={self.reason!r}, metadata={self.metadata!r})"
        )

    def to_dict(self) -> JSONObject:
        """A JSON-ready view, used by the command-line tool; ``retry_delay`` (seconds) only
        when the server sent one."""
        view: JSONObject = {
            "code": self.code.name,
            "reason": self.reason,
            "domain": self.domain,
            "message": self.message,
            "metadata": {key: value for key, value in self.metadata.items()},
        }
        if self.retry_delay is not None:
            view["retry_delay"] = self.retry_delay
        return view

    def _int_metadata(self, key: str) -> int | None:
        # ErrorInfo metadata values are strings by definition; numbers arrive as decimal text.
        value = self.metadata.get(key)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None


# --- one class per status code ---------------------------------------------------------


class Cancelled(StatewrightError):
    """The call was cancelled (usually by the caller)."""


class InvalidArgument(StatewrightError):
    """The request is malformed: bad input, unknown field or event, bad page token."""


class DeadlineExceeded(StatewrightError):
    """The call's deadline passed before the server answered."""


class ExecutionTimedOut(DeadlineExceeded):
    """``execute()`` ran out of time before the instance rested or finished.

    The instance was started and goes on running: ``workflow`` is it as last seen (watch
    it, or ``get`` it, by ``workflow.name``)."""

    def __init__(self, message: str, workflow: Workflow) -> None:
        super().__init__(message, code=grpc.StatusCode.DEADLINE_EXCEEDED)
        self.workflow = workflow


class NotFound(StatewrightError):
    """The named workflow or definition does not exist."""


class AlreadyExists(StatewrightError):
    """The resource to create exists already."""


class FailedPrecondition(StatewrightError):
    """The instance is in the wrong status or state for the request."""


class Aborted(StatewrightError):
    """The request lost a concurrency race; re-read and decide whether to retry."""


class ResourceExhausted(StatewrightError):
    """The server refused work because of backpressure; retry with backoff."""


class Unimplemented(StatewrightError):
    """The server does not implement this RPC."""


class Internal(StatewrightError):
    """The server failed unexpectedly; its log has the details."""


class Unavailable(StatewrightError):
    """The server or its storage is unreachable or shutting down (retried automatically)."""


class Unauthenticated(StatewrightError):
    """The call carried no credentials the server accepts: no token, or one that is
    unknown, expired, for another audience or badly signed; or an unknown client
    certificate."""


class PermissionDenied(StatewrightError):
    """The caller is known, but its roles (or their scopes: definitions, task queues) do not
    allow this call. The server says the same whether or not the target exists."""


# --- one class per ErrorInfo reason that callers are expected to branch on -------------


class WorkflowNotFound(NotFound):
    """No workflow has this id."""

    @property
    def workflow_id(self) -> str:
        return self.metadata.get("workflow_id", "")


class DefinitionNotFound(NotFound):
    """No definition (version) has this name."""


class WorkflowAlreadyExists(AlreadyExists):
    """StartWorkflow named an id that exists (and the request_id is not a retry)."""

    @property
    def workflow_id(self) -> str:
        return self.metadata.get("workflow_id", "")


class RevisionMismatch(Aborted):
    """``expected_revision`` differs from the stored revision.

    ``actual_revision`` is the revision the server holds, so a caller can re-read (or
    re-decide) and retry with it.
    """

    @property
    def actual_revision(self) -> int | None:
        return self._int_metadata("actual_revision")

    @property
    def expected_revision(self) -> int | None:
        return self._int_metadata("expected_revision")


class WorkflowBusy(Aborted):
    """Another request is executing a step of the same instance; retry shortly."""


class RequestInDoubt(Aborted):
    """An earlier request with this request_id has an unknown outcome; retry it later."""


class RecoveryRequired(FailedPrecondition):
    """A save's outcome is unknown; the instance refuses work until a re-check resolves it."""


class NotWaiting(FailedPrecondition):
    """ResumeWorkflow needs a WAITING instance."""


class NotRunning(FailedPrecondition):
    """The instance is not RUNNING."""


class EventNotAllowed(FailedPrecondition):
    """The event is declared, but not from the instance's current state."""


class GuardRejected(FailedPrecondition):
    """Every guard of the event's transitions evaluated to false; nothing was saved."""


class AlreadyTerminal(FailedPrecondition):
    """The instance has already ended (COMPLETED, FAILED or CANCELLED)."""


class TaskNotFound(NotFound):
    """No task has this name."""


class LeaseSuperseded(FailedPrecondition):
    """The lease presented is no longer current: it expired and the task was leased again,
    or the task finished. The holder should drop the task; its answer would not count."""


class TaskCancelled(FailedPrecondition):
    """The task was cancelled (its state was left, or its instance cancelled): stop it."""


class UnknownEvent(InvalidArgument):
    """The event is not declared by the instance's definition."""


class Overloaded(ResourceExhausted):
    """The server's queues are full; retry with backoff."""


class RateLimited(ResourceExhausted):
    """The caller is over its request rate; ``retry_delay`` says when the server would let
    the next call through."""


class ShuttingDown(Unavailable):
    """The server is draining; the call can be retried on another replica."""


_BY_CODE: dict[grpc.StatusCode, type[StatewrightError]] = {
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.ABORTED: Aborted,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.INTERNAL: Internal,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
}


class _ReasonClass:
    """Registry entry: the class for a reason, valid only under the code it is defined for."""

    __slots__ = ("cls", "code")

    def __init__(self, code: grpc.StatusCode, cls: type[StatewrightError]) -> None:
        self.code = code
        self.cls = cls


_REASONS: dict[str, _ReasonClass] = {
    "WORKFLOW_NOT_FOUND": _ReasonClass(grpc.StatusCode.NOT_FOUND, WorkflowNotFound),
    "DEFINITION_NOT_FOUND": _ReasonClass(grpc.StatusCode.NOT_FOUND, DefinitionNotFound),
    "TASK_NOT_FOUND": _ReasonClass(grpc.StatusCode.NOT_FOUND, TaskNotFound),
    "WORKFLOW_ALREADY_EXISTS": _ReasonClass(grpc.StatusCode.ALREADY_EXISTS, WorkflowAlreadyExists),
    "REVISION_MISMATCH": _ReasonClass(grpc.StatusCode.ABORTED, RevisionMismatch),
    "WORKFLOW_BUSY": _ReasonClass(grpc.StatusCode.ABORTED, WorkflowBusy),
    "REQUEST_IN_DOUBT": _ReasonClass(grpc.StatusCode.ABORTED, RequestInDoubt),
    "RECOVERY_REQUIRED": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, RecoveryRequired),
    "NOT_WAITING": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, NotWaiting),
    "NOT_RUNNING": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, NotRunning),
    "EVENT_NOT_ALLOWED": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, EventNotAllowed),
    "GUARD_REJECTED": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, GuardRejected),
    "ALREADY_TERMINAL": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, AlreadyTerminal),
    "LEASE_SUPERSEDED": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, LeaseSuperseded),
    "TASK_CANCELLED": _ReasonClass(grpc.StatusCode.FAILED_PRECONDITION, TaskCancelled),
    "UNKNOWN_EVENT": _ReasonClass(grpc.StatusCode.INVALID_ARGUMENT, UnknownEvent),
    "OVERLOADED": _ReasonClass(grpc.StatusCode.RESOURCE_EXHAUSTED, Overloaded),
    "RATE_LIMITED": _ReasonClass(grpc.StatusCode.RESOURCE_EXHAUSTED, RateLimited),
    "SHUTTING_DOWN": _ReasonClass(grpc.StatusCode.UNAVAILABLE, ShuttingDown),
}


def error_class(code: grpc.StatusCode, reason: str) -> type[StatewrightError]:
    """The exception class for a status code and an ErrorInfo reason.

    A known reason under an unexpected code keeps the code's class: ``except NotFound``
    must never miss a NOT_FOUND because a reason was reused elsewhere.
    """
    entry = _REASONS.get(reason)
    if entry is not None and entry.code == code:
        return entry.cls
    return _BY_CODE.get(code, StatewrightError)


def _status_from_metadata(
    metadata: Iterable[tuple[str, str | bytes]] | None,
) -> status_pb2.Status | None:
    for key, value in metadata or ():
        if key != _STATUS_DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = status_pb2.Status()
        try:
            status.ParseFromString(value)
        except DecodeError:
            return None
        return status
    return None


def error_info_from_status(status: status_pb2.Status) -> error_details_pb2.ErrorInfo | None:
    """The first ErrorInfo packed in a ``google.rpc.Status`` (for example ``Workflow.error``)."""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        # Unpack answers False (and leaves info empty) when the detail is another type.
        if detail.Unpack(info):
            return info
    return None


def retry_delay_from_status(status: status_pb2.Status) -> float | None:
    """The delay of the first RetryInfo in a ``google.rpc.Status``, in seconds, or None."""
    for detail in status.details:
        retry = error_details_pb2.RetryInfo()
        if detail.Unpack(retry):
            return max(0.0, retry.retry_delay.ToNanoseconds() / 1e9)
    return None


def make_error(
    code: grpc.StatusCode,
    message: str,
    info: error_details_pb2.ErrorInfo | None,
    *,
    retry_delay: float | None = None,
) -> StatewrightError:
    """Builds the typed exception for a code, message and optional ErrorInfo."""
    reason = info.reason if info is not None else ""
    cls = error_class(code, reason)
    return cls(
        message,
        code=code,
        reason=reason,
        domain=info.domain if info is not None else "",
        metadata=dict(info.metadata) if info is not None else None,
        retry_delay=retry_delay,
    )


def from_rpc_error(error: grpc.RpcError) -> StatewrightError:
    """Converts a failed call (sync ``grpc.Call`` or ``grpc.aio.AioRpcError``) to its type.

    Both call kinds expose ``code()``, ``details()`` and ``trailing_metadata()``; the
    ErrorInfo (and a RetryInfo, if any) travel in the ``grpc-status-details-bin`` trailer as
    a ``google.rpc.Status``.
    """
    code_fn = getattr(error, "code", None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    if not isinstance(code, grpc.StatusCode):
        code = grpc.StatusCode.UNKNOWN
    details_fn = getattr(error, "details", None)
    message = details_fn() if callable(details_fn) else None
    trailers_fn = getattr(error, "trailing_metadata", None)
    trailers = trailers_fn() if callable(trailers_fn) else None
    status = _status_from_metadata(trailers)
    return make_error(
        code,
        str(message or code.name),
        error_info_from_status(status) if status is not None else None,
        retry_delay=retry_delay_from_status(status) if status is not None else None,
    )
