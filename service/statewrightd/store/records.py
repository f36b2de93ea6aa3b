"""Plain, immutable values that cross the store boundary.

The engine builds these; the backends persist them. Nothing here knows about SQL.
Timestamps are supplied by the caller (timezone-aware, UTC) so that a save is a pure
function of its input and a read-back after a lost COMMIT can compare exact values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import Any


class Status(enum.StrEnum):
    """An instance's status: the one type the engine, the store and the API share. The
    store spells it as its text."""

    RUNNING = "RUNNING"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


STATUSES = frozenset(Status)
TERMINAL: frozenset[Status] = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})


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


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """An idempotency record, written in the same transaction as the step it answered."""

    request_id: str
    workflow_id: str
    method: str
    fingerprint: str
    response: bytes
    create_time: datetime


@dataclass(frozen=True, slots=True)
class Create:
    record: InstanceRecord
    history: HistoryRecord
    request: RequestRecord | None = None
    timers: TimerChange = NO_TIMERS


@dataclass(frozen=True, slots=True)
class Save:
    new: InstanceRecord
    expected_revision: int
    history: HistoryRecord
    request: RequestRecord | None = None
    timers: TimerChange = NO_TIMERS


Operation = Create | Save


@dataclass(frozen=True, slots=True)
class DefinitionRecord:
    name: str
    version: int
    source: str
    digest: str
    source_name: str
    create_time: datetime


@dataclass(frozen=True, slots=True)
class Page:
    items: list[InstanceRecord]
    next_page_token: str  # "" when there are no more items


def target_of(op: Operation) -> InstanceRecord:
    """The instance as it is meant to be once ``op`` commits."""
    return op.record if isinstance(op, Create) else op.new
