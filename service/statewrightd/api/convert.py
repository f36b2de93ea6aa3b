"""Conversions between protobuf messages and the service's plain Python values."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jsonpatch
from google.protobuf import struct_pb2, timestamp_pb2
from google.rpc import status_pb2
from statewright.v1 import definition_pb2, task_pb2, workflow_pb2, workflow_service_pb2

from statewrightd import errors
from statewrightd.api.status import to_status_proto
from statewrightd.definitions.graph import to_mermaid
from statewrightd.definitions.model import TASK_FAILED, ContextField, Definition
from statewrightd.definitions.registry import Loaded
from statewrightd.definitions.values import MAX_NESTING
from statewrightd.domain import Status, TaskStatus
from statewrightd.engine import fsm
from statewrightd.engine.loading import Family
from statewrightd.engine.model import FAILURE_ERRORS, TransitionTaken
from statewrightd.engine.snapshots import snapshot_of
from statewrightd.errors import InvalidArgument, quote
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord

_MAX_SAFE_INT = 2**53
_isfinite = math.isfinite

STATUS_TO_PB: dict[Status, workflow_pb2.WorkflowStatus.ValueType] = {
    Status.RUNNING: workflow_pb2.WORKFLOW_STATUS_RUNNING,
    Status.WAITING: workflow_pb2.WORKFLOW_STATUS_WAITING,
    Status.COMPLETED: workflow_pb2.WORKFLOW_STATUS_COMPLETED,
    Status.FAILED: workflow_pb2.WORKFLOW_STATUS_FAILED,
    Status.CANCELLED: workflow_pb2.WORKFLOW_STATUS_CANCELLED,
}


@dataclass(frozen=True, slots=True)
class ValueLimits:
    """What one map of values in a request (an input, a payload, a result) may hold."""

    nesting: int = MAX_NESTING
    string_bytes: int = 64 * 1024
    list_items: int = 10_000
    map_keys: int = 1_000
    total_bytes: int = 256 * 1024  # the whole map, as JSON: what a context may hold


DEFAULT_LIMITS = ValueLimits()


def _too_large(field: str, what: str, limit: int) -> InvalidArgument:
    return InvalidArgument(
        f"{field} {what} (the limit is {limit:,})",
        reason=Reason.VALUE_TOO_LARGE,
        metadata={"field": field, "limit": limit},
    )


class _Reader:
    # ``keys``: one string object for each distinct key of the message, as json.loads
    # shares them. protobuf hands out a new string for every key of every map, and a list
    # of records would keep one of each in every record for as long as the instance is
    # cached: nearly twice the memory of the same context read from the store.
    __slots__ = ("keys", "limits")

    def __init__(self, limits: ValueLimits) -> None:
        self.limits = limits
        self.keys: dict[str, str] = {}

    def value(self, value: struct_pb2.Value, field: str, depth: int) -> Any:
        kind = value.WhichOneof("kind")
        if kind == "number_value":
            number = value.number_value
            if not math.isfinite(number):
                # JSON has no NaN or infinities: the store could not keep them faithfully.
                raise InvalidArgument(
                    f"{field} is {number}, which JSON cannot hold",
                    reason=Reason.UNSERIALIZABLE_VALUE,
                    metadata={"field": field},
                )
            # Struct numbers are doubles: integral ones become ints so int fields type-check.
            if number.is_integer() and abs(number) <= _MAX_SAFE_INT:
                return int(number)
            return number
        if kind == "string_value":
            return self.text(value.string_value, field)
        if kind == "bool_value":
            return value.bool_value
        if kind == "struct_value":
            self.depth(field, depth)
            return self.map(value.struct_value, field, depth + 1)
        if kind == "list_value":
            self.depth(field, depth)
            items = value.list_value.values
            if len(items) > self.limits.list_items:
                raise _too_large(field, f"has {len(items):,} items", self.limits.list_items)
            return [self.value(item, field, depth + 1) for item in items]
        return None

    def map(self, message: struct_pb2.Struct, field: str, depth: int) -> dict[str, Any]:
        fields = message.fields
        if len(fields) > self.limits.map_keys:
            raise _too_large(field, f"has {len(fields):,} keys", self.limits.map_keys)
        keys = self.keys
        return {
            keys.setdefault(key := self.text(k, field), key): self.value(v, field, depth)
            for k, v in fields.items()
        }

    def depth(self, field: str, depth: int) -> None:
        if depth >= self.limits.nesting:
            raise InvalidArgument(
                f"{field} nests maps and lists more than {self.limits.nesting} levels deep",
                reason=Reason.VALUE_TOO_DEEP,
                metadata={"field": field, "limit": self.limits.nesting},
            )

    def text(self, text: str, field: str) -> str:
        # Neither PostgreSQL's jsonb nor the CEL runtime keep a NUL character intact (CEL
        # cuts the string there): refuse it rather than store something other than was sent.
        if "\x00" in text:
            raise InvalidArgument(
                f"{field} contains a NUL character, which cannot be stored",
                reason=Reason.UNSERIALIZABLE_VALUE,
                metadata={"field": field},
            )
        limit = self.limits.string_bytes
        # A character is at most 4 bytes in UTF-8: only a long text needs encoding to check.
        if len(text) > limit // 4 and len(text.encode("utf-8", "surrogatepass")) > limit:
            raise _too_large(field, "has a string too long", limit)
        return text


def struct_to_dict(
    message: struct_pb2.Struct, field: str, limits: ValueLimits = DEFAULT_LIMITS
) -> dict[str, Any]:
    """A request's map of values (input, payload) as plain values, each checked on its own
    against ``limits``, and the whole against their total size.

    ``field`` names the request field in errors; a value's own field is ``field.key``.
    """
    reader = _Reader(limits)
    fields = message.fields
    if len(fields) > limits.map_keys:
        raise _too_large(field, f"has {len(fields):,} keys", limits.map_keys)
    out: dict[str, Any] = {}
    for key, item in fields.items():
        name = reader.text(key, field)
        out[name] = reader.value(item, f"{field}.{quote(name, 64)}", 0)
    if message.ByteSize() > limits.total_bytes // 2:  # JSON is never much smaller than this
        size = len(json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode())
        if size > limits.total_bytes:
            raise _too_large(field, f"is {size:,} bytes as JSON", limits.total_bytes)
    return out


def dict_to_struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    """A context as a ``Struct``; NaN and infinities become null (JSON has neither).

    Every response carries one. ``Struct.update`` (protobuf's helper, Python over the C
    message) costs 2.7 times as much: it first needed a copy without non-finite numbers,
    then tries ``isinstance`` in turn for every value; the plain JSON types of a context
    are dispatched here by their exact type, in one walk.
    """
    message = struct_pb2.Struct()
    _fill(message, values)
    return message


def _fill(message: struct_pb2.Struct, values: Mapping[str, Any]) -> None:
    fields = message.fields
    for key, value in values.items():
        _set(fields[key], value)


def _set(target: struct_pb2.Value, value: Any) -> None:
    kind = type(value)
    if kind is str:
        target.string_value = value
    elif kind is float:
        if _isfinite(value):
            target.number_value = value
        else:
            target.null_value = struct_pb2.NULL_VALUE
    elif kind is bool:
        target.bool_value = value
    elif kind is int:
        target.number_value = value
    elif value is None:
        target.null_value = struct_pb2.NULL_VALUE
    elif kind is dict:
        _fill_nested(target, value)
    elif kind is list:
        _extend(target, value)
    else:
        _set_other(target, value)


def _fill_nested(target: struct_pb2.Value, values: Mapping[str, Any]) -> None:
    if values:
        _fill(target.struct_value, values)
    else:
        target.struct_value.SetInParent()  # present, and empty


def _extend(target: struct_pb2.Value, values: list[Any] | tuple[Any, ...]) -> None:
    if not values:
        target.list_value.SetInParent()
        return
    items = target.list_value.values
    for item in values:
        _set(items.add(), item)


def _set_other(target: struct_pb2.Value, value: Any) -> None:
    # Subclasses and other containers, as Struct.update takes them.
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, str):
        target.string_value = str(value)
    elif isinstance(value, int | float):
        number = float(value)
        if _isfinite(number):
            target.number_value = number
        else:
            target.null_value = struct_pb2.NULL_VALUE
    elif isinstance(value, Mapping):
        _fill_nested(target, value)
    elif isinstance(value, list | tuple):
        _extend(target, value)
    else:
        raise ValueError(f"a context value of type {type(value).__name__} has no Struct form")


def context_patch_pb(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> list[workflow_service_pb2.ContextPatchOperation]:
    """How a step changed a context, as JSON Patch (RFC 6902) operations.

    Computed when history is read rather than stored: every revision keeps its context,
    so the patch costs the step nothing and never disagrees with what was saved."""
    if before == after:
        return []
    operations = []
    for op in _patch_operations(before, after):
        message = workflow_service_pb2.ContextPatchOperation(
            op=op["op"], path=op["path"], from_path=op.get("from", "")
        )
        if "value" in op:
            _set(message.value, op["value"])
        operations.append(message)
    return operations


class _KeyOrderedDiff(jsonpatch.DiffBuilder):  # type: ignore[misc]
    """jsonpatch's differ, walking an object's keys in sorted order.

    The library walks them as sets of strings, whose order follows the process's string
    hashes and the order the keys were read in (PostgreSQL's jsonb has its own): the same
    change would read as differently ordered patches from two replicas, or from history
    and a live watch. The hook is the one ``JsonPatch.from_diff`` drives (jsonpatch is
    pinned)."""

    # A list's element is never paired into a move: the library's pairing of one with a
    # member elsewhere (an object's, or another list's) shifts the wrong indices, and the
    # patch no longer applies ({"": [false], "0": null} to {"": [null]} was one).
    def _item_added(self, path: str, key: str | int, item: Any) -> None:
        if not isinstance(key, int):
            super()._item_added(path, key, item)
            return
        add = {"op": "add", "path": jsonpatch._path_join(path, key), "value": item}
        self.insert(jsonpatch.AddOperation(add, pointer_cls=self.pointer_cls))

    def _item_removed(self, path: str, key: str | int, item: Any) -> None:
        if not isinstance(key, int):
            super()._item_removed(path, key, item)
            return
        remove = {"op": "remove", "path": jsonpatch._path_join(path, key)}
        self.insert(jsonpatch.RemoveOperation(remove, pointer_cls=self.pointer_cls))

    def _compare_dicts(self, path: str, src: Mapping[str, Any], dst: Mapping[str, Any]) -> None:
        for key in sorted(src.keys() - dst.keys()):
            self._item_removed(path, key, src[key])
        for key in sorted(dst.keys() - src.keys()):
            self._item_added(path, key, dst[key])
        for key in sorted(src.keys() & dst.keys()):
            self._compare_values(path, key, src[key], dst[key])


def _patch_operations(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    source, target = dict(before), dict(after)
    builder = _KeyOrderedDiff(source, target)
    builder._compare_values("", None, source, target)
    return list(builder.execute())


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamp(value: datetime) -> timestamp_pb2.Timestamp:
    """What ``Timestamp.FromDatetime`` makes (a naive value read as UTC), by subtraction:
    protobuf's goes through a time tuple and ``calendar.timegm``, a third as fast, and
    every answer carries several times (a task three)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    since = value - _EPOCH
    return timestamp_pb2.Timestamp(
        seconds=since.days * 86_400 + since.seconds, nanos=since.microseconds * 1_000
    )


def transitions_pb(
    transitions: Iterable[TransitionTaken], actor: str | None = None
) -> list[workflow_pb2.Transition]:
    return [
        workflow_pb2.Transition(
            from_state=t.from_state, to_state=t.to_state, event=t.event or "", actor=actor or ""
        )
        for t in transitions
    ]


def step_error_status(error: Mapping[str, Any]) -> status_pb2.Status:
    """``Workflow.error``: why a step failed the instance, as the error it stands for."""
    reason = str(error.get("reason") or Reason.STEP_FAILED)
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
    *,
    family: Family | None = None,
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
    if record.error and (
        snapshot.status in (Status.FAILED, Status.CANCELLED) or fsm.is_delayed(snapshot)
    ):
        message.error.CopyFrom(step_error_status(record.error))
    if task is not None:
        message.pending_task.CopyFrom(task_pb(task))
    if record.expire_time is not None:
        message.expire_time.CopyFrom(timestamp(record.expire_time))
    if record.recursion_limit is not None:
        message.recursion_limit = record.recursion_limit
    message.run = record.run
    if record.pause is not None:
        message.paused = True
        message.pause.CopyFrom(pause_pb(record.pause))
    progress = record.fan_out
    if progress is not None and record.status is Status.RUNNING:
        message.fan_out.CopyFrom(
            workflow_pb2.FanOutProgress(
                total=progress.total,
                open=progress.open,
                completed=progress.completed,
                given_up=progress.given_up,
                revision=progress.revision,
            )
        )
    if family is not None:
        family_pb(message, family)
    return message


def family_pb(message: workflow_pb2.Workflow, family: Family) -> None:
    """A read's parent and children of the instance, into its message."""
    parent = family.parent
    if parent is not None:
        message.parent.CopyFrom(
            workflow_pb2.WorkflowParent(
                name=f"workflows/{parent.parent_id}",
                state=parent.parent_state,
                task_id=parent.parent_task,
            )
        )
    if family.open_children:
        message.children.CopyFrom(
            workflow_pb2.WorkflowChildren(
                open=family.open_children, names=[f"workflows/{c}" for c in family.children]
            )
        )


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
        priority=task.priority,
        concurrency_key=task.concurrency_key or "",
    )
    if task.status is TaskStatus.LEASED and task.lease_expire_time is not None:
        message.lease_expire_time.CopyFrom(timestamp(task.lease_expire_time))
        if with_lease and task.lease_token:
            message.lease_token = task.lease_token
    if task.heartbeat_details is not None:
        message.heartbeat_details.CopyFrom(dict_to_struct(task.heartbeat_details))
    if task.item_index is not None:
        message.item_index = task.item_index
    if task.result is not None:
        message.result.CopyFrom(dict_to_struct(task.result))
    if task.trace is not None:
        message.traceparent = task.trace.traceparent
        message.tracestate = task.trace.tracestate
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
        # Those a caller may send: task_failed is only ever fired by a task.
        events=[e for e in definition.events() if e != TASK_FAILED],
        create_time=timestamp(record.create_time),
        source_name=record.source_name,
        context_fields=[context_field_pb(field) for field in definition.context_fields.values()],
        search_fields=[
            definition_pb2.SearchField(
                name=f.name, type=f.kind.value, value=f.value.source, description=f.description
            )
            for f in definition.search_fields.values()
        ],
    )


def context_field_pb(field: ContextField) -> definition_pb2.ContextField:
    message = definition_pb2.ContextField(
        name=field.name,
        type=field.type.value,
        reducer=field.reducer.value,
        nullable=field.nullable,
    )
    _set(message.default_value, field.default_value())
    return message


def pause_pb(pause: Mapping[str, Any]) -> workflow_pb2.WorkflowPause:
    """A stored pause ({reason, actor, time}) as the API shows it."""
    reason, actor = str(pause.get("reason", "")), str(pause.get("actor", ""))
    message = workflow_pb2.WorkflowPause(reason=reason, actor=actor)
    since = pause.get("time")
    if since is not None:
        message.pause_time.CopyFrom(timestamp(datetime.fromisoformat(str(since))))
    return message
