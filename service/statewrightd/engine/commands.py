"""The typed commands a step starts from, one class per kind of step.

A command says what was asked of one instance, as values the engine understands; the
servicer builds one from a request and the runtime executes it. It carries nothing of the
transport and nothing of its own execution (attempts, admission, the caller's reply): the
runtime keeps that beside it. The family is open: every kind of step the runtime executes
is a subclass of :class:`Command`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from statewrightd.definitions.registry import Loaded


@dataclass(frozen=True, slots=True)
class RequestKey:
    """An idempotency key and what identifies the request it was first used with."""

    request_id: str
    method: str
    fingerprint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """One step asked of one instance. ``request`` makes it idempotent."""

    kind: ClassVar[str]
    workflow_id: str
    request: RequestKey | None = None
    # Who asked: the caller's principal, or the server itself for the steps it starts.
    actor: str = "anonymous"


@dataclass(frozen=True, slots=True, kw_only=True)
class StartCommand(Command):
    """Create the instance and run its first step. ``return_existing``: an id that is
    taken answers with the stored instance instead of ALREADY_EXISTS."""

    kind: ClassVar[str] = "start"
    loaded: Loaded
    input: Mapping[str, Any] = field(default_factory=dict)
    return_existing: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeCommand(Command):
    """Resume a WAITING instance with an event (empty: the first one declared)."""

    kind: ClassVar[str] = "resume"
    event: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)
    expected_revision: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalCommand(Command):
    """Deliver an event to a RUNNING instance."""

    kind: ClassVar[str] = "signal"
    event: str
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelCommand(Command):
    """Stop a live instance where it is."""

    kind: ClassVar[str] = "cancel"
    reason: str = ""
    expected_revision: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerCommand(Command):
    """A claimed timer came due: fire ``transition`` if the instance still rests in the
    state whose entry (at ``revision``) armed timer ``timer_id``."""

    kind: ClassVar[str] = "timer"
    timer_id: str
    transition: int
    revision: int
    due_time: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteTaskCommand(Command):
    """A worker completed task ``task_id`` of task state ``state`` under ``lease_token``:
    apply ``result`` if that lease is still the current one."""

    kind: ClassVar[str] = "complete_task"
    task_id: str
    state: str
    lease_token: str
    result: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskGiveUpCommand(Command):
    """Task ``task_id`` of ``state`` gave up (``failure``: type, message, details,
    attempts): fire ``task_failed``, if the task is still as it was seen (``lease_token``,
    ``attempt``; ``leased``: it must still be leased)."""

    kind: ClassVar[str] = "task_gave_up"
    task_id: str
    state: str
    lease_token: str | None
    attempt: int
    leased: bool
    failure: Mapping[str, Any]
    timed_out: bool = False


def expected_revision(command: Command) -> int:
    """The revision the caller expects the instance at; 0 when it does not care."""
    if isinstance(command, ResumeCommand | CancelCommand):
        return command.expected_revision
    return 0
