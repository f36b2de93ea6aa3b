"""The words every layer shares: an instance's status, a task's status, which of them are
final.

A bottom module: the store spells these as its column values, the engine decides with
them, the doors show them. Nothing here depends on anything else of the server.
"""

from __future__ import annotations

import enum


class Status(enum.StrEnum):
    """An instance's status. The store spells it as its text."""

    RUNNING = "RUNNING"
    WAITING = "WAITING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


STATUSES = frozenset(Status)
# Nothing steps an instance in one of these again.
TERMINAL: frozenset[Status] = frozenset({Status.COMPLETED, Status.FAILED, Status.CANCELLED})


class TaskStatus(enum.StrEnum):
    SCHEDULED = "SCHEDULED"
    LEASED = "LEASED"
    BACKOFF = "BACKOFF"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    TIMED_OUT = "TIMED_OUT"


# A task in one of these is open: a worker may still lease it or hold it.
OPEN_TASK = frozenset({TaskStatus.SCHEDULED, TaskStatus.LEASED, TaskStatus.BACKOFF})
