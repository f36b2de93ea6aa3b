"""The watch hub: bounded buffers that fall back to history, hints, drain."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from statewrightd.domain import Status
from statewrightd.engine.watch import StepEvent, WatchHub
from statewrightd.store.records import InstanceRecord

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def event(workflow_id: str, revision: int) -> StepEvent:
    record = InstanceRecord(workflow_id, "d", 1, "s", Status.RUNNING, {}, revision, None, NOW, NOW)
    loaded: Any = None
    return StepEvent(record, loaded, (), "e")


async def test_events_reach_only_the_watchers_of_their_instance() -> None:
    hub = WatchHub()
    a, b = hub.subscribe("a"), hub.subscribe("b")
    hub.publish(event("a", 2))
    assert [e.record.revision for e in a.take()[0]] == [2]
    assert b.take() == ([], False)
    assert hub.watched("a") and not hub.watched("c")
    hub.unsubscribe(a)
    hub.unsubscribe(b)
    assert hub.active() == 0 and not hub.watched("a")


async def test_an_overflowing_buffer_is_dropped_for_a_history_catch_up() -> None:
    hub = WatchHub(buffer=3)
    sub = hub.subscribe("a")
    for revision in range(2, 7):
        hub.publish(event("a", revision))
    events, catch_up = sub.take()
    # Nothing is half-kept: the watcher reads every missed revision from history instead.
    assert catch_up
    assert events == []
    assert hub.catch_ups == 1
    assert sub.latest_known == 6


async def test_hints_only_wake_watchers_behind_the_hinted_revision() -> None:
    hub = WatchHub()
    sub = hub.subscribe("a")
    hub.publish(event("a", 3))
    sub.take()
    hub.hint([("a", 3), ("b", 9)])
    assert sub.take() == ([], False)
    hub.hint([("a", 4)])
    assert sub.take() == ([], True)


async def test_a_spurious_hint_does_not_swallow_the_hint_of_the_revision_saved() -> None:
    # Another replica's batch hints revision 4 for a save whose compare-and-swap failed;
    # the watcher reads history and finds nothing new. When revision 4 is then saved (by
    # any replica), its hint must send the watcher to history again, not be taken for the
    # one already heard: otherwise the stream stalls until its periodic look.
    hub = WatchHub()
    sub = hub.subscribe("a")
    hub.publish(event("a", 3))
    sub.take()
    hub.hint([("a", 4)])  # spurious
    assert sub.take() == ([], True)
    hub.hint([("a", 4)])  # the save that really made revision 4
    assert sub.take() == ([], True)


async def test_close_wakes_every_watcher_and_refuses_new_ones() -> None:
    hub = WatchHub()
    sub = hub.subscribe("a")
    hub.close()
    await sub.wait()  # returns at once: the stream must end
    assert sub.closed
    assert hub.subscribe("b").closed


async def test_a_recheck_sends_only_the_watchers_behind_the_store_to_history() -> None:
    hub = WatchHub(recheck_after=10.0)
    behind, current, removed = hub.subscribe("a"), hub.subscribe("b"), hub.subscribe("c")
    behind.seen, current.seen, removed.seen = 3, 5, 2
    assert sorted(hub.watched_ids()) == ["a", "b", "c"]
    hub.recheck(["a", "b", "c"], {"a": 4, "b": 5})
    assert behind.take() == ([], True) and behind.latest_known == 4
    assert current.take() == ([], False)
    # Not in the store any more (another replica removed it): its watcher ends.
    assert removed.gone and removed.take() == ([], True)


async def test_a_watch_whose_instance_vanishes_from_history_ends_with_the_read_error() -> None:
    import dataclasses

    import pytest

    from statewrightd import errors
    from statewrightd.engine.watch import WatchFeed
    from statewrightd.store.records import HistoryRecord

    current = event("w", 5).record
    removed = False

    class Now:
        def __init__(self) -> None:
            self.record, self.loaded, self.timers = current, None, ()

    async def read_current(workflow_id: str) -> Any:
        if removed:
            raise errors.NotFound("expired", reason="WORKFLOW_EXPIRED")
        return Now()

    async def read_history(workflow_id: str, after: int, limit: int) -> list[HistoryRecord]:
        nonlocal removed
        if after >= 2:
            removed = True  # the purge took the rest between two pages
            return []
        row = HistoryRecord("w", after + 1, None, [], "s", Status.RUNNING, {}, None, NOW)
        return [row, dataclasses.replace(row, revision=after + 2)]

    feed = WatchFeed(WatchHub(), read_current, read_history, page=2)
    seen: list[int] = []

    async def follow() -> None:
        async for step in feed.follow("w", 0):
            seen.append(step.record.revision)

    # Bounded: a feed that waited for revisions that no longer exist would never end.
    with pytest.raises(errors.NotFound) as ended:
        await asyncio.wait_for(follow(), 10)
    assert ended.value.reason == "WORKFLOW_EXPIRED"
    assert seen == [1, 2]


async def test_gone_wakes_the_watchers_of_removed_instances() -> None:
    hub = WatchHub()
    a, b = hub.subscribe("a"), hub.subscribe("b")
    hub.gone(("a",))
    assert a.gone and a.needs_catch_up and not b.gone
    await a.wait()  # returns at once
