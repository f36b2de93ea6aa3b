"""What the command-line tool shows a person: diagnostics as plain JSON, steps as lines,
instances, histories and batches as tables.

Diagnostics are protobuf messages whose proto3 JSON form is made for machines (int64 as
strings, prefixed enum names, durations as ``"0.000026236s"``). ``message_dict`` walks the
message's descriptor instead, so a field added to the API later is shown the same way
without changing this module.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from google.protobuf import duration_pb2, timestamp_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2

from statewright.models import (
    BatchItemFailure,
    BatchOperation,
    Task,
    Transition,
    WatchEvent,
    WatchEventType,
    Workflow,
    status_error,
)
from statewright.values import JSONObject, JSONValue

__all__ = [
    "batch_line",
    "batch_table",
    "batches_table",
    "duration_text",
    "history_step",
    "history_table",
    "message_dict",
    "step_line",
    "time_text",
    "workflow_table",
    "workflows_table",
]

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
        "run": workflow["run"],
        "time": workflow["update_time"],
        "event": event.event,
        "transitions": [t.to_dict() for t in event.transitions],
        "status": workflow["status"],
        "state": workflow["state"],
        "context": workflow["context"],
        "error": workflow["error"],
        "input": event.input,
        "context_patch": list(event.context_patch),
    }


# -- tables: what get, list and history print unless asked for JSON ---------------------------


def _columns(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Left-aligned columns two spaces apart; the last one is not padded."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header) - 1)]
    lines = []
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def _short_time(value: datetime | None) -> str:
    """To the second, in UTC: a table's column, where milliseconds are noise."""
    if value is None:
        return "-"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _json_text(value: JSONValue) -> str:
    # A Struct's keys come in no set order (a protobuf map): sorted, a value reads the same
    # on every run.
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=True)


def workflow_table(workflow: Workflow) -> str:
    """One instance as ``field: value`` lines, its context last, one field a line."""
    rows: list[tuple[str, str]] = [
        ("name", workflow.name),
        ("definition", f"{workflow.definition} v{workflow.version}"),
        ("status", workflow.status.value + (" (PAUSED)" if workflow.paused else "")),
        ("state", workflow.state),
        ("revision", str(workflow.revision)),
        *([("run", str(workflow.run))] if workflow.run > 1 else []),
        ("accepts", ", ".join(workflow.accepted_events) or "-"),
        ("created", _short_time(workflow.create_time)),
        ("updated", _short_time(workflow.update_time)),
    ]
    if workflow.error is not None:
        error = workflow.error
        rows.append(("error", f"{error.code.name} {error.reason}: {error.message}".strip()))
    timers = [
        f"-> {t.target_state} at {_short_time(t.due_time)} (after {t.after})"
        for t in workflow.timers
    ]
    rows.append(("timers", "; ".join(timers) or "none"))
    pause = workflow.pause
    if pause is not None:
        why = f": {pause.reason}" if pause.reason else ""
        rows.append(("paused", f"by {pause.actor} at {_short_time(pause.pause_time)}{why}"))
    task = workflow.pending_task
    if task is not None:
        where = f"queue {task.queue}, {task.status.value}, attempt {task.attempt}"
        rows.append(("task", f"{task.name}: {where}"))
    fan = workflow.fan_out
    if fan is not None:
        counts = f"{fan.open} open, {fan.completed} completed, {fan.given_up} given up"
        rows.append(("fan-out", f"{fan.total} items: {counts}"))
    if workflow.parent is not None:
        rows.append(("parent", f"{workflow.parent.name} (state {workflow.parent.state})"))
    if workflow.children is not None:
        kids = workflow.children
        more = kids.open - len(kids.names)
        shown = ", ".join(kids.names) + (f" and {more} more" if more > 0 else "")
        rows.append(("children", f"{kids.open} open: {shown}"))
    width = max(len(key) for key, _ in rows) + 1
    lines = [f"{key + ':':<{width}}  {value}" for key, value in rows]
    lines.append("context:" if workflow.context else "context:".ljust(width) + "  {}")
    # By name: a Struct keeps no order of its own.
    lines += [f"  {key}: {_json_text(workflow.context[key])}" for key in sorted(workflow.context)]
    return "\n".join(lines)


def workflows_table(workflows: list[Workflow]) -> str:
    """One instance a row."""
    if not workflows:
        return "no workflows"
    rows = [
        (
            w.workflow_id,
            f"{w.definition} v{w.version}",
            w.status.value,
            w.state,
            str(w.revision),
            _short_time(w.update_time),
        )
        for w in workflows
    ]
    return _columns(("WORKFLOW", "DEFINITION", "STATUS", "STATE", "REV", "UPDATED"), rows)


