"""The words every layer shares: an instance's status, a task's status, which of them are
final, and the ids the server makes.

A bottom module: the store spells these as its column values, the engine decides with
them, the doors show them. Nothing here depends on anything else of the server.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final


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


@dataclass(frozen=True, slots=True)
class TraceContext:
    """A span's W3C Trace Context, as the ``traceparent`` and ``tracestate`` headers carry
    it: what a task keeps of the step that scheduled it, what a worker sends back of its
    own span. Only the observability package reads or writes the headers' contents."""

    traceparent: str
    tracestate: str = ""


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
# Flow control: a task's priority when its state names none (1 is served first, 5 last),
# and the longest concurrency key (a customer id, a tenant: short, indexed text).
DEFAULT_PRIORITY: Final = 3
MAX_KEY_LENGTH: Final = 256


# The principals history names for the steps the server starts itself.
TIMER_ACTOR: Final = "statewright:timer"  # a due timer fired
SWEEPER_ACTOR: Final = "statewright:tasks"  # a task gave up: its lease or deadline ran out
SCHEDULE_ACTOR: Final = "statewright:schedule"  # a schedule fired (the start, or a cancel)
# A parent started its child, or cancelled it (it left the child's state, or was cancelled).
PARENT_ACTOR: Final = "statewright:parent"
CHILD_ACTOR: Final = "statewright:child"  # a child's end, delivered to its parent


# A workflow id (the API checks what callers send against it; a child's id, which a
# definition's expression gives, is checked by the step that plans its start).
WORKFLOW_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}\Z")


def task_id_of(revision: int, item: int | None = None) -> str:
    """A task's id: the revision of the step that scheduled it (one task per entry), and
    for an item of a fan-out (``map``) its index: ``<revision>.<index>``."""
    return str(revision) if item is None else f"{revision}.{item}"


# What ``task_id_of`` makes: a revision, in decimal, and maybe an item's index.
TASK_ID: Final = re.compile(r"^[1-9][0-9]{0,18}(?:\.(?:0|[1-9][0-9]{0,8}))?\Z")


def timer_id_of(revision: int, transition: int) -> str:
    """A timer's id: the step that armed it, and the transition it fires."""
    return f"{revision}.{transition}"


class SearchKind(enum.StrEnum):
    """The type of a definition's search field: how its value is projected and compared.
    Text compares case-insensitively by containment; a keyword list holds several values
    and ``:`` asks whether one of them is the given one."""

    KEYWORD = "keyword"
    TEXT = "text"
    INT = "int"
    NUMBER = "number"
    BOOL = "bool"
    TIMESTAMP = "timestamp"
    KEYWORD_LIST = "keyword_list"


# The kinds whose values are stored as text (the others as numbers: a timestamp as its
# seconds since the epoch, a bool as 0 or 1).
TEXT_KINDS: Final = frozenset({SearchKind.KEYWORD, SearchKind.TEXT, SearchKind.KEYWORD_LIST})
