"""The retention purger's pacing and bookkeeping, one round at a time.

The store's side (what a batch removes, SKIP LOCKED between replicas) is in the contract
tests; here a scripted store answers each batch, and a loop that runs nothing by itself
shows what the purger asks to run next and after how long.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

import pytest

from statewrightd import errors
from statewrightd.engine import retention
from statewrightd.engine.background import Background
from statewrightd.engine.clock import Clock
from statewrightd.engine.event_loop import EventLoop, TimerHandle
from statewrightd.engine.retention import RetentionPurger
from statewrightd.store.records import Purged, RetentionCounts
from statewrightd.store.repository import Repository

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WINDOW = 60.0


class FixedClock(Clock):
    def now(self) -> datetime:
        return NOW


class ManualLoop:
    """call_later only records: the test decides what runs when."""

    def __init__(self) -> None:
        self.pending: list[tuple[float, Callable[[], None], TimerHandle]] = []

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle()
        self.pending.append((delay, fn, handle))
        return handle

    def take(self, fn_name: str) -> float:
        """Run the one live pending call named ``fn_name``; its delay."""
        (found,) = [p for p in self.pending if not p[2].cancelled and p[1].__name__ == fn_name]
        self.pending.remove(found)
        found[1]()
        return found[0]

    def delays(self, fn_name: str) -> list[float]:
        return [d for d, fn, h in self.pending if not h.cancelled and fn.__name__ == fn_name]


class ScriptedStore:
    """The five calls the purger makes, answered from scripts, with what each was asked."""

    def __init__(self) -> None:
        self.instances: list[Purged | Exception] = []
        self.requests: list[int] = []
        self.tombstones: list[int] = []
        self.batches: list[Purged] = []
        self.calls: list[tuple[str, Any]] = []
        self.counts = RetentionCounts(3, NOW - timedelta(seconds=40), 7, NOW - timedelta(90))

    def purge_expired(self, now: datetime, limit: int) -> Purged:
        self.calls.append(("instances", (now, limit)))
        answer = self.instances.pop(0) if self.instances else Purged()
        if isinstance(answer, Exception):
            raise answer
        return answer

    def purge_requests(self, older_than: datetime, limit: int) -> int:
        self.calls.append(("requests", (older_than, limit)))
        return self.requests.pop(0) if self.requests else 0

    def purge_tombstones(self, older_than: datetime, limit: int) -> int:
        self.calls.append(("tombstones", (older_than, limit)))
        return self.tombstones.pop(0) if self.tombstones else 0

    def purge_batches(self, ended_before: datetime, limit: int) -> Purged:
        self.calls.append(("batches", (ended_before, limit)))
        return self.batches.pop(0) if self.batches else Purged()

    def retention_counts(self, now: datetime, requests_before: datetime) -> RetentionCounts:
        self.calls.append(("counts", (now, requests_before)))
        return self.counts


def offload(fn: Callable[[], Any], then: Callable[[Any], None]) -> None:
    # As the runtime's offload: a storage failure reaches ``then`` as a StatewrightError.
    try:
        result: Any = fn()
    except errors.StatewrightError as exc:
        result = exc
    then(result)


def stopwatch(monkeypatch: pytest.MonkeyPatch, *readings: float) -> None:
    """The purger's own time.monotonic reads these, in turn (the rest of the process's
    clock is left alone)."""
    ticks = iter(readings)
    monkeypatch.setattr(
        "statewrightd.engine.retention.time", SimpleNamespace(monotonic=lambda: next(ticks))
    )


@pytest.fixture
def store() -> ScriptedStore:
    return ScriptedStore()


@pytest.fixture
def loop() -> ManualLoop:
    return ManualLoop()


@pytest.fixture
def removed() -> list[tuple[str, ...]]:
    return []


@pytest.fixture
def purger(
    loop: ManualLoop, store: ScriptedStore, removed: list[tuple[str, ...]]
) -> RetentionPurger:
    return RetentionPurger(
        Background(cast(EventLoop, loop), cast(Repository, store), offload, FixedClock()),
        retention=120.0,
        request_window=WINDOW,
        removed=removed.append,
        batch=2,
    )


def test_a_round_asks_for_bounded_batches_with_the_window_as_cut_off(
    purger: RetentionPurger, loop: ManualLoop, store: ScriptedStore
) -> None:
    purger.start()
    assert loop.take("_round") == 0.0
    cut = NOW - timedelta(seconds=WINDOW)
    assert store.calls == [
        ("instances", (NOW, 2)),
        ("requests", (cut, 2)),
        ("tombstones", (cut, 2)),
        # Batches are kept as long as the longer of the retention and the request window.
        ("batches", (NOW - timedelta(seconds=120.0), 2)),
    ]


@pytest.mark.parametrize(
    ("kept", "window", "cut"), [(30.0, WINDOW, WINDOW), (math.inf, WINDOW, None)]
)
def test_batches_are_kept_for_the_request_window_at_least_and_for_ever_with_instances(
    loop: ManualLoop, store: ScriptedStore, kept: float, window: float, cut: float | None
) -> None:
    purger = RetentionPurger(
        Background(cast(EventLoop, loop), cast(Repository, store), offload, FixedClock()),
        retention=kept,
        request_window=window,
        removed=lambda _: None,
        batch=2,
    )
    purger.start()
    loop.take("_round")
    asked = [args for name, args in store.calls if name == "batches"]
    assert asked == ([] if cut is None else [(NOW - timedelta(seconds=cut), 2)])


def test_purged_batches_are_counted_and_a_full_purge_goes_on(
    purger: RetentionPurger,
    loop: ManualLoop,
    store: ScriptedStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store.batches = [Purged(rows={"batch_operations": 1, "batch_items": 5})]
    stopwatch(monkeypatch, 100.0, 100.3)
    purger.start()
    loop.take("_round")
    rows = purger.stats().rows_purged
    assert (rows["batch_operations"], rows["batch_items"]) == (1, 5)
    assert loop.delays("_round") == [pytest.approx(0.3 * retention.PAUSE_FACTOR)]


def test_what_a_round_removed_is_counted_and_told_to_the_loop(
    purger: RetentionPurger,
    loop: ManualLoop,
    store: ScriptedStore,
    removed: list[tuple[str, ...]],
) -> None:
    store.instances = [
        Purged(("a",), {"workflow_instances": 1, "workflow_history": 4, "workflow_requests": 2})
    ]
    store.requests = [1]
    store.tombstones = [1]
    purger.start()
    loop.take("_round")
    assert removed == [("a",)]
    stats = purger.stats()
    # Request records: the one removed with its instance and the one the window expired.
    assert stats.rows_purged == {
        "workflow_instances": 1,
        "workflow_history": 4,
        "workflow_requests": 3,
    }
    assert (stats.tombstones_purged, stats.rounds, stats.failures) == (1, 1, 0)
    assert stats.last_run == NOW
    assert (stats.retention, stats.request_window) == (120.0, WINDOW)


def test_less_than_a_batch_waits_for_the_idle_interval(
    purger: RetentionPurger, loop: ManualLoop, store: ScriptedStore
) -> None:
    store.instances = [Purged(("a",), {"workflow_instances": 1})]
    purger.start()
    loop.take("_round")
    assert loop.delays("_round") == [retention.IDLE_EVERY]


@pytest.mark.parametrize("found", ["instances", "requests", "tombstones", "nothing"])
def test_a_round_that_removed_nothing_waits_longer(
    purger: RetentionPurger, loop: ManualLoop, store: ScriptedStore, found: str
) -> None:
    if found == "instances":
        store.instances = [Purged(("a",), {"workflow_instances": 1})]
    elif found == "requests":
        store.requests = [1]
    elif found == "tombstones":
        store.tombstones = [1]
    purger.start()
    loop.take("_round")
    wait = retention.EMPTY_EVERY if found == "nothing" else retention.IDLE_EVERY
    assert loop.delays("_round") == [wait]
    assert retention.EMPTY_EVERY > retention.IDLE_EVERY


@pytest.mark.parametrize(
    ("kept", "window", "wait"),
    [
        (2.0, 3600.0, 2.0),  # rows kept for seconds are removed within seconds
        (3600.0, 4.0, 4.0),  # request records too
        (0.25, 3600.0, retention.IDLE_EVERY),  # but never more often than a busy purge
        (math.inf, 3600.0, retention.EMPTY_EVERY),  # kept long: an idle server looks seldom
    ],
)
def test_an_empty_round_waits_no_longer_than_what_the_server_keeps(
    loop: ManualLoop, store: ScriptedStore, kept: float, window: float, wait: float
) -> None:
    purger = RetentionPurger(
        Background(cast(EventLoop, loop), cast(Repository, store), offload, FixedClock()),
        retention=kept,
        request_window=window,
        removed=lambda ids: None,
    )
    purger.start()
    loop.take("_round")
    assert loop.delays("_round") == [wait]


@pytest.mark.parametrize("full", ["instances", "requests", "tombstones"])
def test_a_full_batch_goes_on_after_a_pause_as_long_as_it_took(
    purger: RetentionPurger,
    loop: ManualLoop,
    store: ScriptedStore,
    monkeypatch: pytest.MonkeyPatch,
    full: str,
) -> None:
    if full == "instances":
        store.instances = [Purged(("a", "b"), {"workflow_instances": 2})]
    elif full == "requests":
        store.requests = [2]
    else:
        store.tombstones = [2]
    # The round's own stopwatch: 0.3 s from its start to its end.
    stopwatch(monkeypatch, 100.0, 100.3)
    purger.start()
    loop.take("_round")
    assert loop.delays("_round") == [pytest.approx(0.3 * retention.PAUSE_FACTOR)]
    assert purger.stats().last_round_seconds == pytest.approx(0.3)


def test_a_quick_full_batch_still_pauses_a_little(
    purger: RetentionPurger,
    loop: ManualLoop,
    store: ScriptedStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store.instances = [Purged(("a", "b"), {"workflow_instances": 2})]
    stopwatch(monkeypatch, 100.0, 100.0)
    purger.start()
    loop.take("_round")
    assert loop.delays("_round") == [retention.MIN_PAUSE]


def test_a_failed_round_is_counted_and_retried_after_the_idle_interval(
    purger: RetentionPurger,
    loop: ManualLoop,
    store: ScriptedStore,
    removed: list[tuple[str, ...]],
) -> None:
    store.instances = [errors.StorageUnavailable("connection refused")]
    purger.start()
    loop.take("_round")
    stats = purger.stats()
    assert (stats.failures, stats.rounds, stats.last_run) == (1, 0, None)
    assert removed == []
    assert loop.delays("_round") == [retention.IDLE_EVERY]
    store.instances = [Purged(("a",), {"workflow_instances": 1})]
    loop.take("_round")
    assert removed == [("a",)] and purger.stats().rounds == 1


def test_a_failing_listener_does_not_stop_the_purge(loop: ManualLoop, store: ScriptedStore) -> None:
    def broken(ids: tuple[str, ...]) -> None:
        raise RuntimeError("listener broke")

    purger = RetentionPurger(
        Background(cast(EventLoop, loop), cast(Repository, store), offload, FixedClock()),
        retention=120.0,
        request_window=WINDOW,
        removed=broken,
        batch=2,
    )
    store.instances = [Purged(("a",), {"workflow_instances": 1})]
    purger.start()
    loop.take("_round")
    assert purger.stats().rows_purged["workflow_instances"] == 1
    assert loop.delays("_round") == [retention.IDLE_EVERY]


def test_overdue_rows_are_counted_on_their_own_schedule(
    purger: RetentionPurger, loop: ManualLoop, store: ScriptedStore
) -> None:
    assert purger.stats().counted_time is None
    purger.start()
    loop.take("_count")
    assert ("counts", (NOW, NOW - timedelta(seconds=WINDOW))) in store.calls
    stats = purger.stats()
    assert (stats.overdue_instances, stats.overdue_requests) == (3, 7)
    assert stats.oldest_instance_due == NOW - timedelta(seconds=40)
    assert stats.counted_time == NOW
    assert loop.delays("_count") == [retention.COUNT_EVERY]


def test_a_stopped_purger_schedules_nothing_more(
    purger: RetentionPurger, loop: ManualLoop, store: ScriptedStore
) -> None:
    purger.start()
    purger.stop()
    assert loop.delays("_round") == []
    loop.take("_count")
    assert loop.delays("_count") == []


def test_an_idle_purger_looks_for_finished_batches_once_a_minute(
    purger: RetentionPurger, loop: ManualLoop, store: ScriptedStore
) -> None:
    purger.start()
    loop.take("_round")
    loop.take("_round")
    # The clock stands still: the second round is within the minute, and skips batches.
    assert [name for name, _ in store.calls].count("batches") == 1
    assert [name for name, _ in store.calls].count("instances") == 2
