"""TaskService requests, validated field by field into the task desk's terms."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from google.protobuf import duration_pb2, timestamp_pb2
from statewright.v1 import task_service_pb2 as pb

from statewrightd.api import validation as v
from statewrightd.api.convert import (
    DEFAULT_LIMITS,
    TASK_STATUS_FROM_PB,
    ValueLimits,
    struct_to_dict,
    task_pb,
    timestamp,
)
from statewrightd.api.requests import request_key
from statewrightd.app.queues import DEFAULT_KEYS, MAX_KEYS, QueueStatus, checked_config
from statewrightd.app.tasks import TaskFailure, TaskRef
from statewrightd.definitions.model import QUEUE_NAME
from statewrightd.domain import TASK_ID, TraceContext
from statewrightd.engine.commands import RequestKey
from statewrightd.store.flow import LIMITS, KeyState, QueueConfig
from statewrightd.store.records import TaskRecord

MAX_TASKS: Final = 100
MAX_WAIT: Final = 60.0
MAX_IDENTITY_LENGTH: Final = 256
MAX_TOKEN_LENGTH: Final = 128
MAX_ERROR_TYPE_LENGTH: Final = 128
MAX_ERROR_MESSAGE_LENGTH: Final = 4096
# A retry delay beyond this is a mistake (schedule_to_close caps it in any case).
MAX_RETRY_DELAY: Final = 7 * 24 * 3600.0
ERROR_TYPE: Final = re.compile(r"^[\x21-\x7e]{1,128}\Z")
# W3C Trace Context bounds: a version-00 traceparent is 55 characters (later versions may
# append), a tracestate at most 32 members of 256 characters, 512 in practice.
MAX_TRACEPARENT_LENGTH: Final = 256
MAX_TRACESTATE_LENGTH: Final = 8192
_TASK_NAME_HINT: Final = "'workflows/{workflow_id}/tasks/{task_id}'"


# The size of a poll's answer when the caller names none: under gRPC's default receive
# limit (4 MiB), with room to spare. What a caller may name instead: from 16 KiB.
DEFAULT_POLL_BYTES: Final = 3 * 1024 * 1024
MIN_POLL_BYTES: Final = 16 * 1024
MAX_POLL_BYTES: Final = 256 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Poll:
    queue: str
    identity: str
    max_tasks: int
    wait: float
    max_bytes: int = DEFAULT_POLL_BYTES


@dataclass(frozen=True, slots=True)
class Fail:
    ref: TaskRef
    token: str
    failure: TaskFailure
    non_retryable: bool
    retry_after: float | None
    request: RequestKey | None
    close_key_until: datetime | None = None
    worker: TraceContext | None = None


def task_ref(value: str, field: str = "name") -> TaskRef:
    """Parses ``workflows/{workflow_id}/tasks/{task_id}``."""
    v.required(field, value)
    v.at_most(field, value, len("workflows//tasks/") + v.MAX_WORKFLOW_ID_LENGTH + 19)
    parts = value.split("/")
    if (
        len(parts) != 4
        or parts[0] != "workflows"
        or parts[2] != "tasks"
        or not v.WORKFLOW_ID.match(parts[1])
        or not TASK_ID.match(parts[3])
    ):
        raise v.invalid(field, f"{field} must be {_TASK_NAME_HINT}; got {value!r}", value=value)
    return TaskRef(parts[1], parts[3])


def queue_name(value: str, field: str = "queue") -> str:
    v.required(field, value)
    v.at_most(field, value, 63)
    if not QUEUE_NAME.match(value):
        raise v.invalid(
            field, f"{field} must match [a-z][a-z0-9-.]{{0,62}}; got {value!r}", value=value
        )
    return value


def leased(name: str, token: str) -> tuple[TaskRef, str]:
    """The task a worker's call names, and the lease token it holds, both checked."""
    return task_ref(name), lease_token(token)


def lease_token(value: str, field: str = "lease_token") -> str:
    v.required(field, value)
    return v.at_most(field, value, MAX_TOKEN_LENGTH)


def seconds(value: duration_pb2.Duration, field: str, limit: float) -> float:
    """A Duration as seconds, refused when negative, malformed or above ``limit``."""
    if value.seconds < 0 or value.nanos < 0 or value.nanos >= 1_000_000_000:
        raise v.invalid(field, f"{field} must be a duration of zero or more", value=str(value))
    total = value.seconds + value.nanos / 1e9
    if total > limit:
        raise v.invalid(
            field, f"{field} must be at most {limit:g}s; got {total:g}s", limit=f"{limit:g}s"
        )
    return total


def poll(request: pb.PollTasksRequest, time_remaining: float | None) -> Poll:
    queue = queue_name(request.queue)
    v.required("identity", request.identity)
    v.at_most("identity", request.identity, MAX_IDENTITY_LENGTH)
    count = request.max_tasks or 1
    if not 1 <= count <= MAX_TASKS:
        raise v.invalid(
            "max_tasks", f"max_tasks must be 1 to {MAX_TASKS}; got {count}", limit=MAX_TASKS
        )
    wait = seconds(request.wait, "wait", MAX_WAIT)
    if time_remaining is not None:
        # Answer before the caller's deadline, so that what a poll leases reaches it.
        wait = max(0.0, min(wait, time_remaining - 1.0))
    size = request.max_bytes or DEFAULT_POLL_BYTES
    if not MIN_POLL_BYTES <= size <= MAX_POLL_BYTES:
        raise v.invalid(
            "max_bytes",
            f"max_bytes must be {MIN_POLL_BYTES:,} to {MAX_POLL_BYTES:,}; got {size:,}",
            limit=MAX_POLL_BYTES,
        )
    return Poll(queue, request.identity, count, wait, size)


