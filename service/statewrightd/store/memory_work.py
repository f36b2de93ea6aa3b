"""The in-process store's timers and tasks: claims, leases, heartbeats, retries, pages.

Part of ``MemoryRepository`` (store/memory.py), on the same rows behind the same lock."""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from statewrightd.store import failures, flow, rows
from statewrightd.store.batching import BatchWriter
from statewrightd.store.codec import from_micros, to_micros
from statewrightd.store.filters import TASKS, Filter, InstanceTask, matches
from statewrightd.store.flow import KeyCounts, KeyState, QueueConfig, QueueState, StoredQueue
from statewrightd.store.memory_schedules import MemorySchedules
from statewrightd.store.memory_state import OPEN, READY, ROWS, stamp, task_record
from statewrightd.store.records import (
    FanOutProgress,
    InstanceRecord,
    QueueCounts,
    TaskRecord,
    TimerRecord,
)
from statewrightd.store.repository import Choose, Params, Repository

# A timer's row is rows.TIMER then its claim's end.
_CLAIM = len(rows.TIMER)


class MemoryWork(MemorySchedules, BatchWriter, Repository):
    """The timers and tasks of the repository contract, held in memory."""

    def armed_timers(self, workflow_ids: Sequence[str]) -> dict[str, list[TimerRecord]]:
        out: dict[str, list[TimerRecord]] = {}
        with self._held():
            for wid in sorted(set(workflow_ids)):
                instance = self._instances.get(wid)
                if instance is not None and instance.timers:
                    rows = sorted(instance.timers.values(), key=lambda t: (t[6], t[1]))
                    out[wid] = [ROWS.timer(t) for t in rows]
        return out

    def _timers(self, claimable: bool = False) -> Iterator[list[Any]]:
        """Every armed timer; ``claimable``: those of instances that are not paused."""
        for instance in self._instances.values():
            if not (claimable and instance.row[13] is not None):
                yield from instance.timers.values()

    def claim_timers(self, now: datetime, until: datetime, limit: int) -> list[TimerRecord]:
        at, held = stamp(now, "now"), stamp(until, "until")
        with self._held():
            due = sorted(
                (
                    t
                    for t in self._timers(True)
                    if t[6] <= at and (t[_CLAIM] is None or t[_CLAIM] <= at)
                ),
                key=lambda t: t[6],
            )[:limit]
            for timer in due:
                timer[_CLAIM] = held
            return [ROWS.timer(t) for t in due]

    def next_timer_due(self, now: datetime) -> datetime | None:
        at = stamp(now, "now")
        with self._held():
            dues = [t[6] for t in self._timers(True) if t[_CLAIM] is None or t[_CLAIM] <= at]
        return from_micros(min(dues)) if dues else None

    def delete_timer(self, workflow_id: str, timer_id: str) -> bool:
        with self._held():
            instance = self._instances.get(workflow_id)
            return instance is not None and instance.timers.pop(timer_id, None) is not None

    def timer_counts(self, now: datetime) -> tuple[int, int]:
        at = stamp(now, "now")
        with self._held():
            dues = [t[6] for t in self._timers()]
        return len(dues), sum(1 for due in dues if due <= at)

    def _tasks(self, claimable: bool = False) -> Iterator[dict[str, Any]]:
        """Every task; ``claimable``: those of instances that are not paused."""
        for instance in self._instances.values():
            if not (claimable and instance.row[13] is not None):
                yield from instance.tasks.values()

    def _task(self, workflow_id: str, task_id: str) -> dict[str, Any] | None:
        instance = self._instances.get(workflow_id)
        return None if instance is None else instance.tasks.get(task_id)

    def _leased(self, p: Params) -> dict[str, Any] | None:
        """The task, while it is leased with the token ``p`` names."""
        task = self._task(p["workflow_id"], p["task_id"])
        if task is None or task["lease_token"] != p["token"] or task["status"] != "LEASED":
            return None
        return task

    def _lease_tasks(
        self, p: Params, choose: Choose | None, read: dict[str, InstanceRecord] | None
    ) -> list[TaskRecord]:
        at, first_ms = to_micros(p["now"]), p["first_ms"]
        with self._held():
            ready = sorted(
                (
                    t
                    for t in self._tasks(True)
                    if t["queue"] == p["queue"]
                    and t["status"] in READY
                    and t["available_time"] <= at
                    and t["deadline"] > at
                ),
                key=lambda t: t["available_time"],
            )
            stored = self._flow_queues.get(p["queue"])
            if stored is not None:
                ready = self._limited(stored, ready, p["now"], p["limit"], choose)
                choose = None
            else:
                ready = ready[: p["limit"]]
            if choose is not None:
                chosen = {
                    (c.workflow_id, c.task_id) for c in choose([task_record(t) for t in ready])
                }
                ready = [t for t in ready if (t["workflow_id"], t["task_id"]) in chosen]
            for task in ready:
                stc = task["start_to_close_ms"]
                heartbeat = task["heartbeat_ms"] if task["heartbeat_ms"] is not None else stc
                task["status"] = "LEASED"
                task["attempt"] += 1
                task["lease_token"] = secrets.token_hex(16)
                task["attempt_start_time"] = at
                task["lease_expire_time"] = min(
                    task["deadline"], at + min(stc, heartbeat, first_ms) * 1000
                )
                task["claimed_until"] = None
                task["update_time"] = at
            return [task_record(t) for t in ready]

    def _limited(
        self,
        stored: StoredQueue,
        ready: list[dict[str, Any]],
        now: datetime,
        limit: int,
        choose: Choose | None,
    ) -> list[dict[str, Any]]:
        """The claim of a queue with limits (store/flow.py), on rows the lock holds."""
        queue = stored.config.queue
        by_key: dict[str, int] = {}
        leased = 0
        for t in self._tasks():
            if t["queue"] == queue and t["status"] == "LEASED":
                leased += 1
                if t["concurrency_key"] is not None:
                    by_key[t["concurrency_key"]] = by_key.get(t["concurrency_key"], 0) + 1
        keys = dict(self._flow_keys.get(queue, {}))
        state = QueueState(stored.config, stored.tokens, stored.refill_time, leased, by_key, keys)
        records = {(t["workflow_id"], t["task_id"]): t for t in ready}
        claim = flow.plan_claim(state, [task_record(t) for t in ready], limit, now)
        if choose is not None and claim.chosen:
            claim = flow.plan_claim(state, choose(claim.chosen), limit, now)
        if claim.chosen:
            if stored.config.rate:
                self._flow_queues[queue] = replace(stored, tokens=claim.tokens, refill_time=now)
            served = self._flow_keys.setdefault(queue, {})
            for ks in claim.keys:
                served[ks.key] = ks
        return [records[(c.workflow_id, c.task_id)] for c in claim.chosen]

    def set_queue_config(self, config: QueueConfig, now: datetime) -> QueueConfig | None:
        with self._held():
            if not config.limited:
                self._flow_queues.pop(config.queue, None)
                return None
            stored = replace(config, update_time=now)
            old = self._flow_queues.get(config.queue)
            tokens = float(config.bucket) if old is None else min(old.tokens, config.bucket)
            refill = now if old is None else old.refill_time
            self._flow_queues[config.queue] = StoredQueue(stored, tokens, refill)
            return stored

    def queue_configs(self, queue: str | None = None) -> list[StoredQueue]:
        with self._held():
            found = sorted(self._flow_queues.items())
        return [s for name, s in found if queue is None or name == queue]

    def close_key(self, queue: str, key: str, until: datetime) -> None:
        with self._held():
            keys = self._flow_keys.setdefault(queue, {})
            ks = keys.get(key) or KeyState(key)
            if ks.closed_until is None or ks.closed_until < until:
                keys[key] = replace(ks, closed_until=until)

    def closed_keys(self, queue: str, now: datetime) -> list[KeyState]:
        with self._held():
            keys = list(self._flow_keys.get(queue, {}).values())
        return sorted(
            (k for k in keys if k.closed_until is not None and k.closed_until > now),
            key=lambda k: k.key,
        )

    def key_counts(self, now: datetime) -> list[KeyCounts]:
        at = to_micros(now)
        counts: dict[tuple[str, str], list[int]] = {}
        with self._held():
            for t in self._tasks():
                if t["concurrency_key"] is None or t["status"] not in OPEN:
                    continue
                entry = counts.setdefault((t["queue"], t["concurrency_key"]), [0, 0])
                if t["status"] == "LEASED":
                    entry[1] += 1
                elif t["available_time"] <= at:
                    entry[0] += 1
        return [KeyCounts(q, k, r, n) for (q, k), (r, n) in sorted(counts.items())]

    def _heartbeat_task(self, p: Params) -> TaskRecord | None:
        at = to_micros(p["now"])
        with self._held():
            task = self._leased(p)
            if task is None or not task["lease_expire_time"] > at:
                return None
            stc = task["start_to_close_ms"]
            heartbeat = task["heartbeat_ms"] if task["heartbeat_ms"] is not None else stc
            task["lease_expire_time"] = min(
                task["deadline"], task["attempt_start_time"] + stc * 1000, at + heartbeat * 1000
            )
            if p["details"] is not None:
                task["heartbeat_details"] = p["details"]
            task["update_time"] = at
            return task_record(task)

    def _retry_task(self, p: Params) -> TaskRecord | None:
        at = to_micros(p["now"])
        with self._held():
            task = self._leased(p)
            if task is None:
                return None
            if p["expired_only"] and not task["lease_expire_time"] <= at:
                return None
            return _unleased(
                task,
                at,
                status="BACKOFF",
                available_time=to_micros(p["available"]),
                last_error=p["error"],
                last_request_id=p["request_id"],
            )

    def _release_task(self, p: Params) -> TaskRecord | None:
        with self._held():
            task = self._leased(p)
            if task is None:
                return None
            return _unleased(
                task,
                to_micros(p["now"]),
                status="SCHEDULED" if task["attempt"] <= 1 else "BACKOFF",
                attempt=task["attempt"] - 1,
                attempt_start_time=None,
            )

    def claim_expired_tasks(self, now: datetime, until: datetime, limit: int) -> list[TaskRecord]:
        at, held = stamp(now), stamp(until)
        with self._held():
            expired = [
                t
                for t in self._tasks(True)
                if (
                    (t["status"] == "LEASED" and t["lease_expire_time"] <= at)
                    or (t["status"] in OPEN and t["deadline"] <= at)
                )
                and (t["claimed_until"] is None or t["claimed_until"] <= at)
            ][:limit]
            for task in expired:
                task["claimed_until"] = held
            return [task_record(t) for t in expired]

    def get_task(self, workflow_id: str, task_id: str) -> TaskRecord:
        with self._held():
            task = self._task(workflow_id, task_id)
            if task is None:
                raise failures.task_not_found(workflow_id, task_id)
            return task_record(task)

    def open_tasks(self, workflow_ids: Sequence[str]) -> dict[str, TaskRecord]:
        out: dict[str, TaskRecord] = {}
        with self._held():
            for wid in workflow_ids:
                instance = self._instances.get(wid)
                for task in () if instance is None else instance.tasks.values():
                    if task["status"] in OPEN:
                        out[wid] = task_record(task)
        return out

    def _items(self, workflow_id: str) -> list[dict[str, Any]]:
        """The items of the instance's latest fan-out (held lock)."""
        instance = self._instances.get(workflow_id)
        tasks = [] if instance is None else list(instance.tasks.values())
        items = [t for t in tasks if t["item_index"] is not None]
        latest = max((t["revision"] for t in items), default=None)
        return sorted((t for t in items if t["revision"] == latest), key=lambda t: t["item_index"])

    def fan_out(self, workflow_id: str) -> FanOutProgress | None:
        with self._held():
            items = self._items(workflow_id)
        if not items:
            return None
        statuses = [t["status"] for t in items]
        given_up = sum(s in ("FAILED", "TIMED_OUT") for s in statuses)
        return FanOutProgress(
            items[0]["revision"], len(items), statuses.count("COMPLETED"), given_up
        )

    def item_ends(
        self, workflow_id: str, revision: int, *, given_up_only: bool, limit: int
    ) -> list[TaskRecord]:
        wanted = ("FAILED", "TIMED_OUT") if given_up_only else ("COMPLETED", "FAILED", "TIMED_OUT")
        with self._held():
            items = self._items(workflow_id)
            ended = [
                task_record(t) for t in items if t["revision"] == revision and t["status"] in wanted
            ]
        return ended[:limit]

    def queue_stats(self, now: datetime) -> list[QueueCounts]:
        at = stamp(now)
        queues: dict[str, list[Any]] = {}
        with self._held():
            for task in self._tasks():
                if task["status"] not in OPEN:
                    continue
                entry = queues.setdefault(task["queue"], [0, None, 0])
                if task["status"] in READY and task["available_time"] <= at:
                    entry[0] += 1
                    oldest = entry[1]
                    entry[1] = (
                        task["available_time"]
                        if oldest is None
                        else min(oldest, task["available_time"])
                    )
                elif task["status"] == "LEASED":
                    entry[2] += 1
        return [
            QueueCounts(
                queue=name,
                ready=ready,
                oldest_ready=None if oldest is None else from_micros(oldest),
                leased=leased,
            )
            for name, (ready, oldest, leased) in sorted(queues.items())
        ]

    def _tasks_after(self, p: Params) -> list[TaskRecord]:
        start = (to_micros(p["after_time"]), p["after_w"], p["after_t"])
        queue, workflow_id, status = p["queue"], p["workflow_id"], p["status"]
        which: Filter | None = p.get("filter")
        with self._held():
            found = sorted(
                (
                    t
                    for t in self._tasks()
                    if (t["schedule_time"], t["workflow_id"], t["task_id"]) > start
                    and (queue is None or t["queue"] == queue)
                    and (workflow_id is None or t["workflow_id"] == workflow_id)
                    and (status is None or t["status"] == status)
                ),
                key=lambda t: (t["schedule_time"], t["workflow_id"], t["task_id"]),
            )
            listed = [task_record(t) for t in found]
            if which is not None:
                listed = [t for t in listed if matches(which.root, self._with(t), (), TASKS)]
            return listed[: p["limit"]]

    def _with(self, task: TaskRecord) -> InstanceTask:
        """A task with its instance's columns, for a task filter (the lock held)."""
        instance = self._instances.get(task.workflow_id)
        return InstanceTask(task, "" if instance is None else instance.row[1])


def _unleased(task: dict[str, Any], at: int, **changes: Any) -> TaskRecord:
    """The task with its lease (and any claim on it) ended, and ``changes`` made."""
    task.update(
        lease_token=None, lease_expire_time=None, claimed_until=None, update_time=at, **changes
    )
    return task_record(task)
