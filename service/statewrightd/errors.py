"""The one exception hierarchy of the service.

Every failure a caller can see is a :class:`StatewrightError`. Each subclass stands for one
canonical gRPC code; the mapping to wire status lives in ``statewrightd.api.status`` and
nowhere else, so this module stays free of gRPC and the engine and store can raise these
without importing the transport.

A ``reason`` is the stable, machine-readable UPPER_SNAKE identifier clients branch on; the
message is for humans and may change. Dynamic values (ids, revisions) go in ``metadata`` so
clients never parse messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar

from statewrightd.reasons import Reason

DOMAIN = "statewright.dev"

_REASON = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")

# An error travels back in the status trailers, which clients cap (8 KiB by default): a
# message or metadata value built from the caller's input is cut to these lengths so that
# no input, however large, can turn an answer into a transport failure.
MAX_MESSAGE_LENGTH = 1024
MAX_METADATA_VALUE_LENGTH = 256


def quote(value: str, limit: int = 64) -> str:
    """``value`` for an error message: at most ``limit`` characters of it, marked if cut."""
    if len(value) <= limit:
        return value
    return f"{value[:limit]}... ({len(value):,} characters)"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class StatewrightError(Exception):
    """Base of every error the service reports to a caller."""

    default_reason: ClassVar[str] = Reason.INTERNAL

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        message = _cut(message, MAX_MESSAGE_LENGTH)
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        if not _REASON.match(self.reason):
            raise ValueError(f"error reason {self.reason!r} is not UPPER_SNAKE")
        # ErrorInfo metadata is map<string, string>: stringify once, here.
        self.metadata: dict[str, str] = {
            k: _cut(_stringify(v), MAX_METADATA_VALUE_LENGTH) for k, v in (metadata or {}).items()
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, reason={self.reason!r})"


def _stringify(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class InvalidArgument(StatewrightError):
    """The request itself is wrong; retrying it unchanged can never succeed."""

    default_reason = Reason.INVALID_ARGUMENT


class NotFound(StatewrightError):
    default_reason = Reason.NOT_FOUND


class AlreadyExists(StatewrightError):
    default_reason = Reason.ALREADY_EXISTS


class OutOfRange(StatewrightError):
    """The request reaches past what exists (a revision not yet written)."""

    default_reason = Reason.OUT_OF_RANGE


class Cancelled(StatewrightError):
    """Stopped on request: how a cancelled instance reports why it ended."""

    default_reason = Reason.CANCELLED


class Aborted(StatewrightError):
    """A concurrency conflict: re-read and decide again."""

    default_reason = Reason.ABORTED


class FailedPrecondition(StatewrightError):
    """The instance is not in a status or state where this request applies."""

    default_reason = Reason.FAILED_PRECONDITION


class Unauthenticated(StatewrightError):
    """The call carries no credentials the server accepts."""

    default_reason = Reason.UNAUTHENTICATED


class PermissionDenied(StatewrightError):
    """The caller is known, but its roles do not allow this call on this target."""

    default_reason = Reason.PERMISSION_DENIED


class ResourceExhausted(StatewrightError):
    default_reason = Reason.OVERLOADED


class RateLimited(ResourceExhausted):
    """The caller sent more requests than its rate allows; ``retry_after`` seconds from now
    the next one would be let through (sent to the client as a RetryInfo)."""

    default_reason = Reason.RATE_LIMITED

    def __init__(
        self,
        message: str,
        *,
        retry_after: float,
        reason: str | None = None,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message, reason=reason, metadata=metadata)
        self.retry_after = retry_after


class Unavailable(StatewrightError):
    """Transient: storage down or the server shutting down; safe to retry with backoff."""

    default_reason = Reason.UNAVAILABLE


class DeadlineExceeded(StatewrightError):
    default_reason = Reason.DEADLINE_EXCEEDED


class Unimplemented(StatewrightError):
    default_reason = Reason.NOT_IMPLEMENTED


class Internal(StatewrightError):
    default_reason = Reason.INTERNAL

    @classmethod
    def wrapping(cls, exc: BaseException) -> Internal:
        """An unexpected exception as the caller sees it: that the server failed, not how
        (the server log has the traceback)."""
        return cls(
            "internal error; the server log has the details",
            reason=Reason.INTERNAL,
            metadata={"exception": type(exc).__name__},
        )


class Unknown(StatewrightError):
    """The outcome of a write could not be determined; see ``OutcomeUnknown``."""

    default_reason = Reason.OUTCOME_UNKNOWN


# Storage errors are part of the same hierarchy so that a store failure that escapes to
# a caller maps to the right code without translation layers.


class StoreError(StatewrightError):
    """Marker base for errors raised by ``statewrightd.store``."""


class Conflict(StoreError, Aborted):
    """A compare-and-swap save found a different revision than expected."""

    default_reason = Reason.REVISION_CONFLICT

    def __init__(
        self,
        message: str,
        *,
        actual_revision: int | None = None,
        reason: str | None = None,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        meta = dict(metadata or {})
        if actual_revision is not None:
            meta.setdefault("actual_revision", actual_revision)
        super().__init__(message, reason=reason, metadata=meta)
        self.actual_revision = actual_revision


class TimerGone(StoreError, FailedPrecondition):
    """A step that fires a timer found it no longer armed: fired or consumed already, or
    disarmed by a step that left its state."""

    default_reason = Reason.TIMER_GONE


class TaskFenced(StoreError, FailedPrecondition):
    """A step that finishes a task found it no longer as it saw it: reason
    ``LEASE_SUPERSEDED`` (leased again, or finished) or ``TASK_CANCELLED``."""

    default_reason = Reason.LEASE_SUPERSEDED


class RecordNotFound(StoreError, NotFound):
    default_reason = Reason.NOT_FOUND


class RecordExists(StoreError, AlreadyExists):
    default_reason = Reason.ALREADY_EXISTS


class RecordLive(StoreError, FailedPrecondition):
    """A removal found the instance not finished: only finished instances are removed."""

    default_reason = Reason.WORKFLOW_NOT_FINISHED


class SerializationError(StoreError, InvalidArgument):
    """A value cannot be stored faithfully (not JSON-representable, NaN, too deep...)."""

    default_reason = Reason.UNSERIALIZABLE_VALUE


class StorageUnavailable(StoreError, Unavailable):
    default_reason = Reason.STORAGE_UNAVAILABLE


class OutcomeUnknown(StoreError, Unknown):
    """The connection was lost around COMMIT and reading back could not tell the result."""

    default_reason = Reason.OUTCOME_UNKNOWN


class Overloaded(StoreError, ResourceExhausted):
    """The writer queue is full; raised at once instead of blocking the caller."""

    default_reason = Reason.OVERLOADED
