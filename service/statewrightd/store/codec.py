"""Value checks and encodings shared by both backends.

Everything is validated before any SQL runs, so an unsupported value raises
``SerializationError`` with nothing written, and both backends accept exactly the same
values (PostgreSQL jsonb would reject some, such as NUL characters, that SQLite accepts).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from statewrightd.domain import STATUSES
from statewrightd.errors import InvalidArgument, SerializationError
from statewrightd.reasons import Reason
from statewrightd.store.records import (
    Create,
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    Operation,
    RequestRecord,
    Save,
    TaskChange,
    TaskRecord,
    TimerChange,
)

MAX_DEPTH = 64
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def encode_value_page_token(
    value: float | str,
    workflow_id: str,
    definition: str | None,
    status: str | None,
    *,
    order: str,
    id_prefix: str | None = None,
) -> str:
    """A token of a listing ordered by a search field: its last (value, workflow id)."""
    return _position_token(
        "v1", value, workflow_id, _filter_key(definition, status, order, id_prefix)
    )


def decode_value_page_token(
    token: str,
    definition: str | None,
    status: str | None,
    *,
    order: str,
    id_prefix: str | None = None,
) -> tuple[float | str, str] | None:
    if token == "":
        return None
    key = _filter_key(definition, status, order, id_prefix)
    value, workflow_id = _position_of(token, "v1", key)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise _bad_token("page_token is malformed")
    return value, workflow_id


def _position_token(tag: str, position: object, workflow_id: str, key: str) -> str:
    """A page token: where the next page starts (the last row's position and workflow
    id), bound to the listing by ``key`` (``_filter_key``)."""
    raw = json.dumps([tag, position, workflow_id, key], ensure_ascii=False)
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _position_of(token: str, tag: str, key: str) -> tuple[Any, str]:
    """The position (unchecked) and workflow id of a token of ``tag`` issued for ``key``."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        found, position, workflow_id, issued_for = json.loads(raw)
    except (ValueError, binascii.Error, UnicodeDecodeError, TypeError):
        raise _bad_token("page_token is malformed") from None
    if found != tag or not isinstance(workflow_id, str):
        raise _bad_token("page_token is malformed")
    if issued_for != key:
        raise _bad_token("page_token was issued for different filters")
    return position, workflow_id


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def check_text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise SerializationError(f"{where}: expected a string, got {type(value).__name__}")
    problem = _text_problem(value)
    if problem is not None:
        raise SerializationError(f"{where}: {problem}")
    return value


def _text_problem(value: str) -> str | None:
    if "\x00" in value:
        return "strings may not contain NUL characters"
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"string is not valid Unicode ({exc.reason})"
    return None


def check_json(value: object, where: str) -> None:
    """Accept only values that survive a JSON round trip unchanged on both backends."""
    found = _json_problem(value, 0)
    if found is not None:
        path, problem = found
        raise SerializationError(f"{where}{path}: {problem}")


def _json_problem(value: object, depth: int) -> tuple[str, str] | None:
    """The first element that would not survive, as (its path below ``value``, why).

    Every step's context goes through here, so the path is built only on the way out of
    a failure: a good value costs no string formatting.
    """
    if depth > MAX_DEPTH:
        return "", f"nested deeper than {MAX_DEPTH} levels"
    # bool before int: bool is an int subclass but always representable.
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            return None
        return "", f"integer {value} is outside the 64-bit range"
    if isinstance(value, float):
        return None if math.isfinite(value) else ("", f"{value!r} is not a finite number")
    if isinstance(value, str):
        problem = _text_problem(value)
        return None if problem is None else ("", problem)
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _json_problem(item, depth + 1)
            if found is not None:
                return f"[{i}]{found[0]}", found[1]
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return "", f"map key {key!r} is not a string"
            problem = _text_problem(key)
            if problem is not None:
                return " key", problem
            found = _json_problem(item, depth + 1)
            if found is not None:
                return f".{key}{found[0]}", found[1]
        return None
    # Tuples, sets, bytes, datetimes and arbitrary objects would not read back as written.
    return "", f"unsupported value of type {type(value).__name__}"