def fail(request: pb.FailTaskRequest, limits: ValueLimits = DEFAULT_LIMITS) -> Fail:
    ref, token = leased(request.name, request.lease_token)
    v.request_id(request.request_id)
    error = request.error
    v.required("error.type", error.type)
    v.at_most("error.type", error.type, MAX_ERROR_TYPE_LENGTH)
    if not ERROR_TYPE.match(error.type):
        raise v.invalid(
            "error.type", "error.type must be printable ASCII without spaces, e.g. CARD_DECLINED"
        )
    v.at_most("error.message", error.message, MAX_ERROR_MESSAGE_LENGTH)
    retry_after = None
    if request.HasField("retry_delay"):
        retry_after = seconds(request.retry_delay, "retry_delay", MAX_RETRY_DELAY)
    close_until = None
    if request.HasField("close_key_until"):
        close_until = instant(request.close_key_until, "close_key_until")
    return Fail(
        ref=ref,
        token=token,
        failure=TaskFailure(
            error.type, error.message, struct_to_dict(error.details, "error.details", limits)
        ),
        non_retryable=request.non_retryable,
        retry_after=retry_after,
        request=request_key("FailTask", request, request.request_id),
        close_key_until=close_until,
        worker=worker_trace(request.traceparent, request.tracestate),
    )


def worker_trace(traceparent: str, tracestate: str) -> TraceContext | None:
    """The trace context a worker sent of its span (None: none). Only bounded here: the
    step's observer reads it with OpenTelemetry's propagator, which ignores a malformed
    one (the step is then not linked to it)."""
    v.at_most("traceparent", traceparent, MAX_TRACEPARENT_LENGTH)
    v.at_most("tracestate", tracestate, MAX_TRACESTATE_LENGTH)
    return TraceContext(traceparent, tracestate) if traceparent else None


def instant(value: timestamp_pb2.Timestamp, field: str) -> datetime:
    """A Timestamp as an aware datetime, refused when malformed or out of range."""
    if value.nanos < 0 or value.nanos >= 1_000_000_000:
        raise v.invalid(field, f"{field} is not a valid timestamp", value=str(value))
    try:
        return value.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise v.invalid(field, f"{field} is out of range", value=str(value)) from None


def queue_config(config: pb.QueueConfig) -> QueueConfig:
    """A SetQueueConfig's config, each limit checked: zero or more, rates finite."""
    queue = queue_name(config.queue, "config.queue")
    return checked_config(queue, {n: getattr(config, n) for n in LIMITS}, "config")


def queue_config_pb(config: QueueConfig) -> pb.QueueConfig:
    message = pb.QueueConfig(queue=config.queue)
    for name, value in config.limits().items():
        setattr(message, name, value)
    if config.update_time is not None:
        message.update_time.CopyFrom(timestamp(config.update_time))
    return message


def closed_key_pb(key: KeyState) -> pb.ClosedKey:
    message = pb.ClosedKey(key=key.key)
    if key.closed_until is not None:
        message.closed_until.CopyFrom(timestamp(key.closed_until))
    return message


def key_count(value: int) -> int:
    if not 0 <= value <= MAX_KEYS:
        raise v.invalid(
            "key_count", f"key_count must be 0 to {MAX_KEYS}; got {value}", limit=MAX_KEYS
        )
    return value or DEFAULT_KEYS


def queue_status_pb(status: QueueStatus) -> pb.QueueStatus:
    closed = {k.key: k for k in status.closed}
    message = pb.QueueStatus(
        queue=status.queue,
        backlog=status.backlog,
        leased=status.leased,
        tokens=status.tokens or 0.0,
        closed_keys=[closed_key_pb(k) for k in status.closed],
    )
    if status.stored is not None:
        message.config.CopyFrom(queue_config_pb(status.stored.config))
    if status.oldest_waiting is not None:
        message.oldest_waiting.FromTimedelta(timedelta(seconds=status.oldest_waiting))
    for k in status.busiest:
        entry = pb.QueueKeyStatus(key=k.key, backlog=k.ready, leased=k.leased)
        shut = closed.get(k.key)
        if shut is not None and shut.closed_until is not None:
            entry.closed_until.CopyFrom(timestamp(shut.closed_until))
        message.busiest_keys.append(entry)
    return message


def list_filters(request: pb.ListTasksRequest) -> tuple[str | None, str | None, str | None]:
    """(queue, workflow id, status) of a ListTasks, each None when not filtered on."""
    queue = queue_name(request.queue) if request.queue else None
    workflow = v.workflow_name(request.workflow, "workflow") if request.workflow else None
    status = None
    if request.status:
        found = TASK_STATUS_FROM_PB.get(request.status)
        if found is None:
            raise v.invalid("status", f"unknown status {request.status}", value=request.status)
        status = found.value
    return queue, workflow, status


# What a lease adds to a task as it is sent (a token, two times, the attempt), at most;
# and what one task adds to the answer around it (a field tag and a length).
_LEASE_BYTES = 96
_ENTRY_BYTES = 6


def fitting(max_bytes: int) -> Callable[[list[TaskRecord]], list[TaskRecord]]:
    """Choose, among ready tasks in order, those whose answer fits in ``max_bytes``: a
    task too large for what is left is passed over (a later, smaller one may fit), and
    one too large on its own is left for a worker that accepts it."""

    def choose(ready: list[TaskRecord]) -> list[TaskRecord]:
        left = max_bytes - _GRPC_FRAME_BYTES
        chosen = []
        for task in ready:
            size = task_pb(task, with_lease=True).ByteSize() + _LEASE_BYTES + _ENTRY_BYTES
            if size <= left:
                chosen.append(task)
                left -= size
        return chosen

    return choose


_GRPC_FRAME_BYTES = 5
