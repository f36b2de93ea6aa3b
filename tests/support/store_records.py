"""Records for tests that build them by hand: instances for store tests that drive a
repository directly (one created, then stepped one revision at a time, each save with the
history row it appends), and tasks."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from statewrightd.domain import Status, TaskStatus
from statewrightd.store import Repository
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save, TaskRecord


def created(repo: Repository, wid: str, at: datetime) -> InstanceRecord:
    rec = InstanceRecord(wid, "def", 1, "start", Status.RUNNING, {"k": 0}, 1, None, at, at)
    return repo.create(Create(rec, history(rec)))


def history(rec: InstanceRecord) -> HistoryRecord:
    return HistoryRecord(
        rec.workflow_id,
        rec.revision,
        "go",
        [{"from": "start", "to": rec.state, "event": "go"}],
        rec.state,
        rec.status,
        rec.context,
        None,
        rec.update_time,
    )


def step(rec: InstanceRecord, state: str = "next") -> Save:
    new = dataclasses.replace(
        rec,
        revision=rec.revision + 1,
        state=state,
        context={"k": rec.revision},
        update_time=rec.update_time + timedelta(seconds=1),
    )
    return Save(new, rec.revision, history(new))


def task_record(
    workflow_id: str, task_id: str, at: datetime, *, leased: str | None = None, **fields: Any
) -> TaskRecord:
    """Task ``task_id`` of ``workflow_id`` (scheduled by the step of that revision) as
    scheduled at ``at`` on queue ``payments``: three attempts, an hour to finish, a minute
    an attempt. ``leased``: as its first attempt's lease, with this token, left it at
    ``at``. ``fields`` replace any of these."""
    task = TaskRecord(
        workflow_id=workflow_id,
        task_id=task_id,
        revision=int(task_id),
        state="charging",
        queue="payments",
        input={},
        status=TaskStatus.SCHEDULED,
        attempt=0,
        max_attempts=3,
        lease_token=None,
        lease_expire_time=None,
        attempt_start_time=None,
        available_time=at,
        schedule_time=at,
        deadline=at + timedelta(hours=1),
        start_to_close=60.0,
        heartbeat=None,
        retry={},
        heartbeat_details=None,
        last_error=None,
        last_request_id=None,
        update_time=at,
    )
    if leased is not None:
        task = dataclasses.replace(
            task,
            status=TaskStatus.LEASED,
            attempt=1,
            lease_token=leased,
            lease_expire_time=at + timedelta(minutes=1),
            attempt_start_time=at,
        )
    return dataclasses.replace(task, **fields)