_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: object, where: str) -> str:
    check_json(value, where)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_optional(value: object, where: str) -> str | None:
    return None if value is None else dumps(value, where)


def loads(text: str | bytes) -> Any:
    return json.loads(text)


def check_time(value: object, where: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise SerializationError(f"{where}: expected a timezone-aware datetime")
    return value.astimezone(UTC)


def to_micros(value: datetime) -> int:
    """Integer microseconds since the epoch: exact, and sorts correctly in SQLite."""
    return (value - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def _check_int(value: object, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SerializationError(f"{where}: expected an integer")
    if not minimum <= value <= _INT64_MAX:
        raise SerializationError(f"{where}: {value} is out of range")
    return value


@dataclass(frozen=True, slots=True)
class EncodedOp:
    """An operation checked and flattened to SQL parameters (JSON as text, times as UTC)."""

    op: Operation
    params: dict[str, Any]


def encode_instance(rec: InstanceRecord) -> dict[str, Any]:
    w = f"workflow {rec.workflow_id!r}"
    if rec.status not in STATUSES:
        raise SerializationError(f"{w}: unknown status {rec.status!r}")
    return {
        "workflow_id": check_text(rec.workflow_id, f"{w} id"),
        "definition": check_text(rec.definition, f"{w} definition"),
        "version": _check_int(rec.version, f"{w} version", 1),
        "state": check_text(rec.state, f"{w} state"),
        "status": rec.status,
        "context": dumps(_require_dict(rec.context, f"{w} context"), f"{w} context"),
        "revision": _check_int(rec.revision, f"{w} revision", 1),
        "error": dumps_optional(rec.error, f"{w} error"),
        "create_time": check_time(rec.create_time, f"{w} create_time"),
        "update_time": check_time(rec.update_time, f"{w} update_time"),
        "expire_time": None
        if rec.expire_time is None
        else check_time(rec.expire_time, f"{w} expire_time"),
        "recursion_limit": None
        if rec.recursion_limit is None
        else _check_int(rec.recursion_limit, f"{w} recursion_limit", 1),
        "run": _check_int(rec.run, f"{w} run", 1),
        "pause": dumps_optional(rec.pause, f"{w} pause"),
    }


def _require_dict(value: object, where: str) -> object:
    if not isinstance(value, dict):
        raise SerializationError(f"{where}: expected a map, got {type(value).__name__}")
    return value


def _encode_history(h: HistoryRecord, instance_context: object, encoded: str) -> dict[str, Any]:
    """``encoded`` is ``instance_context`` as JSON. The runtime gives a step's history row
    the very dict of its instance row, so it is serialized once; only identity is trusted
    (``==`` would equate 1 and 1.0, which serialize differently).

    Every row keeps its context, a finishing step's too: a repair (retry, reset) steps a
    finished instance again, after which its instance row holds another context."""
    w = f"history {h.workflow_id!r}@{h.revision}"
    if h.status not in STATUSES:
        raise SerializationError(f"{w}: unknown status {h.status!r}")
    if not isinstance(h.transitions, list):
        raise SerializationError(f"{w}: transitions must be a list")
    if h.context is instance_context:
        context = encoded
    else:
        context = dumps(_require_dict(h.context, f"{w} context"), f"{w} context")
    return {
        "h_event": None if h.event is None else check_text(h.event, f"{w} event"),
        "h_transitions": dumps(encode_transitions(h.transitions), f"{w} transitions"),
        "h_state": check_text(h.state, f"{w} state"),
        "h_status": h.status,
        "h_context": context,
        "h_error": dumps_optional(h.error, f"{w} error"),
        "h_time": check_time(h.time, f"{w} time"),
        "h_timers": dumps_optional(h.timers, f"{w} timers"),
        "h_actor": None if h.actor is None else check_text(h.actor, f"{w} actor"),
        "h_input": dumps_optional(h.input, f"{w} input"),
    }


# A step's transitions in one string, "from>to@event from>to": state and event names
# cannot hold these separators, and one jsonb string costs a third of the bytes of a list
# of {"from", "to", "event"} maps. A list that does not fit the form is stored as it is;
# readers take either.
_TRANSITION_KEYS = frozenset({"from", "to", "event"})
_SEPARATORS = frozenset(" >@")


def _compact_name(value: object) -> bool:
    return isinstance(value, str) and value != "" and _SEPARATORS.isdisjoint(value)


def encode_transitions(transitions: list[Any]) -> str | list[Any]:
    parts: list[str] = []
    for t in transitions:
        if not isinstance(t, dict) or not _TRANSITION_KEYS.issuperset(t):
            return transitions
        source, target, event = t.get("from"), t.get("to"), t.get("event")
        if not (_compact_name(source) and _compact_name(target)):
            return transitions
        if event is None:
            parts.append(f"{source}>{target}")
        elif _compact_name(event):
            parts.append(f"{source}>{target}@{event}")
        else:
            return transitions
    return " ".join(parts)


def decode_transitions(stored: Any) -> list[dict[str, Any]]:
    """A history row's transitions as ``{"from", "to", "event"}`` maps, from either form."""
    if not isinstance(stored, str):
        return list(stored)
    out: list[dict[str, Any]] = []
    for part in stored.split():
        move, _, event = part.partition("@")
        source, _, target = move.partition(">")
        out.append({"from": source, "to": target, "event": event or None})
    return out


def _encode_timers(change: TimerChange, target: InstanceRecord) -> dict[str, Any]:
    """A step's timer work as parameters: ``t_arm`` is one JSON document of the timers
    to insert (``rows.TIMER`` order after the workflow id), or None."""
    w = f"workflow {target.workflow_id!r}"
    armed = []
    for timer in change.arm:
        if timer.workflow_id != target.workflow_id or timer.revision != target.revision:
            raise SerializationError(
                f"{w}: a timer is armed by the step that saves it",
                reason=Reason.INCONSISTENT_OPERATION,
            )
        due = check_time(timer.due_time, f"{w} timer due_time")
        armed.append(
            {
                "timer_id": check_text(timer.timer_id, f"{w} timer id"),
                "revision": timer.revision,
                "transition": _check_int(timer.transition, f"{w} timer transition", 0),
                "target": check_text(timer.target, f"{w} timer target"),
                "after": check_text(timer.after, f"{w} timer after"),
                "due_time": due.isoformat(),
                "due_micros": to_micros(due),
                "trace_parent": None if timer.trace is None else timer.trace.traceparent,
                "trace_state": None if timer.trace is None else timer.trace.tracestate or None,
            }
        )
    fired = change.fired
    return {
        "t_disarm": change.disarm,
        "t_arm": dumps(armed, f"{w} timers") if armed else None,
        "t_fired": None if fired is None else check_text(fired, f"{w} fired timer"),
    }


def _encode_request(r: RequestRecord | None) -> dict[str, Any]:
    """``r_cutoff``: a recorded request id older than this is out of its window, free to
    be recorded again (a record that old answers no retry)."""
    if r is None:
        return {
            "request_id": None,
            "r_method": None,
            "r_fingerprint": None,
            "r_response": None,
            "r_time": None,
            "r_cutoff": None,
        }
    w = f"request {r.request_id!r}"
    if not isinstance(r.response, bytes):
        raise SerializationError(f"{w}: response must be bytes")
    return {
        "request_id": check_text(r.request_id, f"{w} id"),
        "r_method": check_text(r.method, f"{w} method"),
        "r_fingerprint": check_text(r.fingerprint, f"{w} fingerprint"),
        "r_response": r.response,
        "r_time": check_time(r.create_time, f"{w} create_time"),
        "r_cutoff": NEVER if r.live_after is None else check_time(r.live_after, f"{w} live_after"),
    }


# The cutoff when request records never expire: older than any record.
NEVER = datetime(1970, 1, 1, tzinfo=UTC)


def encode_task(task: TaskRecord) -> dict[str, Any]:
    """A task row as plain JSON values keyed by its columns (times as ISO 8601 text and
    integer microseconds both, for the two backends), checked."""
    w = f"task {task.workflow_id!r}/{task.task_id!r}"

    def when(value: datetime | None, name: str) -> str | None:
        return None if value is None else check_time(value, f"{w} {name}").isoformat()

    def micros(value: datetime | None) -> int | None:
        return None if value is None else to_micros(value)

    check_json(task.input, f"{w} input")
    check_json(task.retry, f"{w} retry")
    for name, value in (
        ("heartbeat_details", task.heartbeat_details),
        ("last_error", task.last_error),
        ("result", task.result),
    ):
        if value is not None:
            check_json(value, f"{w} {name}")
    return {
        "workflow_id": check_text(task.workflow_id, f"{w} workflow id"),
        "task_id": check_text(task.task_id, f"{w} id"),
        "revision": _check_int(task.revision, f"{w} revision", 1),
        "state": check_text(task.state, f"{w} state"),
        "queue": check_text(task.queue, f"{w} queue"),
        "input": task.input,
        "status": str(task.status),
        "attempt": _check_int(task.attempt, f"{w} attempt", 0),
        "max_attempts": _check_int(task.max_attempts, f"{w} max_attempts", 1),
        "lease_token": task.lease_token,
        "lease_expire_time": when(task.lease_expire_time, "lease_expire_time"),
        "attempt_start_time": when(task.attempt_start_time, "attempt_start_time"),
        "available_time": when(task.available_time, "available_time"),
        "schedule_time": when(task.schedule_time, "schedule_time"),
        "deadline": when(task.deadline, "deadline"),
        "start_to_close_ms": round(task.start_to_close * 1000),
        "heartbeat_ms": None if task.heartbeat is None else round(task.heartbeat * 1000),
        "retry": task.retry,
        "heartbeat_details": task.heartbeat_details,
        "last_error": task.last_error,
        "last_request_id": task.last_request_id,
        "update_time": when(task.update_time, "update_time"),
        "priority": _check_int(task.priority, f"{w} priority", 1),
        "concurrency_key": task.concurrency_key,
        "item_index": task.item_index,
        "result": task.result,
        "trace_parent": None if task.trace is None else task.trace.traceparent,
        "trace_state": None if task.trace is None else task.trace.tracestate or None,
        # SQLite keeps times as integer microseconds: the same values, its way.
        "us": {
            "lease_expire_time": micros(task.lease_expire_time),
            "attempt_start_time": micros(task.attempt_start_time),
            "available_time": micros(task.available_time),
            "schedule_time": micros(task.schedule_time),
            "deadline": micros(task.deadline),
            "update_time": micros(task.update_time),
        },
    }


def _encode_tasks(change: TaskChange, target: InstanceRecord) -> dict[str, Any]:
    """A step's task work as parameters (``k_*``)."""
    w = f"workflow {target.workflow_id!r}"
    # The task a step schedules, or the items of the fan-out it enters: one JSON array.
    tasks = ([] if change.schedule is None else [change.schedule]) + list(change.items)
    for task in tasks:
        if task.workflow_id != target.workflow_id or task.revision != target.revision:
            raise SerializationError(
                f"{w}: a task is scheduled by the step that saves it",
                reason=Reason.INCONSISTENT_OPERATION,
            )
    # encode_task checked every value it keeps (its JSON ones included): the array is
    # written as it is, not checked a second time (a fan-out has thousands of them).
    encoded = [encode_task(t) for t in tasks]
    schedule = _JSON.encode(encoded) if tasks else None
    finish, release = change.finish, change.release
    return {
        "k_schedule": schedule,
        "k_release_id": None if release is None else check_text(release.task_id, f"{w} item"),
        "k_release_time": None if release is None else release.now,
        "k_release_deadline": None if release is None else release.deadline,
        "k_result": None if finish is None else dumps_optional(finish.result, f"{w} result"),
        "k_cancel": change.cancel,
        "k_finish_id": None if finish is None else check_text(finish.task_id, f"{w} task id"),
        "k_finish_status": None if finish is None else str(finish.status),
        "k_fence_token": None if finish is None else finish.lease_token,
        "k_fence_attempt": None if finish is None else finish.attempt,
        "k_fence_leased": False if finish is None else finish.leased,
        "k_fence_seen": None if finish is None else finish.seen,
        "k_error": None if finish is None else dumps_optional(finish.last_error, f"{w} error"),
    }


def _inconsistency(op: Operation, target: InstanceRecord) -> str | None:
    """What makes ``op`` contradict itself, if anything: a defect of whoever built it."""
    if op.history.workflow_id != target.workflow_id or op.history.revision != target.revision:
        return f"the history row must belong to revision {target.revision}"
    if op.request is not None and op.request.workflow_id != target.workflow_id:
        return "the request record names another workflow"
    if isinstance(op, Save):
        expected = op.expected_revision
        if target.revision != expected + 1:
            return f"a save moves revision {expected} to {expected + 1}, not {target.revision}"
        return None
    if target.revision != 1:
        return "a new instance starts at revision 1"
    if op.timers.disarm or op.timers.fired:
        return "a new instance has no timers to disarm or fire"
    if op.tasks.cancel or op.tasks.finish or op.tasks.release:
        return "a new instance has no task to cancel, finish or release"
    return None


def encode_op(op: Operation) -> EncodedOp:
    """Check an operation completely; raise ``SerializationError`` before any write.

    ``request_window``: how long a request record answers retries (None: for ever)."""
    target = op.record if isinstance(op, Create) else op.new
    params = encode_instance(target)
    wid = target.workflow_id
    if isinstance(op, Save):
        expected = _check_int(op.expected_revision, f"workflow {wid!r} expected_revision", 1)
        params["expected"] = expected
    problem = _inconsistency(op, target)
    if problem is not None:
        raise SerializationError(
            f"workflow {wid!r}: {problem}", reason=Reason.INCONSISTENT_OPERATION
        )
    params.update(_encode_history(op.history, target.context, params["context"]))
    params.update(_encode_request(op.request))
    if op.timers:
        params.update(_encode_timers(op.timers, target))
    if op.tasks:
        params.update(_encode_tasks(op.tasks, target))
    return EncodedOp(op=op, params=params)


def encode_definition(rec: DefinitionRecord) -> tuple[str, int, str, str, str, datetime]:
    """A definition's columns (``rows.DEFINITION`` order), checked; the time in UTC."""
    if isinstance(rec.version, bool) or not isinstance(rec.version, int) or rec.version < 1:
        raise SerializationError("definition version must be a positive integer")
    return (
        check_text(rec.name, "definition name"),
        rec.version,
        check_text(rec.source, "definition source"),
        check_text(rec.digest, "definition digest"),
        check_text(rec.source_name, "definition source_name"),
        check_time(rec.create_time, "definition create_time"),
    )


# Page tokens are opaque to clients but bound to the filters they were issued for, so a
# token replayed with other filters is rejected instead of silently skipping rows.


def _filter_key(
    definition: str | None, status: str | None, order: str = "", id_prefix: str | None = None
) -> str:
    # The default listing's key is the one tokens had before orders and prefixes existed,
    # so that a token issued by an older server still continues its listing.
    raw = f"{definition or ''}\x1f{status or ''}"
    if order or id_prefix:
        raw += f"\x1f{order}\x1f{id_prefix or ''}"
    return hashlib.sha256(raw.encode()).hexdigest()[:12]


def encode_page_token(
    after_time: datetime,
    workflow_id: str,
    definition: str | None,
    status: str | None,
    *,
    order: str = "",
    id_prefix: str | None = None,
) -> str:
    key = _filter_key(definition, status, order, id_prefix)
    raw = json.dumps(["i1", to_micros(after_time), workflow_id, key])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_page_token(
    token: str,
    definition: str | None,
    status: str | None,
    *,
    order: str = "",
    id_prefix: str | None = None,
) -> tuple[datetime, str] | None:
    """The (time, workflow id) past which the next page starts, in the listing's order
    (None: the first page). ``order`` is the order's spelling, empty for the default."""
    if token == "":
        return None
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        tag, micros, workflow_id, key = json.loads(raw)
    except (ValueError, binascii.Error, UnicodeDecodeError, TypeError):
        raise _bad_token("page_token is malformed") from None
    if tag != "i1" or not isinstance(micros, int) or not isinstance(workflow_id, str):
        raise _bad_token("page_token is malformed")
    if key != _filter_key(definition, status, order, id_prefix):
        raise _bad_token("page_token was issued for different filters")
    return from_micros(micros), workflow_id


def encode_keys_page_token(
    values: list[Any],
    workflow_id: str,
    definition: str | None,
    status: str | None,
    *,
    order: str,
    id_prefix: str | None = None,
) -> str:
    """A token of a listing ordered by several keys: its last row's value of each key (a
    time in microseconds) and workflow id."""
    return _position_token(
        "k1", values, workflow_id, _filter_key(definition, status, order, id_prefix)
    )


def decode_keys_page_token(
    token: str,
    definition: str | None,
    status: str | None,
    *,
    order: str,
    kinds: Sequence[str],
    id_prefix: str | None = None,
) -> tuple[list[Any], str] | None:
    """The values and workflow id past which the next page starts (None: the first page),
    one value of each of ``kinds`` ("time": a datetime, "text", or "number")."""
    if token == "":
        return None
    key = _filter_key(definition, status, order, id_prefix)
    values, workflow_id = _position_of(token, "k1", key)
    if (
        not isinstance(values, list)
        or len(values) != len(kinds)
        or not all(_is_kind(v, k) for v, k in zip(values, kinds, strict=True))
    ):
        raise _bad_token("page_token is malformed")
    try:
        position = [
            from_micros(v) if k == "time" else v for v, k in zip(values, kinds, strict=True)
        ]
    except (OverflowError, ValueError):
        raise _bad_token("page_token is malformed") from None
    return position, workflow_id


def _is_kind(value: object, kind: str) -> bool:
    if isinstance(value, bool):
        return False
    if kind == "time":
        return isinstance(value, int)
    if kind == "text":
        return isinstance(value, str)
    return isinstance(value, int | float)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def encode_task_page_token(after_time: datetime, workflow_id: str, task_id: str, key: str) -> str:
    raw = json.dumps(["t1", to_micros(after_time), workflow_id, task_id, key])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_task_page_token(token: str, key: str) -> tuple[datetime, str, str]:
    """Where a task listing's next page starts: after (schedule time, workflow, task)."""
    if token == "":
        return _EPOCH, "", ""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        tag, micros, workflow_id, task_id, issued_for = json.loads(raw)
    except (ValueError, binascii.Error, UnicodeDecodeError, TypeError):
        raise _bad_token("page_token is malformed") from None
    if tag != "t1" or not isinstance(micros, int):
        raise _bad_token("page_token is malformed")
    if issued_for != key:
        raise _bad_token("page_token was issued for different filters")
    return from_micros(micros), str(workflow_id), str(task_id)


def _bad_token(message: str) -> InvalidArgument:
    return InvalidArgument(
        message, reason=Reason.INVALID_PAGE_TOKEN, metadata={"field": "page_token"}
    )


DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000


def clamp_page_size(page_size: int) -> int:
    if page_size < 0:
        raise InvalidArgument("page_size must not be negative", reason=Reason.INVALID_PAGE_SIZE)
    if page_size == 0:
        return DEFAULT_PAGE_SIZE
    return min(page_size, MAX_PAGE_SIZE)


def check_status_filter(status: str | None) -> None:
    if status is not None and status not in STATUSES:
        raise InvalidArgument(f"unknown status filter {status!r}", reason=Reason.INVALID_FILTER)
