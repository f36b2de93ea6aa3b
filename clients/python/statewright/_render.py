"""What the command-line tool shows a person: diagnostics as plain JSON, steps as lines.

Diagnostics are protobuf messages whose proto3 JSON form is made for machines (int64 as
strings, prefixed enum names, durations as ``"0.000026236s"``). ``message_dict`` walks the
message's descriptor instead, so a field added to the API later is shown the same way
without changing this module.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2

from statewright.models import Transition, WatchEvent, WatchEventType, Workflow, status_error
from statewright.values import JSONObject, JSONValue

__all__ = ["duration_text", "history_step", "message_dict", "step_line", "time_text"]

_UPPER = re.compile(r"(?<!^)(?=[A-Z])")


def duration_text(seconds: float) -> str:
    """A duration in the unit a person reads it in: ``26 µs``, ``1.2 s``, ``3 min 4 s``."""
    if seconds < 0:
        return "-" + duration_text(-seconds)
    if seconds == 0:
        return "0 s"
    for unit, size in (("ns", 1e-9), ("µs", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        number = _significant(seconds / size)
        if float(number) < (60 if unit == "s" else 1000):
            return f"{number} {unit}"
    total = round(seconds)
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def _significant(value: float) -> str:
    # One decimal below ten (1.2 s), whole numbers above (26 µs, 430 ms).
    if value < 10:
        return f"{value:.1f}".removesuffix(".0")
    return str(round(value))


def time_text(value: datetime | None) -> str | None:
    """RFC 3339 in UTC to the millisecond, as the other commands print times."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def message_dict(message: Message) -> JSONObject:
    """A message as JSON for people: numbers as numbers, enums without their prefix,
    durations in readable units, timestamps as RFC 3339, statuses as errors. Unset
    message fields are left out; scalars are shown even when zero."""
    out: JSONObject = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        enum = field.enum_type
        names = (
            None
            if enum is None
            else _enum_names(enum.name, [(v.number, v.name) for v in enum.values])
        )
        if field.is_repeated:
            out[field.name] = [_value(names, item) for item in value]
        elif field.has_presence and not message.HasField(field.name):
            continue
        else:
            out[field.name] = _value(names, value)
    return out


def _enum_names(enum: str, values: list[tuple[int, str]]) -> dict[int, str]:
    # buf's ENUM_VALUE_PREFIX rule: values start with the enum's name in UPPER_SNAKE.
    prefix = _UPPER.sub("_", enum).upper() + "_"
    return {number: name.removeprefix(prefix) for number, name in values}


def _value(enum: dict[int, str] | None, value: object) -> JSONValue:
    if enum is not None:
        assert isinstance(value, int)
        return enum.get(value, str(value))  # a number unknown here: a newer server's value
    if isinstance(value, duration_pb2.Duration):
        return duration_text(value.seconds + value.nanos / 1e9)
    if isinstance(value, timestamp_pb2.Timestamp):
        return time_text(value.ToDatetime(tzinfo=UTC))
    if isinstance(value, status_pb2.Status):
        error = status_error(value)
        return {
            "code": error.code.name,
            "reason": error.reason,
            "message": error.message,
            "metadata": dict(error.metadata),
        }
    if isinstance(value, Message):
        return message_dict(value)
    if isinstance(value, float):
        return float(f"{value:.4g}")
    assert isinstance(value, str | int | bool)
    return value


def _chain(transitions: tuple[Transition, ...]) -> str:
    """``a -approve-> b -> c``: each transition's event on its arrow."""
    text = ""
    last: str | None = None
    for t in transitions:
        if t.from_state != last:
            text += (", " if text else "") + t.from_state
        text += f" -{t.event}-> " if t.event else " -> "
        text += t.to_state
        last = t.to_state
    return text


def _where(workflow: Workflow) -> str:
    text = f"{workflow.status.value} in {workflow.state}"
    if workflow.accepted_events:
        text += f", accepts {', '.join(workflow.accepted_events)}"
    if workflow.error is not None:
        error = workflow.error
        text += f", error {error.reason or error.code.name}: {error.message}"
    return text


def step_line(event: WatchEvent) -> str:
    """One watch or history message as one line a person reads."""
    workflow = event.workflow
    head = f"r{event.revision} {time_text(workflow.update_time) or '-'}"
    if event.type is WatchEventType.CURRENT:
        return f"{head} current: {_where(workflow)}"
    label = event.event or ("start" if event.revision == 1 else "step")
    chain = _chain(event.transitions) or "no transition"
    return f"{head} {label}: {chain} => {_where(workflow)}"


def history_step(event: WatchEvent) -> JSONObject:
    """One saved step for ``statewright history``: what caused it, what it did, the result."""
    workflow = event.workflow.to_dict()
    return {
        "revision": event.revision,
        "time": workflow["update_time"],
        "event": event.event,
        "transitions": [t.to_dict() for t in event.transitions],
        "status": workflow["status"],
        "state": workflow["state"],
        "context": workflow["context"],
        "error": workflow["error"],
    }
