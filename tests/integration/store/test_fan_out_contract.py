"""A fan-out's items in the store, identically on every backend: the entering step writes
them (the held ones not leasable, past no deadline), an item's step finishes it under its
lease with its result kept on the row and offers the next held item, the counts and ends
read back in index order, and leaving cancels every open item at once."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from statewrightd.domain import TaskStatus
from statewrightd.errors import TaskFenced
from statewrightd.store import Repository
from statewrightd.store.records import (
    HELD_UNTIL,
    Create,
    FanOutProgress,
    Save,
    TaskChange,
    TaskFinish,
    TaskRecord,
    TaskRelease,
)

from .test_tasks_contract import NOW, history, instance, lease, task

ITEMS = 5
OFFERED = 2


def items(wid: str) -> list[TaskRecord]:
    rec = instance(wid)
    out = []
    for i in range(ITEMS):
        one = dataclasses.replace(task(rec), task_id=f"1.{i}", item_index=i, input={"line": i})
        if i >= OFFERED:
            one = dataclasses.replace(one, available_time=HELD_UNTIL, deadline=HELD_UNTIL)
        out.append(one)
    return out


def entered(repo: Repository, wid: str) -> list[TaskRecord]:
    rec = instance(wid)
    written = items(wid)
    repo.create(Create(rec, history(rec), tasks=TaskChange(items=tuple(written))))
    return written


def item_step(  # the step of an ended item: revision base -> base + 1
    repo: Repository,
    wid: str,
    base: int,
    finish: TaskFinish,
    release: int | None = None,
    *,
    cancel: bool = False,
) -> None:
    new = instance(wid, base + 1)
    at = NOW + timedelta(seconds=base)
    freed = None
    if release is not None:
        freed = TaskRelease(f"1.{release}", "payments", at, at + timedelta(hours=1))
    change = TaskChange(finish=finish, release=freed, cancel=cancel)
    repo.save(Save(new, base, history(new), tasks=change))


def test_entering_writes_every_item_and_only_the_offered_ones_lease(repo: Repository) -> None:
    written = entered(repo, "f-enter")
    assert [repo.get_task("f-enter", f"1.{i}") for i in range(ITEMS)] == written
    leased = lease(repo, at=NOW + timedelta(seconds=1))
    assert sorted(t.item_index or 0 for t in leased) == list(range(OFFERED))
    # Days later only the leased items are past their lease: the held ones wait unbounded.
    expired = repo.claim_expired_tasks(NOW + timedelta(days=3), NOW + timedelta(days=4), 10)
    assert {t.task_id for t in expired} == {t.task_id for t in leased}
    assert repo.fan_out("f-enter") == FanOutProgress(1, ITEMS, 0, 0)
    assert repo.fan_out("absent") is None


def test_an_item_step_keeps_its_result_and_offers_the_next_item(repo: Repository) -> None:
    entered(repo, "f-item")
    first, _ = lease(repo, at=NOW)
    token = first.lease_token
    assert token is not None and first.item_index is not None
    done = TaskFinish(first.task_id, TaskStatus.COMPLETED, token, None, True, result={"ok": 1})
    item_step(repo, "f-item", 1, done, release=OFFERED)
    stored = repo.get_task("f-item", first.task_id)
    assert (stored.status, stored.result) == (TaskStatus.COMPLETED, {"ok": 1})
    released = repo.get_task("f-item", f"1.{OFFERED}")
    assert released.available_time == NOW + timedelta(seconds=1)
    assert released.deadline == NOW + timedelta(seconds=1, hours=1)
    (next_one,) = lease(repo, at=NOW + timedelta(seconds=2))
    assert next_one.task_id == f"1.{OFFERED}"
    # Applied once: the same finish again is fenced off, and nothing moves.
    with pytest.raises(TaskFenced):
        item_step(repo, "f-item", 2, done, release=OFFERED + 1)
    assert repo.fan_out("f-item") == FanOutProgress(1, ITEMS, 1, 0)
    (end,) = repo.item_ends("f-item", 1, given_up_only=False, limit=ITEMS)
    assert (end.item_index, end.result) == (first.item_index, {"ok": 1})


def test_given_up_items_count_apart_and_leaving_cancels_every_open_one(
    repo: Repository,
) -> None:
    entered(repo, "f-fail")
    leased = lease(repo, at=NOW)
    failed = leased[0]
    assert failed.lease_token is not None
    error = {"type": "DECLINED", "message": "no", "details": {}}
    gave_up = TaskFinish(failed.task_id, TaskStatus.FAILED, failed.lease_token, None, True, error)
    item_step(repo, "f-fail", 1, gave_up, cancel=True)
    assert repo.fan_out("f-fail") == FanOutProgress(1, ITEMS, 0, 1)
    (end,) = repo.item_ends("f-fail", 1, given_up_only=True, limit=5)
    assert end.last_error == error
    statuses = [repo.get_task("f-fail", f"1.{i}").status for i in range(ITEMS)]
    assert statuses.count(TaskStatus.FAILED) == 1
    assert statuses.count(TaskStatus.CANCELLED) == ITEMS - 1
    assert repo.open_tasks(["f-fail"]) == {}
