"""The EventLoop thread: the one place where live workflow state is mutated.

Other threads only ``post`` callables into its FIFO queue. It runs them one at a time, so
the state they touch needs no locks. It never does I/O: storage work goes to the writer or
the I/O pool and comes back as another posted callable.

Replies to the asyncio (gRPC) loop are batched: everything a drained batch of commands
produces crosses back in one ``call_soon_threadsafe``, which is what keeps the hand-off
cheap (one wake-up of the asyncio loop per batch, not per reply).
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from statewrightd.errors import Unavailable
from statewrightd.reasons import Reason

_log = logging.getLogger(__name__)

# A batch's replies (and writes) leave only when the batch ends, so its first command
# waits for its last: a batch is cut after this many commands or this much time, which
# bounds that wait while keeping one hand-off for many commands under load.
MAX_BATCH = 64
MAX_BATCH_SECONDS = 0.003

# A deep queue or a long queueing delay is worth a line in the log, but not one per
# command: under a burst that would bury the log in the very moment it is read.
WARNING_INTERVAL = 60.0
DEFAULT_BACKLOG_WARNING = 1000
DEFAULT_LAG_WARNING = 1.0


class Phase(enum.Enum):
    """Where the EventLoop is in its life; diagnostics show its name."""

    RUNNING = enum.auto()
    DRAINING = enum.auto()
    STOPPING = enum.auto()
    TERMINATED = enum.auto()


@dataclass(frozen=True, slots=True)
class EventLoopMetrics:
    phase: Phase
    queue_depth: int
    max_queue_depth: int
    lag_last: float
    lag_average: float
    lag_max: float
    dispatch_count: int
    slow_dispatch_count: int
    slow_dispatch_threshold: float
    last_progress: float  # monotonic time of the last completed dispatch or idle wake-up
    backlog_warning_threshold: int
    backlog_warning_count: int
    lag_warning_threshold: float
    lagged_dispatch_count: int


class _Stop:
    """Sentinel that ends the thread's run loop."""


_STOP = _Stop()


class TimerHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    """A dedicated thread draining a FIFO of callables, with timers and batched replies."""

    # Bounded idle wait so liveness can tell a stuck loop from an idle one.
    IDLE_TICK = 0.5

    def __init__(
        self,
        *,
        slow_dispatch_threshold: float = 0.05,
        backlog_warning: int = DEFAULT_BACKLOG_WARNING,
        lag_warning: float = DEFAULT_LAG_WARNING,
        name: str = "eventloop",
    ) -> None:
        self._queue: queue.SimpleQueue[tuple[float, Callable[[], None]] | _Stop] = (
            queue.SimpleQueue()
        )
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._timers: list[tuple[float, int, TimerHandle, Callable[[], None]]] = []
        self._timer_seq = itertools.count()
        self._replies: list[Callable[[], None]] = []
        self._batch_end: list[Callable[[], None]] = []
        self._aio: asyncio.AbstractEventLoop | None = None
        self.phase = Phase.RUNNING
        self._slow = slow_dispatch_threshold
        self._lag_last = self._lag_sum = self._lag_max = 0.0
        self._max_depth = self._dispatches = self._slow_dispatches = 0
        self._last_progress = time.monotonic()
        self._backlog_threshold, self._lag_threshold = backlog_warning, lag_warning
        self._backlog_warnings = self._lagged = self._lagged_unreported = 0
        # -inf: the first crossing is always reported, however soon after the start.
        self._backlog_warned = self._lag_warned = float("-inf")

    # -- any thread ---------------------------------------------------------------------

    def start(self, aio: asyncio.AbstractEventLoop) -> None:
        self._aio = aio
        self._thread.start()

    def post(self, fn: Callable[[], None]) -> None:
        if self.phase in (Phase.STOPPING, Phase.TERMINATED):
            raise Unavailable("the server is shutting down", reason=Reason.SHUTTING_DOWN)
        self._queue.put((time.monotonic(), fn))

    def queue_depth(self) -> int:
        return self._queue.qsize()

    def stop(self, timeout: float = 10.0) -> bool:
        """Let queued work finish, then end the thread; False when it was still running
        after ``timeout`` (the commands left in its queue never ran)."""
        if self.phase is Phase.TERMINATED:
            return True
        self.phase = Phase.STOPPING
        self._queue.put(_STOP)
        if threading.current_thread() is self._thread:
            return True
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            _log.error(
                "the EventLoop did not stop within %.1fs; %d commands never ran",
                timeout,
                self._queue.qsize(),
            )
            return False
        return True

    def metrics(self) -> EventLoopMetrics:
        count = self._dispatches
        return EventLoopMetrics(
            phase=self.phase,
            queue_depth=self._queue.qsize(),
            max_queue_depth=self._max_depth,
            lag_last=self._lag_last,
            lag_average=self._lag_sum / count if count else 0.0,
            lag_max=self._lag_max,
            dispatch_count=count,
            slow_dispatch_count=self._slow_dispatches,
            slow_dispatch_threshold=self._slow,
            last_progress=self._last_progress,
            backlog_warning_threshold=self._backlog_threshold,
            backlog_warning_count=self._backlog_warnings,
            lag_warning_threshold=self._lag_threshold,
            lagged_dispatch_count=self._lagged,
        )

    # -- the loop thread only -------------------------------------------------------------

    def in_loop(self) -> bool:
        return threading.current_thread() is self._thread

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle()
        heapq.heappush(self._timers, (time.monotonic() + delay, next(self._timer_seq), handle, fn))
        return handle

    def at_batch_end(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` after every drained batch (and idle tick), before replies leave.

        Work that crosses to another thread once per batch instead of once per command
        (the writer's submissions) hooks in here.
        """
        self._batch_end.append(fn)

    def reply(self, fn: Callable[[], None]) -> None:
        """Queue ``fn`` to run on the asyncio loop when the current batch is done."""
        self._replies.append(fn)

    def _run(self) -> None:
        try:
            while True:
                timeout = self._next_timeout()
                try:
                    first = self._queue.get(timeout=timeout)
                except queue.Empty:
                    self._last_progress = time.monotonic()
                    self._run_timers()
                    self._flush_replies()
                    continue
                if not self._dispatch_batch(first):
                    break
        finally:
            self._flush_replies()
            self.phase = Phase.TERMINATED

    def _next_timeout(self) -> float:
        if not self._timers:
            return self.IDLE_TICK
        return max(0.0, min(self.IDLE_TICK, self._timers[0][0] - time.monotonic()))

    def _dispatch_batch(self, first: tuple[float, Callable[[], None]] | _Stop) -> bool:
        depth = self._queue.qsize() + 1
        self._max_depth = max(self._max_depth, depth)
        if depth >= self._backlog_threshold:
            self._warn_backlog(depth)
        item: tuple[float, Callable[[], None]] | _Stop = first
        keep_running = True
        dispatched = 0
        began = time.monotonic()
        while True:
            if isinstance(item, _Stop):
                keep_running = False
                break
            self._dispatch(*item)
            dispatched += 1
            if dispatched >= MAX_BATCH or self._last_progress - began > MAX_BATCH_SECONDS:
                break  # let timers, writes and replies through
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
        self._run_timers()
        self._flush_replies()
        return keep_running

    def _dispatch(self, enqueued: float, fn: Callable[[], None]) -> None:
        began = time.monotonic()
        lag = began - enqueued
        self._lag_last = lag
        self._lag_sum += lag
        self._lag_max = max(self._lag_max, lag)
        if lag > self._lag_threshold:
            self._warn_lag(lag, began)
        try:
            fn()
        except Exception:
            _log.exception("event loop command failed")
        ended = time.monotonic()
        self._dispatches += 1
        self._last_progress = ended
        if ended - began > self._slow:
            self._slow_dispatches += 1
            _log.warning(
                "slow event loop dispatch: %.1f ms in %s",
                (ended - began) * 1000,
                getattr(fn, "__qualname__", fn),
            )

    def _warn_backlog(self, depth: int) -> None:
        self._backlog_warnings += 1
        now = time.monotonic()
        if now - self._backlog_warned < WARNING_INTERVAL:
            return
        self._backlog_warned = now
        _log.warning(
            "EventLoop queue backlog: %d commands waiting (max %d, threshold %d); nothing "
            "is dropped, but every reply waits behind them: look for slow dispatches or a "
            "burst of calls",
            depth,
            self._max_depth,
            self._backlog_threshold,
        )

    def _warn_lag(self, lag: float, now: float) -> None:
        self._lagged += 1
        self._lagged_unreported += 1
        if now - self._lag_warned < WARNING_INTERVAL:
            return
        self._lag_warned = now
        _log.warning(
            "EventLoop queueing lag: a command waited %.3fs before it ran (threshold %.3fs; "
            "%d commands over it since the last warning, max lag %.3fs)",
            lag,
            self._lag_threshold,
            self._lagged_unreported,
            self._lag_max,
        )
        self._lagged_unreported = 0

    def _run_timers(self) -> None:
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, handle, fn = heapq.heappop(self._timers)
            if not handle.cancelled:
                self._dispatch(now, fn)

    def _flush_replies(self) -> None:
        for hook in self._batch_end:
            try:
                hook()
            except Exception:
                _log.exception("event loop batch-end hook failed")
        if not self._replies:
            return
        replies, self._replies = self._replies, []
        aio = self._aio
        if aio is None or aio.is_closed():
            return
        try:
            aio.call_soon_threadsafe(_run_all, replies)
        except RuntimeError:
            _log.debug("asyncio loop closed; dropped %d replies", len(replies))


def _run_all(replies: list[Callable[[], None]]) -> None:
    for fn in replies:
        try:
            fn()
        except Exception:
            _log.exception("reply callback failed")
