"""The skeleton every background loop of the EventLoop thread shares.

A background loop (the timer scheduler, the task sweeper, the retention purge; a schedule
of starts likewise) works in rounds: it claims work from the store (a blocking call, off
the thread), fires what it claimed, and decides when to look again: at once after a full
batch, later when idle, after ``idle_every`` when the store failed (it backs off and
counts the failure; the work stays in the store for the next round or another replica).
Apart from its rounds it counts what is waiting, every ``count_every``, for its report
(diagnostics and metrics). ``stop`` ends both; a stopped loop schedules nothing more.

One round is in flight at a time, and the thread never waits: the claim's result comes
back as a posted callable. Subclasses say what a claim is, what firing it does, and what
is counted; all the pacing is here.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Generic, TypeVar

from statewrightd import errors
from statewrightd.engine.clock import Clock
from statewrightd.engine.event_loop import EventLoop, TimerHandle
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

Claimed = TypeVar("Claimed")
Counted = TypeVar("Counted")

# Runs a blocking call off the EventLoop thread; the second callable gets its result (or
# the StatewrightError it raised) back on the thread.
Offload = Callable[[Callable[[], Any], Callable[[Any], None]], None]


@dataclass(frozen=True, slots=True)
class Background:
    """What every background loop of a server runs on."""

    loop: EventLoop
    repo: Repository
    offload: Offload
    clock: Clock


class BackgroundLoop(ABC, Generic[Claimed, Counted]):
    """EventLoop thread only, except what a subclass reports (whole-value reads)."""

    # What the logs call a round ("timer claim failed: ...").
    label: ClassVar[str]
    # The wait before the next round when there was nothing more to do, or the store failed.
    idle_every: ClassVar[float] = 1.0
    count_every: ClassVar[float] = 5.0

    def __init__(self, on: Background) -> None:
        self._loop, self._repo, self._offload, self._clock = on.loop, on.repo, on.offload, on.clock
        self._stopped = self._claiming = self._counting = False
        self._wake: TimerHandle | None = None
        self._wake_at: datetime | None = None
        self.failures = 0  # rounds the store failed

    def start(self) -> None:
        self._schedule(0.0)
        self._loop.call_later(0.0, self._count)

    def round_now(self) -> None:
        """A round now rather than at the next one scheduled: how a virtual clock that
        jumps (``statewrightd test``) has everything handled at the instant it comes due,
        whatever rounds the jump skipped."""
        self._round()

    def stop(self) -> None:
        self._stopped = True
        if self._wake is not None:
            self._wake.cancel()

    # -- rounds ----------------------------------------------------------------------

    def _schedule(self, delay: float) -> None:
        """The next round in ``delay`` seconds, instead of whenever it was due."""
        if self._stopped:
            return
        if self._wake is not None:
            self._wake.cancel()
        self._wake_at = self._clock.now() + timedelta(seconds=delay)
        self._wake = self._loop.call_later(delay, self._round)

    def _round(self) -> None:
        self._wake = self._wake_at = None
        if self._stopped or self._claiming or not self._may_claim():
            return
        self._claiming = True
        self._offload(self._claim(), self._claimed)

    def _claimed(self, result: Claimed | errors.StatewrightError) -> None:
        self._claiming = False
        if isinstance(result, errors.StatewrightError):
            self.failures += 1
            _log.warning("%s failed: %s", self.label, result)
            self._schedule(self.idle_every)
            return
        delay = self._fire(result)
        if delay is not None:
            self._schedule(delay)

    def _may_claim(self) -> bool:
        """Whether a round may claim now (a loop with enough in flight waits instead)."""
        return True

    @abstractmethod
    def _claim(self) -> Callable[[], Claimed]:
        """The blocking call that claims this round's work (built on this thread)."""

    @abstractmethod
    def _fire(self, claimed: Claimed) -> float | None:
        """Act on what a round claimed; the delay before the next round (None: something
        else schedules it)."""

    # -- counting --------------------------------------------------------------------

    def _count(self) -> None:
        if self._stopped or self._counting:
            return
        self._counting = True
        now = self._clock.now()

        def counted(result: Counted | errors.StatewrightError) -> None:
            self._counting = False
            if not isinstance(result, errors.StatewrightError):
                self._counted(result, now)
            if not self._stopped:
                self._loop.call_later(self.count_every, self._count)

        self._offload(self._counter(now), counted)

    @abstractmethod
    def _counter(self, now: datetime) -> Callable[[], Counted]:
        """The blocking call that counts what is waiting at ``now``."""

    @abstractmethod
    def _counted(self, counts: Counted, now: datetime) -> None:
        """Keep what was counted, for the report."""
