"""Conversions between the engine's snapshots and the store's records."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from types import MappingProxyType
from typing import Any

from statewrightd.definitions.model import FINISH
from statewrightd.domain import Status
from statewrightd.engine.model import Pause, Snapshot, StepError, StepResult, TransitionTaken
from statewrightd.store.records import HistoryRecord, InstanceRecord, TimerRecord
from statewrightd.store.repository import Repository


def error_to_dict(error: StepError | None) -> dict[str, Any] | None:
    if error is None:
        return None
    return {"reason": error.reason, "message": error.message, "metadata": dict(error.metadata)}


def error_from_dict(data: Mapping[str, Any] | None) -> StepError | None:
    if not data:
        return None
    return StepError(
        reason=str(data.get("reason", "")),
        message=str(data.get("message", "")),
        metadata=MappingProxyType(
            {str(k): str(v) for k, v in dict(data.get("metadata") or {}).items()}
        ),
    )


def pause_to_dict(pause: Pause | None, saved: datetime) -> dict[str, Any] | None:
    """A pause as the store keeps it; a pause step's own (no time yet) at its save time."""
    if pause is None:
        return None
    since = saved if pause.since is None else pause.since
    return {"reason": pause.reason, "actor": pause.actor, "time": since.isoformat()}


def pause_from_dict(data: Mapping[str, Any] | None) -> Pause | None:
    if not data:
        return None
    since = data.get("time")
    return Pause(
        reason=str(data.get("reason", "")),
        actor=str(data.get("actor", "")),
        since=None if since is None else datetime.fromisoformat(str(since)),
    )


def snapshot_of(record: InstanceRecord) -> Snapshot:
    return Snapshot(
        workflow_id=record.workflow_id,
        definition=record.definition,
        version=record.version,
        state=record.state,
        status=Status(record.status),
        context=record.context,
        revision=record.revision,
        error=error_from_dict(record.error),
        fan_out=record.fan_out,
        recursion_limit=record.recursion_limit,
        pause=pause_from_dict(record.pause),
    )


def instance_record(
    snapshot: Snapshot,
    create_time: datetime,
    update_time: datetime,
    expire_time: datetime | None = None,
    run: int = 1,
) -> InstanceRecord:
    return InstanceRecord(
        workflow_id=snapshot.workflow_id,
        definition=snapshot.definition,
        version=snapshot.version,
        state=snapshot.state,
        status=snapshot.status,
        context=dict(snapshot.context),
        revision=snapshot.revision,
        error=error_to_dict(snapshot.error),
        create_time=create_time,
        update_time=update_time,
        expire_time=expire_time,
        fan_out=snapshot.fan_out,
        recursion_limit=snapshot.recursion_limit,
        run=run,
        pause=pause_to_dict(snapshot.pause, update_time),
    )


def transitions_to_dicts(transitions: tuple[TransitionTaken, ...]) -> list[dict[str, Any]]:
    return [{"from": t.from_state, "to": t.to_state, "event": t.event} for t in transitions]


def transitions_from_dicts(rows: list[dict[str, Any]]) -> tuple[TransitionTaken, ...]:
    return tuple(TransitionTaken(str(r["from"]), str(r["to"]), r.get("event")) for r in rows)


def history_record(
    result: StepResult,
    event: str | None,
    time: datetime,
    of: InstanceRecord | None = None,
    armed: tuple[TimerRecord, ...] = (),
    *,
    actor: str | None = None,
    taken: dict[str, Any] | None = None,
) -> HistoryRecord:
    """The history row of a step; ``of``, the step's instance row, lends it its context
    dict so the store serializes that context once for both rows. ``armed``: the timers
    the step armed."""
    snap = result.snapshot
    return HistoryRecord(
        workflow_id=snap.workflow_id,
        revision=snap.revision,
        event=event,
        transitions=transitions_to_dicts(result.transitions),
        state=snap.state,
        status=snap.status,
        context=of.context if of is not None else dict(snap.context),
        error=error_to_dict(snap.error),
        time=time,
        timers=[timer_to_dict(t) for t in armed] if armed else None,
        actor=actor,
        input=taken,
        run=of.run if of is not None else 1,
    )


def timer_to_dict(timer: TimerRecord) -> dict[str, Any]:
    return {
        "timer_id": timer.timer_id,
        "transition": timer.transition,
        "target": timer.target,
        "after": timer.after,
        "due_time": timer.due_time.isoformat(),
    }


def timers_from_dicts(
    workflow_id: str, revision: int, rows: list[dict[str, Any]] | None
) -> tuple[TimerRecord, ...]:
    """The timers a history row says its step armed."""
    return tuple(
        TimerRecord(
            workflow_id=workflow_id,
            timer_id=str(r["timer_id"]),
            revision=revision,
            transition=int(r["transition"]),
            target=str(r["target"]),
            after=str(r["after"]),
            due_time=datetime.fromisoformat(str(r["due_time"])),
        )
        for r in rows or ()
    )


def record_at(history: HistoryRecord, current: InstanceRecord) -> InstanceRecord:
    """The instance as it was at a history row's revision."""
    return InstanceRecord(
        workflow_id=history.workflow_id,
        definition=current.definition,
        version=current.version,
        state=state_at(history),
        status=history.status,
        context=history.context,
        revision=history.revision,
        error=history.error,
        create_time=current.create_time,
        update_time=history.time,
        # Only the last revision is the finished one; earlier ones had no expiry yet.
        expire_time=current.expire_time if history.revision == current.revision else None,
        # The start's own limit, known for the current run's rows only (a restart
        # replaces it; an earlier run's is not kept).
        recursion_limit=current.recursion_limit if history.run == current.run else None,
        run=history.run,
        pause=_paused_at(history),
    )


def _paused_at(history: HistoryRecord) -> dict[str, Any] | None:
    """The pause of a history row's revision: nothing but its unpause or cancel steps a
    paused instance, so the only paused revision in history is a pause step's own."""
    if history.event != "pause":
        return None
    reason = (history.input or {}).get("reason", "")
    actor = history.actor or ""
    return {"reason": str(reason), "actor": actor, "time": history.time.isoformat()}


def state_at(history: HistoryRecord) -> str:
    """The state of a history row. Rows saved before ``__finish__`` stopped being a state
    an instance rests in say ``__finish__``: the state it left is the one to show."""
    if history.state != FINISH:
        return history.state
    for transition in reversed(history.transitions):
        if transition.get("to") == FINISH:
            return str(transition["from"])
    return history.state


def settled(
    record: InstanceRecord, read_history: Callable[[], list[HistoryRecord]]
) -> InstanceRecord:
    """``record`` as users see it: an instance row saved with ``__finish__`` as its state
    (by an earlier version) shows the state it finished from, read from its last history
    row (``read_history``, called only then)."""
    if record.state != FINISH:
        return record
    rows = read_history()
    if not rows or rows[-1].revision != record.revision:
        return record
    return replace(record, state=state_at(rows[-1]))


def settled_from(repo: Repository, record: InstanceRecord) -> InstanceRecord:
    """``settled`` with the history read from ``repo`` (blocking I/O, only for old rows)."""
    return settled(record, lambda: repo.history_after(record.workflow_id, record.revision - 1, 1))
