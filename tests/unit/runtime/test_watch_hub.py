"""The watch hub: bounded buffers that fall back to history, hints, drain."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from statewrightd.engine.watch import StepEvent, WatchHub
from statewrightd.store.records import InstanceRecord, Status

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


async def test_close_wakes_every_watcher_and_refuses_new_ones() -> None:
    hub = WatchHub()
    sub = hub.subscribe("a")
    hub.close()
    await sub.wait(None)  # returns at once: the stream must end
    assert sub.closed
    assert hub.subscribe("b").closed


async def test_an_idle_wait_with_a_recheck_interval_asks_for_a_history_look() -> None:
    hub = WatchHub(recheck_after=0.01)
    sub = hub.subscribe("a")
    await sub.wait(hub.recheck_after)
    assert sub.take() == ([], True)
