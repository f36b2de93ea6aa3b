"""The contract's methods whose arguments every backend takes the same way.

Pages (filters checked, sizes clamped, tokens decoded and issued) and task leases (times
checked, values encoded) are done here once; a backend brings only the rows, through the
narrow ``_...`` methods below, with the values already checked and encoded.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from datetime import datetime
from typing import Any

from statewrightd.store.batching import BatchWriter
from statewrightd.store.codec import (
    check_status_filter,
    check_time,
    clamp_page_size,
    decode_page_token,
    decode_task_page_token,
    dumps,
    dumps_optional,
    encode_page_token,
    encode_task_page_token,
)
from statewrightd.store.records import InstanceRecord, Page, TaskPage, TaskRecord

Choose = Callable[[list[TaskRecord]], list[TaskRecord]]
# Named values, as the SQL statements name them: times checked (aware, in UTC), maps
# encoded as JSON text.
Params = dict[str, Any]


class CommonRepository(BatchWriter):
    def lease_tasks(
        self,
        queue: str,
        now: datetime,
        limit: int,
        first_lease: float,
        choose: Callable[[list[TaskRecord]], list[TaskRecord]] | None = None,
    ) -> list[TaskRecord]:
        params = {
            "queue": queue,
            "now": _time(now),
            "limit": limit,
            "first_ms": round(first_lease * 1000),
        }
        return self._lease_tasks(params, choose)

    def heartbeat_task(
        self,
        workflow_id: str,
        task_id: str,
        token: str,
        now: datetime,
        details: dict[str, Any] | None,
    ) -> TaskRecord | None:
        """The task with its lease extended, or None when this lease is not current."""
        params = _lease(workflow_id, task_id, token, now)
        params["details"] = dumps_optional(details, "heartbeat details")
        return self._heartbeat_task(params)

    def retry_task(
        self,
        workflow_id: str,
        task_id: str,
        token: str,
        *,
        now: datetime,
        available: datetime,
        error: dict[str, Any],
        request_id: str | None = None,
        expired_only: bool = False,
    ) -> TaskRecord | None:
        """End the attempt leased with ``token`` and retry at ``available``; None when the
        lease is not current (or, with ``expired_only``, has not expired)."""
        params = _lease(workflow_id, task_id, token, now)
        params["available"] = _time(available)
        params["error"] = dumps(error, "task error")
        params["request_id"] = request_id
        params["expired_only"] = expired_only
        return self._retry_task(params)

    def release_task(
        self, workflow_id: str, task_id: str, token: str, now: datetime
    ) -> TaskRecord | None:
        """Undo the lease ``token`` holds, as if it had never been taken (its attempt is not
        counted); None when the lease is not current."""
        return self._release_task(_lease(workflow_id, task_id, token, now))

    def list_tasks(
        self,
        *,
        queue: str | None = None,
        workflow_id: str | None = None,
        status: str | None = None,
        page_size: int = 0,
        page_token: str = "",
    ) -> TaskPage:
        size = clamp_page_size(page_size)
        key = f"{queue}|{workflow_id}|{status}"
        after_time, after_w, after_t = decode_task_page_token(page_token, key)
        params = {
            "after_time": _time(after_time),
            "after_w": after_w,
            "after_t": after_t,
            "queue": queue,
            "workflow_id": workflow_id,
            "status": status,
            "limit": size + 1,
        }
        found = self._tasks_after(params)
        tasks = found[:size]
        token = ""
        if len(found) > size:
            last = tasks[-1]
            token = encode_task_page_token(last.schedule_time, last.workflow_id, last.task_id, key)
        return TaskPage(items=tasks, next_page_token=token)

    # What a backend brings: the rows, from values checked and encoded.

    @abstractmethod
    def _lease_tasks(self, params: Params, choose: Choose | None) -> list[TaskRecord]:
        """Lease (queue, now, limit, first_ms) the ready tasks ``choose`` picks (all if
        None), in the order they became ready."""

    @abstractmethod
    def _heartbeat_task(self, params: Params) -> TaskRecord | None:
        """Lease (workflow_id, task_id, token, now), details."""

    @abstractmethod
    def _retry_task(self, params: Params) -> TaskRecord | None:
        """Lease, available, error, request_id, expired_only."""

    @abstractmethod
    def _release_task(self, params: Params) -> TaskRecord | None:
        """Lease (workflow_id, task_id, token, now)."""

    @abstractmethod
    def _tasks_after(self, params: Params) -> list[TaskRecord]:
        """Up to ``limit`` tasks past (after_time, after_w, after_t) in (schedule time,
        workflow, task) order, of ``queue``, ``workflow_id`` and ``status`` where named."""

    @abstractmethod
    def _instances_after(self, params: Params) -> list[tuple[int, InstanceRecord]]:
        """Up to ``limit`` instances past sequence number ``after``, in its order, each
        with its sequence number, of ``definition`` and ``status`` where named."""

    # Last in the class: the method name shadows the builtin in later annotations.
    def list(
        self,
        *,
        definition: str | None = None,
        status: str | None = None,
        page_size: int = 0,
        page_token: str = "",
    ) -> Page:
        check_status_filter(status)
        size = clamp_page_size(page_size)
        after = decode_page_token(page_token, definition, status)
        params = {"after": after, "definition": definition, "status": status, "limit": size + 1}
        found = self._instances_after(params)
        more = len(found) > size
        found = found[:size]
        token = encode_page_token(found[-1][0], definition, status) if more else ""
        return Page(items=[record for _, record in found], next_page_token=token)


def _lease(workflow_id: str, task_id: str, token: str, now: datetime) -> Params:
    return {"workflow_id": workflow_id, "task_id": task_id, "token": token, "now": _time(now)}


def _time(value: datetime) -> datetime:
    return check_time(value, "time")
