"""The EventLoop thread: FIFO dispatch, batched replies, timers, phases and metrics."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import pytest

from statewrightd.engine.event_loop import EventLoop, Phase
from statewrightd.errors import Unavailable


async def test_commands_run_in_order_on_one_thread_and_replies_reach_asyncio() -> None:
    loop = EventLoop()
    aio = asyncio.get_running_loop()
    loop.start(aio)
    seen: list[int] = []
    threads: set[str] = set()
    done = asyncio.Event()

    def command(i: int) -> None:
        seen.append(i)
        threads.add(threading.current_thread().name)
        assert loop.in_loop()
        if i == 199:
            loop.reply(done.set)

    for i in range(200):
        loop.post(lambda i=i: command(i))  # type: ignore[misc]
    await asyncio.wait_for(done.wait(), 5)
    assert seen == list(range(200))
    assert threads == {"eventloop"}
    loop.stop()
    assert loop.phase is Phase.TERMINATED


async def test_replies_of_one_batch_cross_in_one_hand_off() -> None:
    loop = EventLoop()
    aio = asyncio.get_running_loop()
    hand_offs = 0
    original = aio.call_soon_threadsafe

    def counting(*args: object, **kwargs: object) -> asyncio.Handle:
        nonlocal hand_offs
        hand_offs += 1
        return original(*args, **kwargs)  # type: ignore[arg-type]

    aio.call_soon_threadsafe = counting  # type: ignore[method-assign]
    try:
        gate = threading.Event()
        results: list[int] = []
        finished = asyncio.Event()

        # Hold the loop so that the next 100 commands queue up and run as one batch.
        def hold() -> None:
            gate.wait(5)

        loop.post(hold)
        loop.start(aio)
        for i in range(100):
            loop.post(lambda i=i: loop.reply(lambda i=i: results.append(i)))  # type: ignore[misc]
        loop.post(lambda: loop.reply(finished.set))
        gate.set()
        await asyncio.wait_for(finished.wait(), 5)
        assert results == list(range(100))
        assert hand_offs <= 3
    finally:
        aio.call_soon_threadsafe = original  # type: ignore[method-assign]
        loop.stop()


async def test_timers_fire_in_deadline_order_and_can_be_cancelled() -> None:
    loop = EventLoop()
    loop.start(asyncio.get_running_loop())
    fired: list[str] = []
    done = threading.Event()

    def last() -> None:
        fired.append("late")
        done.set()

    def schedule() -> None:
        loop.call_later(0.10, last)
        loop.call_later(0.02, lambda: fired.append("early"))
        loop.call_later(0.05, lambda: fired.append("cancelled")).cancel()

    loop.post(schedule)
    assert await asyncio.to_thread(done.wait, 5)
    assert fired == ["early", "late"]
    loop.stop()


async def test_metrics_count_dispatches_lag_and_slow_dispatches() -> None:
    loop = EventLoop(slow_dispatch_threshold=0.01)
    loop.start(asyncio.get_running_loop())
    done = threading.Event()
    loop.post(lambda: time.sleep(0.03))  # slow, and it delays the next command
    loop.post(done.set)
    assert await asyncio.to_thread(done.wait, 5)
    metrics = loop.metrics()
    assert metrics.dispatch_count == 2
    assert metrics.slow_dispatch_count == 1
    assert metrics.lag_max >= 0.02
    assert metrics.max_queue_depth >= 1
    assert metrics.phase is Phase.RUNNING
    loop.stop()


async def test_a_failing_command_does_not_stop_the_loop() -> None:
    loop = EventLoop()
    loop.start(asyncio.get_running_loop())
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("bug in a command")

    loop.post(boom)
    loop.post(done.set)
    assert await asyncio.to_thread(done.wait, 5)
    loop.stop()


async def test_posting_after_stop_is_refused() -> None:
    loop = EventLoop()
    loop.start(asyncio.get_running_loop())
    loop.stop()
    with pytest.raises(Unavailable) as caught:
        loop.post(lambda: None)
    assert caught.value.reason == "SHUTTING_DOWN"


def _holding(gate: threading.Event) -> Callable[[], None]:
    def hold() -> None:
        gate.wait(5)

    return hold


async def test_a_backlog_and_a_lag_are_counted_each_time_and_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = EventLoop(backlog_warning=5, lag_warning=0.01)
    gate = threading.Event()
    hold = _holding(gate)
    done = threading.Event()
    loop.post(hold)
    for _ in range(20):
        loop.post(lambda: None)
    loop.post(done.set)
    with caplog.at_level("WARNING", logger="statewrightd.engine.event_loop"):
        loop.start(asyncio.get_running_loop())
        await asyncio.sleep(0.05)  # the queued commands wait longer than the lag threshold
        gate.set()
        assert await asyncio.to_thread(done.wait, 5)
        # A second backlog within the minute is counted but not logged again.
        second = threading.Event()
        gate.clear()
        loop.post(hold)
        for _ in range(10):
            loop.post(lambda: None)
        loop.post(second.set)
        await asyncio.sleep(0.05)
        gate.set()
        assert await asyncio.to_thread(second.wait, 5)
    metrics = loop.metrics()
    assert metrics.backlog_warning_threshold == 5
    assert metrics.backlog_warning_count >= 2
    assert metrics.lagged_dispatch_count >= 20
    backlog_lines = [r.getMessage() for r in caplog.records if "queue backlog" in r.getMessage()]
    lag_lines = [r.getMessage() for r in caplog.records if "queueing lag" in r.getMessage()]
    assert len(backlog_lines) == 1, backlog_lines
    assert "threshold 5" in backlog_lines[0]
    assert len(lag_lines) == 1, lag_lines
    assert "threshold 0.010s" in lag_lines[0]
    loop.stop()


async def test_a_quiet_loop_warns_of_nothing(caplog: pytest.LogCaptureFixture) -> None:
    loop = EventLoop(backlog_warning=50, lag_warning=1.0)
    done = threading.Event()
    with caplog.at_level("WARNING", logger="statewrightd.engine.event_loop"):
        loop.start(asyncio.get_running_loop())
        for _ in range(10):
            loop.post(lambda: None)
        loop.post(done.set)
        assert await asyncio.to_thread(done.wait, 5)
    assert loop.metrics().backlog_warning_count == 0
    assert loop.metrics().lagged_dispatch_count == 0
    assert not caplog.records
    assert loop.stop() is True


async def test_a_stop_that_cannot_finish_says_so(caplog: pytest.LogCaptureFixture) -> None:
    loop = EventLoop()
    gate = threading.Event()
    loop.start(asyncio.get_running_loop())
    loop.post(_holding(gate))
    loop.post(lambda: None)
    with caplog.at_level("ERROR", logger="statewrightd.engine.event_loop"):
        assert await asyncio.to_thread(loop.stop, 0.05) is False
    assert any("did not stop" in r.getMessage() for r in caplog.records)
    gate.set()
