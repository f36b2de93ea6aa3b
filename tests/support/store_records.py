"""Instance records for store tests that drive a repository directly: one created, then
stepped one revision at a time, each save with the history row it appends."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from statewrightd.domain import Status
from statewrightd.store import Repository
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save


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
