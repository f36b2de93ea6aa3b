"""What the in-process store's parts share: its rows (as SQLite keeps them), and the lock
that makes each public method a transaction."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from statewrightd.domain import TERMINAL
from statewrightd.errors import StorageUnavailable
from statewrightd.reasons import Reason
from statewrightd.store.codec import (
    check_time,
    dumps,
    from_micros,
    loads,
    to_micros,
)
from statewrightd.store.flow import KeyState, StoredQueue
from statewrightd.store.records import (
    SearchValues,
    TaskRecord,
)
from statewrightd.store.rows import TASK, Rows

ROWS = Rows(json=loads, time=from_micros, time_param=to_micros)
PURGE_LIMIT = 1000
COUNT_CAP = 100_000
OPEN = frozenset({"SCHEDULED", "LEASED", "BACKOFF"})
READY = frozenset({"SCHEDULED", "BACKOFF"})
FINISHED = frozenset(str(s) for s in TERMINAL)
CHILD_TABLES = ("workflow_history", "workflow_timers", "workflow_tasks", "workflow_requests")


@dataclass(slots=True)
class Instance:
    row: list[Any]  # rows.INSTANCE order, SQLite's representation
    history: dict[int, list[Any]] = field(default_factory=dict)  # revision -> rows.HISTORY
    timers: dict[str, list[Any]] = field(default_factory=dict)  # id -> rows.TIMER + claim
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> columns + claim
    search: SearchValues = ()  # the values of its search fields

    @property
    def revision(self) -> int:
        return int(self.row[6])

    @property
    def status(self) -> str:
        return str(self.row[4])


def micros(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def stamp(value: datetime, where: str = "time") -> int:
    return to_micros(check_time(value, where))


def stored_task(task: dict[str, Any]) -> dict[str, Any]:
    """An encoded task (codec.encode_task) as this store keeps it: SQLite's columns."""
    out = {**task, **task["us"]}
    del out["us"]
    for name in ("input", "retry", "heartbeat_details", "last_error", "result"):
        out[name] = None if out[name] is None else dumps(out[name], f"task {name}")
    out["claimed_until"] = None
    return out


def task_record(task: dict[str, Any]) -> TaskRecord:
    return ROWS.task([task[c] for c in TASK])


class MemoryState:
    """The rows of every table, behind one lock."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self._instances: dict[str, Instance] = {}
        # Keyed by (workflow id, request id): a request id is unique per instance.
        self._requests: dict[tuple[str, str], tuple[str, str, str, str, bytes, int]] = {}
        self._definitions: dict[tuple[str, int], tuple[str, int, str, str, str, int]] = {}
        self._tombstones: dict[str, tuple[str, int, int]] = {}
        # Flow control: queue -> its config and bucket; queue -> key -> what it knows.
        self._flow_queues: dict[str, StoredQueue] = {}
        self._flow_keys: dict[str, dict[str, KeyState]] = {}

    @contextmanager
    def _held(self) -> Iterator[None]:
        with self._lock:
            if self._closed:
                raise StorageUnavailable("the repository is closed", reason=Reason.STORE_CLOSED)
            yield
