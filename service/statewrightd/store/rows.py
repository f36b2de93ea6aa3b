"""Column lists and row-to-record mappers, written once for both backends.

Each backend's SQL selects a table's columns through the lists here, so every row comes
back in the order its mapper reads. The drivers hand values over differently (psycopg
decodes jsonb and timestamptz itself; SQLite keeps JSON as text and times as integer
microseconds), and a ``Rows`` says how for one backend; the mappers stay the same.

A new table means its column tuple and its mapper here, and its statements in each
backend's SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from statewrightd.domain import Status, TaskStatus, TraceContext
from statewrightd.store.codec import decode_transitions
from statewrightd.store.outcomes import HistoryWitness
from statewrightd.store.records import (
    BatchItemFailure,
    BatchRecord,
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    RequestRecord,
    ScheduleRecord,
    TaskRecord,
    TimerRecord,
    Tombstone,
)

INSTANCE = (
    "workflow_id", "definition", "version", "state", "status", "context", "revision", "error",
    "create_time", "update_time", "expire_time", "recursion_limit", "run", "pause",
)  # fmt: skip
HISTORY = (
    "workflow_id", "revision", "event", "transitions", "state", "status", "context", "error",
    "time", "timers", "actor", "input", "run",
)  # fmt: skip
SCHEDULE = (
    "schedule_id", "document", "next_fire_time", "version", "create_time", "update_time",
)  # fmt: skip
BATCH = (
    "batch_id", "document", "state", "matched", "done", "failed", "version", "create_time",
    "update_time", "end_time",
)  # fmt: skip
# A failed item of a batch, as BatchItemFailure reads it.
BATCH_FAILURE = ("workflow_id", "code", "reason", "message", "end_time")
TIMER = (
    "workflow_id", "timer_id", "revision", "transition", "target", "after", "due_time",
    "trace_parent", "trace_state",
)  # fmt: skip
TASK = (
    "workflow_id", "task_id", "revision", "state", "queue", "input", "status", "attempt",
    "max_attempts", "lease_token", "lease_expire_time", "attempt_start_time", "available_time",
    "schedule_time", "deadline", "start_to_close_ms", "heartbeat_ms", "retry",
    "heartbeat_details", "last_error", "last_request_id", "update_time", "priority",
    "concurrency_key", "item_index", "result", "trace_parent", "trace_state",
)  # fmt: skip
REQUEST = ("request_id", "workflow_id", "method", "fingerprint", "response", "create_time")
DEFINITION = ("name", "version", "source", "digest", "source_name", "create_time")
TOMBSTONE = ("workflow_id", "expire_time", "removed_time")
# The part of a history row that tells whether a lost COMMIT landed (see outcomes).
WITNESS = ("workflow_id", "revision", "event", "state", "status", "time")


def listed(columns: Sequence[str], prefix: str = "") -> str:
    """Columns as SQL lists them: ``a, b, c`` (each qualified with ``prefix`` if given)."""
    return ", ".join(prefix + c for c in columns)


def unpaused(table: str) -> str:
    """A claim's condition that the row of ``table`` (a timer or a task) belongs to no
    paused instance (PauseWorkflow): nothing of a paused instance is claimed or offered
    until its unpause. A key lookup per candidate, colocated on Citus."""
    return (
        "NOT EXISTS (SELECT 1 FROM workflow_instances paused"
        f" WHERE paused.workflow_id = {table}.workflow_id AND paused.pause IS NOT NULL)"
    )


class Rows:
    """Rows of one backend's driver as records, and record values as its parameters."""

    __slots__ = ("_json", "_time", "time_param")

    def time(self, value: Any) -> datetime:
        """A time as this backend's driver hands it over, as a UTC datetime."""
        return self._time(value)

    def __init__(
        self,
        *,
        json: Callable[[Any], Any],
        time: Callable[[Any], datetime],
        time_param: Callable[[datetime], Any],
    ) -> None:
        self._json = json
        self._time = time
        # A UTC datetime as this backend's statements take it.
        self.time_param = time_param

    def instance(self, row: Sequence[Any]) -> InstanceRecord:
        return InstanceRecord(
            workflow_id=row[0],
            definition=row[1],
            version=row[2],
            state=row[3],
            status=Status(row[4]),
            context=self._json(row[5]),
            revision=row[6],
            error=None if row[7] is None else self._json(row[7]),
            create_time=self._time(row[8]),
            update_time=self._time(row[9]),
            expire_time=None if row[10] is None else self._time(row[10]),
            recursion_limit=row[11],
            run=row[12],
            pause=None if row[13] is None else self._json(row[13]),
        )

    def history(self, row: Sequence[Any]) -> HistoryRecord:
        return HistoryRecord(
            workflow_id=row[0],
            revision=row[1],
            event=row[2],
            transitions=decode_transitions(self._json(row[3])),
            state=row[4],
            status=Status(row[5]),
            context=self._json(row[6]),
            error=None if row[7] is None else self._json(row[7]),
            time=self._time(row[8]),
            timers=None if row[9] is None else self._json(row[9]),
            actor=row[10],
            input=None if row[11] is None else self._json(row[11]),
            run=row[12],
        )

    def task(self, row: Sequence[Any]) -> TaskRecord:
        return TaskRecord(
            workflow_id=row[0],
            task_id=row[1],
            revision=row[2],
            state=row[3],
            queue=row[4],
            input=self._json(row[5]),
            status=TaskStatus(row[6]),
            attempt=row[7],
            max_attempts=row[8],
            lease_token=row[9],
            lease_expire_time=None if row[10] is None else self._time(row[10]),
            attempt_start_time=None if row[11] is None else self._time(row[11]),
            available_time=self._time(row[12]),
            schedule_time=self._time(row[13]),
            deadline=self._time(row[14]),
            start_to_close=row[15] / 1000,
            heartbeat=None if row[16] is None else row[16] / 1000,
            retry=self._json(row[17]),
            heartbeat_details=None if row[18] is None else self._json(row[18]),
            last_error=None if row[19] is None else self._json(row[19]),
            last_request_id=row[20],
            update_time=self._time(row[21]),
            priority=row[22],
            concurrency_key=row[23],
            item_index=row[24],
            result=None if row[25] is None else self._json(row[25]),
            trace=None if row[26] is None else TraceContext(row[26], row[27] or ""),
        )

    def schedule(self, row: Sequence[Any]) -> ScheduleRecord:
        return ScheduleRecord(
            schedule_id=row[0],
            document=self._json(row[1]),
            next_fire_time=None if row[2] is None else self._time(row[2]),
            version=int(row[3]),
            create_time=self._time(row[4]),
            update_time=self._time(row[5]),
        )

    def batch(self, row: Sequence[Any]) -> BatchRecord:
        return BatchRecord(
            batch_id=row[0],
            document=self._json(row[1]),
            state=row[2],
            matched=int(row[3]),
            done=int(row[4]),
            failed=int(row[5]),
            version=int(row[6]),
            create_time=self._time(row[7]),
            update_time=self._time(row[8]),
            end_time=None if row[9] is None else self._time(row[9]),
        )

    def batch_failure(self, row: Sequence[Any]) -> BatchItemFailure:
        return BatchItemFailure(
            workflow_id=row[0],
            code=row[1] or "",
            reason=row[2] or "",
            message=row[3] or "",
            time=self._time(row[4]),
        )

    def timer(self, row: Sequence[Any]) -> TimerRecord:
        return TimerRecord(
            workflow_id=row[0],
            timer_id=row[1],
            revision=row[2],
            transition=row[3],
            target=row[4],
            after=row[5],
            due_time=self._time(row[6]),
            trace=None if row[7] is None else TraceContext(row[7], row[8] or ""),
        )

    def request(self, row: Sequence[Any]) -> RequestRecord:
        return RequestRecord(
            request_id=row[0],
            workflow_id=row[1],
            method=row[2],
            fingerprint=row[3],
            response=bytes(row[4]),
            create_time=self._time(row[5]),
        )

    def tombstone(self, row: Sequence[Any]) -> Tombstone:
        return Tombstone(
            workflow_id=row[0], expire_time=self._time(row[1]), removed_time=self._time(row[2])
        )

    def definition(self, row: Sequence[Any]) -> DefinitionRecord:
        return DefinitionRecord(
            name=row[0],
            version=row[1],
            source=row[2],
            digest=row[3],
            source_name=row[4],
            create_time=self._time(row[5]),
        )

    def witnesses(self, rows: Iterable[Sequence[Any]]) -> dict[tuple[str, int], HistoryWitness]:
        """``WITNESS`` rows keyed by (workflow id, revision)."""
        return {
            (r[0], r[1]): HistoryWitness(event=r[2], state=r[3], status=r[4], time=self._time(r[5]))
            for r in rows
        }