def tasks_table(tasks: list[Task]) -> str:
    """One task a row."""
    if not tasks:
        return "no tasks"
    rows = [
        (
            t.name.removeprefix("workflows/"),
            t.queue,
            t.status.value,
            str(t.attempt),
            str(t.priority),
            t.concurrency_key or "-",
            _short_time(t.schedule_time),
        )
        for t in tasks
    ]
    heads = ("TASK", "QUEUE", "STATUS", "ATTEMPT", "PRIORITY", "KEY", "SCHEDULED")
    return _columns(heads, rows)


def count_table(total: int, by_status: Sequence[tuple[str, int]]) -> str:
    rows = [(status, str(n)) for status, n in by_status]
    return _columns(("STATUS", "COUNT"), [*rows, ("total", str(total))])


def history_table(steps: list[WatchEvent]) -> str:
    """One saved step a row: what caused it, what it did, where it left the instance."""
    rows = [
        (
            str(step.revision),
            _short_time(step.workflow.update_time),
            step.event or ("(start)" if step.revision == 1 else "(step)"),
            _chain(step.transitions) or "-",
            step.workflow.status.value,
            step.workflow.state,
            _clipped("-" if step.input is None else _json_text(step.input)),
            _clipped(patch_text(step.context_patch) or "-"),
        )
        for step in steps
    ]
    return _columns(
        ("REV", "TIME", "EVENT", "TRANSITIONS", "STATUS", "STATE", "INPUT", "CONTEXT CHANGE"), rows
    )


# A table cell's longest text: a large input or patch would push every row off the
# screen; `history -o json` has them whole.
_CELL = 60


def _clipped(text: str) -> str:
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


def patch_text(patch: Sequence[JSONObject]) -> str:
    """A context patch in brief: ``/path=value`` set, ``-/path`` removed, moves as arrows."""
    parts = []
    for op in patch:
        kind, path = op.get("op"), str(op.get("path"))
        if kind in ("add", "replace"):
            parts.append(f"{path}={_json_text(op.get('value'))}")
        elif kind == "remove":
            parts.append(f"-{path}")
        else:  # move, copy
            parts.append(f"{op.get('from')} {'->' if kind == 'move' else '=>'} {path}")
    return ", ".join(parts)


def _operation_text(batch: BatchOperation) -> str:
    action = batch.action
    if action is None:
        return "-"
    given = {key: value for key, value in action.to_dict().items() if value not in ("", {}, False)}
    return action.kind + (f" {_json_text(given)}" if given else "")


def batch_line(batch: BatchOperation) -> str:
    """A batch's progress in one line: ``batches/b1 RUNNING: 40 of 100 done, 2 failed,
    58 left``."""
    counts = f"{batch.done} of {batch.matched} done, {batch.failed} failed"
    left = f", {batch.remaining} left" if not batch.finished else ""
    return f"{batch.name or '(dry run)'} {batch.state.value}: {counts}{left}"


def batch_table(
    batch: BatchOperation, failures: Sequence[BatchItemFailure] = (), next_token: str = ""
) -> str:
    """One batch as ``field: value`` lines, then the failures shown, one a line (with
    ``next_token``, the token of the page after them)."""
    rows: list[tuple[str, str]] = [
        ("name", batch.name or "(dry run: not saved)"),
        ("operation", _operation_text(batch)),
        ("definition", batch.definition or "(every definition)"),
        ("filter", batch.filter or "(every instance)"),
        *([("id prefix", batch.id_prefix)] if batch.id_prefix else []),
        ("reason", batch.reason),
        ("rate", f"{batch.rate:g}/s"),
        ("state", batch.state.value),
        ("progress", batch_line(batch).partition(": ")[2]),
        ("started by", batch.actor or "-"),
        ("created", _short_time(batch.create_time)),
        ("updated", _short_time(batch.update_time)),
        ("ended", _short_time(batch.end_time)),
    ]
    if batch.cancel_reason:
        rows.append(("cancelled", batch.cancel_reason))
    width = max(len(key) for key, _ in rows) + 1
    lines = [f"{key + ':':<{width}}  {value}" for key, value in rows]
    if failures:
        lines.append("failures:")
        lines += [f"  {f.workflow_id}: {f.code} {f.reason}: {f.message}".rstrip() for f in failures]
        if next_token:
            lines.append(f"  more: --failures-page-token {next_token}")
    return "\n".join(lines)


def batches_table(batches: list[BatchOperation]) -> str:
    """One batch a row."""
    if not batches:
        return "no batches"
    rows = [
        (
            b.batch_id,
            _operation_text(b),
            b.state.value,
            str(b.matched),
            str(b.done),
            str(b.failed),
            _short_time(b.create_time),
        )
        for b in batches
    ]
    return _columns(("BATCH", "OPERATION", "STATE", "MATCHED", "DONE", "FAILED", "CREATED"), rows)
