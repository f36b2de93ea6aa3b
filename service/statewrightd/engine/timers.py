"""The timer scheduler: claims due timers from the store and fires each one as a step.

Every replica runs one, on its EventLoop thread. It claims due timers in batches through
the database (a claim is a lease: a replica that dies or stalls holding one loses it
within ``LEASE``), and submits a ``TimerCommand`` per claimed timer to the runtime, which
runs it like any step. Which replica claims a timer never decides whether it fires: the
step's compare-and-swap does, and saves only while the timer is still armed, so a timer
fires at most once whatever the races; and a timer stays in the table until a step fires,
consumes or disarms it, so every armed timer fires eventually.

It looks again as soon as it knows of an earlier due time (its own claim query's answer,
or a timer this replica just armed), and at least every ``LOOK_EVERY`` seconds for the
timers other replicas arm.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from statewrightd import errors
from statewrightd.domain import TIMER_ACTOR
from statewrightd.engine.answers import Outcome, Result
from statewrightd.engine.background import Background, BackgroundLoop
from statewrightd.engine.commands import TimerCommand
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.store.records import TimerRecord

_log = logging.getLogger(__name__)

BATCH = 256
LEASE = timedelta(seconds=5)
LOOK_EVERY = 1.0
_LAG_WINDOW = 4096

Submit = Callable[[TimerCommand, Callable[[Result], None]], None]
# What a round claims: the timers, and when the next unclaimed one is due (None after a
# full batch: more are due now).
_Claim = tuple[list[TimerRecord], datetime | None]


@dataclass(frozen=True, slots=True)
class TimerStats:
    armed: int  # in the database, every replica's, as of counted_time
    overdue: int
    counted_time: datetime | None
    fired: int  # by this replica
    consumed: int
    lag_p50: float  # seconds past the due time at which this replica fired, recently
    lag_p99: float
    in_flight: int


class TimerScheduler(BackgroundLoop[_Claim, tuple[int, int]]):
    """EventLoop thread only, except ``stats`` (a snapshot read from any thread)."""

    label = "timer claim"
    idle_every = LOOK_EVERY

    def __init__(
        self,
        on: Background,
        *,
        submit: Submit,
        observer: StepObserver | None = None,
    ) -> None:
        super().__init__(on)
        self._observer: StepObserver = observer or Unobserved()
        self._submit = submit
        self._more_due = False  # the last claim was a full batch
        self._in_flight = 0
        self._fired = 0
        self._consumed = 0
        self._lags: deque[float] = deque(maxlen=_LAG_WINDOW)
        self._counts: tuple[int, int, datetime | None] = (0, 0, None)

    def armed(self, timers: tuple[TimerRecord, ...]) -> None:
        """This replica committed a step that armed ``timers``: wake early for them."""
        if not timers:
            return
        due = min(t.due_time for t in timers)
        if self._wake_at is None or due < self._wake_at:
            self._schedule(max(0.0, (due - self._clock.now()).total_seconds()))

    def stats(self) -> TimerStats:
        lags = sorted(self._lags)
        armed, overdue, counted = self._counts
        return TimerStats(
            armed=armed,
            overdue=overdue,
            counted_time=counted,
            fired=self._fired,
            consumed=self._consumed,
            lag_p50=_percentile(lags, 0.50),
            lag_p99=_percentile(lags, 0.99),
            in_flight=self._in_flight,
        )

    # -- looking for due timers ------------------------------------------------------

    def _may_claim(self) -> bool:
        if self._in_flight >= BATCH:
            self._more_due = True  # the fired steps' answers look again as they get through
            return False
        return True

    def _claim(self) -> Callable[[], _Claim]:
        repo, now = self._repo, self._clock.now()
        limit = BATCH - self._in_flight

        def claim() -> _Claim:
            claimed = repo.claim_timers(now, now + LEASE, limit)
            # A full batch means more are due: no need to ask when the next one is.
            upcoming = None if len(claimed) == limit else repo.next_timer_due(now)
            return claimed, upcoming

        return claim

    def _fire(self, claimed: _Claim) -> float | None:
        timers, upcoming = claimed
        self._more_due = bool(timers) and upcoming is None
        for timer in timers:
            self._fire_one(timer)
        if self._more_due:
            return None  # a full batch: _answered looks again as the steps get through
        delay = LOOK_EVERY
        if upcoming is not None:
            delay = min(delay, max(0.0, (upcoming - self._clock.now()).total_seconds()))
        return delay

    def _fire_one(self, timer: TimerRecord) -> None:
        command = TimerCommand.of(timer, TIMER_ACTOR)
        self._in_flight += 1
        # The runtime answers a step on this thread: the answer is counted right here.
        self._submit(command, lambda result: self._answered(command, result))

    def _answered(self, command: TimerCommand, result: Result) -> None:
        self._in_flight -= 1
        if isinstance(result, Outcome) and result.saved:
            self._fired += 1
            lag = max(0.0, (self._clock.now() - command.due_time).total_seconds())
            self._lags.append(lag)
            self._observer.timer_fired(lag)
        elif isinstance(result, Outcome):
            self._consumed += 1
        elif isinstance(result, errors.StatewrightError) and not isinstance(
            result, errors.TimerGone | errors.FailedPrecondition | errors.NotFound
        ):
            # Busy, or storage trouble: the claim lapses and the timer is claimed again.
            _log.info("timer %s of %s not fired: %s", command.timer_id, command.workflow_id, result)
        through = self._in_flight <= BATCH // 2
        if self._more_due and through and self._wake is None and not self._claiming:
            self._more_due = False
            self._schedule(0.0)  # half a full batch is through: claim more of what is due

    # -- counting --------------------------------------------------------------------

    def _counter(self, now: datetime) -> Callable[[], tuple[int, int]]:
        repo = self._repo
        return lambda: repo.timer_counts(now)

    def _counted(self, counts: tuple[int, int], now: datetime) -> None:
        self._counts = (counts[0], counts[1], now)


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]
