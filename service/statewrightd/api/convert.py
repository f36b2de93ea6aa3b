"""Conversions between protobuf messages and the service's plain Python values."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from google.protobuf import struct_pb2, timestamp_pb2
from google.rpc import status_pb2
from statewright.v1 import definition_pb2, task_pb2, workflow_pb2

from statewrightd import errors
from statewrightd.api.status import to_status_proto
from statewrightd.definitions.graph import to_mermaid
from statewrightd.definitions.model import Definition
from statewrightd.definitions.registry import Loaded
from statewrightd.definitions.values import MAX_NESTING
from statewrightd.engine import fsm
from statewrightd.engine.model import FAILURE_ERRORS, Status, TransitionTaken
from statewrightd.engine.snapshots import snapshot_of
from statewrightd.errors import InvalidArgument, quote
from statewrightd.store.records import InstanceRecord, TaskRecord, TaskStatus, TimerRecord

_MAX_SAFE_INT = 2**53

STATUS_TO_PB: dict[Status, workflow_pb2.WorkflowStatus.ValueType] = {
    Status.RUNNING: workflow_pb2.WORKFLOW_STATUS_RUNNING,
    Status.WAITING: workflow_pb2.WORKFLOW_STATUS_WAITING,
    Status.COMPLETED: workflow_pb2.WORKFLOW_STATUS_COMPLETED,
    Status.FAILED: workflow_pb2.WORKFLOW_STATUS_FAILED,
    Status.CANCELLED: workflow_pb2.WORKFLOW_STATUS_CANCELLED,
}


def _value(value: struct_pb2.Value, field: str, depth: int) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        number = value.number_value
        # Struct numbers are doubles: integral ones become ints so int fields type-check.
        if number.is_integer() and abs(number) <= _MAX_SAFE_INT:
            return int(number)
        return number
    if kind == "string_value":
        return _text(value.string_value, field)
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        _check_depth(field, depth)
        return {
            _text(key, field): _value(item, field, depth + 1)
            for key, item in value.struct_value.fields.items()
        }
    if kind == "list_value":
        _check_depth(field, depth)
        return [_value(item, field, depth + 1) for item in value.list_value.values]
    return None


def _check_depth(field: str, depth: int) -> None:
    if depth >= MAX_NESTING:
        raise InvalidArgument(
            f"{field} nests maps and lists more than {MAX_NESTING} levels deep",
            reason="VALUE_TOO_DEEP",
            metadata={"field": field, "limit": MAX_NESTING},
        )


def _text(text: str, field: str) -> str:
    # Neither PostgreSQL's jsonb nor the CEL runtime keep a NUL character intact (CEL cuts
    # the string there): refuse it rather than store something other than what was sent.
    if "\x00" in text:
        raise InvalidArgument(
            f"{field} contains a NUL character, which cannot be stored",
            reason="UNSERIALIZABLE_VALUE",
            metadata={"field": field},
        )
    return text


def struct_to_dict(message: struct_pb2.Struct, field: str) -> dict[str, Any]:
    """A request's map of values (input, payload) as plain values, each checked on its own.

    ``field`` names the request field in errors; a value's own field is ``field.key``.
    """
    out: dict[str, Any] = {}
    for key, item in message.fields.items():
        name = _text(key, field)
        out[name] = _value(item, f"{field}.{quote(name, 64)}", 0)
    return out


def dict_to_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    message.update(_finite(values))
    return message


def _finite(value: Any) -> Any:
    # Struct cannot carry NaN or infinities faithfully in JSON; the store refuses them too.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def timestamp(value: datetime) -> timestamp_pb2.Timestamp:
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(value)
    return message


def transitions_pb(transitions: Iterable[TransitionTaken]) -> list[workflow_pb2.Transition]:
    return [
        workflow_pb2.Transition(from_state=t.from_state, to_state=t.to_state, event=t.event or "")
        for t in transitions
    ]


def step_error_status(error: Mapping[str, Any]) -> status_pb2.Status:
    """``Workflow.error``: why a step failed the instance, as the error it stands for."""
    reason = str(error.get("reason") or "STEP_FAILED")
    kind = FAILURE_ERRORS.get(reason, errors.FailedPrecondition)
    failure = kind(
        str(error.get("message", "")), reason=reason, metadata=error.get("metadata") or {}
    )
    return to_status_proto(failure)


def timers_pb(timers: Iterable[TimerRecord]) -> list[workflow_pb2.Timer]:
    return [
        workflow_pb2.Timer(
            timer_id=t.timer_id,
            target_state=t.target,
            after=t.after,
            due_time=timestamp(t.due_time),
        )
        for t in timers
    ]


def workflow_pb(
    record: InstanceRecord,
    definition: Definition,
    timers: Iterable[TimerRecord] = (),
    task: TaskRecord | None = None,
) -> workflow_pb2.Workflow:
    snapshot = snapshot_of(record)
    message = workflow_pb2.Workflow(
        name=f"workflows/{record.workflow_id}",
        workflow_id=record.workflow_id,
        definition=record.definition,
        version=record.version,
        state=record.state,
        status=STATUS_TO_PB[record.status],
        context=dict_to_struct(record.context),
        revision=record.revision,
        etag=etag(record.workflow_id, record.revision),
        accepted_events=fsm.accepted_events(definition, snapshot),
        create_time=timestamp(record.create_time),
        update_time=timestamp(record.update_time),
        timers=timers_pb(timers),
    )
    if record.error and snapshot.status in (Status.FAILED, Status.CANCELLED):
        message.error.CopyFrom(step_error_status(record.error))
    if task is not None:
        message.pending_task.CopyFrom(task_pb(task))
    if record.expire_time is not None:
        message.expire_time.CopyFrom(timestamp(record.expire_time))
    return message


TASK_STATUS_TO_PB: dict[TaskStatus, task_pb2.TaskStatus.ValueType] = {
    TaskStatus.SCHEDULED: task_pb2.TASK_STATUS_SCHEDULED,
    TaskStatus.LEASED: task_pb2.TASK_STATUS_LEASED,
    TaskStatus.BACKOFF: task_pb2.TASK_STATUS_BACKOFF,
    TaskStatus.COMPLETED: task_pb2.TASK_STATUS_COMPLETED,
    TaskStatus.FAILED: task_pb2.TASK_STATUS_FAILED,
    TaskStatus.CANCELLED: task_pb2.TASK_STATUS_CANCELLED,
    TaskStatus.TIMED_OUT: task_pb2.TASK_STATUS_TIMED_OUT,
}
TASK_STATUS_FROM_PB = {number: status for status, number in TASK_STATUS_TO_PB.items()}


def task_name(task: TaskRecord) -> str:
    return f"workflows/{task.workflow_id}/tasks/{task.task_id}"


def task_pb(task: TaskRecord, *, with_lease: bool = False) -> task_pb2.Task:
    """A task as workers and clients see it. Its lease token only when ``with_lease``: a
    poll hands it to the worker that took the lease, and nothing else shows it."""
    message = task_pb2.Task(
        name=task_name(task),
        workflow=f"workflows/{task.workflow_id}",
        state=task.state,
        queue=task.queue,
        input=dict_to_struct(task.input),
        attempt=task.attempt,
        schedule_time=timestamp(task.schedule_time),
        deadline=timestamp(task.deadline),
        status=TASK_STATUS_TO_PB[task.status],
        revision=task.revision,
    )
    if task.status is TaskStatus.LEASED and task.lease_expire_time is not None:
        message.lease_expire_time.CopyFrom(timestamp(task.lease_expire_time))
        if with_lease and task.lease_token:
            message.lease_token = task.lease_token
    if task.heartbeat_details is not None:
        message.heartbeat_details.CopyFrom(dict_to_struct(task.heartbeat_details))
    if task.last_error:
        error = task.last_error
        message.last_error.CopyFrom(
            task_pb2.TaskError(
                type=str(error.get("type") or ""),
                message=str(error.get("message") or ""),
                details=dict_to_struct(error.get("details") or {}),
            )
        )
    return message


def etag(workflow_id: str, revision: int) -> str:
    return f'"{workflow_id}/{revision}"'


def definition_pb(loaded: Loaded) -> definition_pb2.Definition:
    definition, record = loaded.definition, loaded.record
    return definition_pb2.Definition(
        name=f"definitions/{definition.name}/versions/{definition.version}",
        definition=definition.name,
        version=definition.version,
        description=definition.description,
        source=definition.source,
        digest=definition.digest,
        mermaid=to_mermaid(definition),
        states=list(definition.states),
        events=list(definition.events()),
        create_time=timestamp(record.create_time),
        source_name=record.source_name,
    )
