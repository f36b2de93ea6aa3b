"""The periodic look for lost hints: one read per thousand watched instances, and only the
watchers behind the store (or of an instance it no longer holds) are sent to history."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import pytest

from statewrightd import errors
from statewrightd.app import watch_recheck
from statewrightd.app.watch_recheck import WatchRecheck
from statewrightd.engine.watch import WatchHub
from statewrightd.reasons import Reason
from statewrightd.store.memory import MemoryRepository
from tests.support.store_records import created, step

T = TypeVar("T")
T0 = datetime(2026, 12, 3, tzinfo=UTC)


async def inline(fn: Callable[[], T]) -> T:
    return fn()


async def test_one_look_sends_only_the_watchers_behind_to_history(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch_recheck, "CHUNK", 2)
    repo, hub = MemoryRepository(), WatchHub(recheck_after=10.0)
    stepped = created(repo, "stepped", T0)
    repo.save(step(stepped))  # by another replica, whose hint was lost
    created(repo, "idle", T0)
    created(repo, "other", T0)
    subs = {w: hub.subscribe(w) for w in ("stepped", "idle", "other", "removed")}
    for sub in subs.values():
        sub.seen = 1
    reads = 0

    async def counted(fn: Callable[[], T]) -> T:
        nonlocal reads
        reads += 1
        return fn()

    look = WatchRecheck(hub, repo, counted)
    await look.once()
    assert reads == look.reads == 2  # four watched instances, two to a read
    caught_up = {w: sub.take()[1] for w, sub in subs.items()}
    assert caught_up == {"stepped": True, "idle": False, "other": False, "removed": True}
    assert subs["stepped"].latest_known == 2 and subs["removed"].gone
    await look.once()  # nothing new: nobody is sent to history again...
    assert not subs["idle"].take()[1]
    await look.once()
    assert subs["stepped"].take()[1]  # ...but one still behind (it had not read yet) is


async def test_a_look_the_store_cannot_answer_changes_nothing() -> None:
    repo, hub = MemoryRepository(), WatchHub(recheck_after=10.0)
    sub = hub.subscribe("w")

    async def down(fn: Callable[[], T]) -> T:
        raise errors.StorageUnavailable("down", reason=Reason.STORAGE_UNAVAILABLE)

    look = WatchRecheck(hub, repo, down)
    await look.once()
    assert look.reads == 0 and sub.take() == ([], False) and not sub.gone


async def test_it_looks_every_period_until_cancelled() -> None:
    repo, hub = MemoryRepository(), WatchHub(recheck_after=0.01)
    hub.subscribe("w")
    look = WatchRecheck(hub, repo, inline)
    running = asyncio.create_task(look.run(0.01))
    for _ in range(500):
        if look.reads >= 3:
            break
        await asyncio.sleep(0.01)
    assert look.reads >= 3
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
