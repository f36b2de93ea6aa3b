"""Conversions between protobuf messages and the service's plain Python values."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from google.protobuf import struct_pb2, timestamp_pb2
from google.rpc import status_pb2
from statewright.v1 import definition_pb2, workflow_pb2

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
from statewrightd.store.records import InstanceRecord

_MAX_SAFE_INT = 2**53
_isfinite = math.isfinite

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


def workflow_pb(record: InstanceRecord, definition: Definition) -> workflow_pb2.Workflow:
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
    )
    if record.error and snapshot.status in (Status.FAILED, Status.CANCELLED):
        message.error.CopyFrom(step_error_status(record.error))
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
