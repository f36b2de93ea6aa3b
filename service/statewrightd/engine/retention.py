"""Retention: what the database keeps is bounded by time, not by how long the server runs.

``RetentionPurger`` runs on the EventLoop thread of every replica, like the timer scheduler
and the task sweeper, and offloads its store calls. A round removes, each in a bounded
batch of its own transaction:

- finished instances whose expire_time has passed (the step that finished each one set
  it: its finish time plus its definition's retention, or the server's), with their
  history, timers, tasks and request records, leaving a tombstone for each;
- request records older than the request window, which answer no retry any more;
- tombstones older than the request window;
- finished batch operations, each with its items, once they ended longer ago than the
  server's retention and the request window (a retried start of a batch finds it while
  its request id could still be retried), looked for once a minute.

Replicas coordinate through the database: a batch takes its rows ``FOR UPDATE SKIP
LOCKED``, so two replicas purging at once remove different rows, and neither waits for
the other. Live instances are never touched: only a finishing step sets an expire_time,
and the store removes finished instances only, so the purge cannot race a step.

Throttled: one batch in flight per replica, and after a full batch (more is due) the next
waits at least as long as the last one took, so the purge holds a database connection at
most half the time and never a lock for long. When a round finds less than a batch, it
looks again after ``IDLE_EVERY``; when it found nothing at all, after ``EMPTY_EVERY``, or
after the retention or the request window if either is shorter (never sooner than
``IDLE_EVERY``): a server that keeps rows for seconds removes them within seconds.
What it removed is counted, with what is overdue (read every ``COUNT_EVERY``):
diagnostics and metrics show both.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from statewrightd.engine.background import Background, BackgroundLoop
from statewrightd.store.records import Purged, RetentionCounts

_log = logging.getLogger(__name__)

BATCH = 500
IDLE_EVERY = 1.0
# After a round that removed nothing. Three transactions a second were a fifth of what an
# idle server asked of its database; what comes due meanwhile is removed a few seconds
# later, which nobody sees: a finished instance past its expire time reads as it was.
EMPTY_EVERY = 10.0
MIN_PAUSE = 0.05
PAUSE_FACTOR = 1.0  # the pause after a full batch, as a multiple of the batch's duration
COUNT_EVERY = 5.0
# Finished batch operations are few and kept for days: an idle server looks for them once
# a minute (and at once again after a full purge), not in every round.
BATCHES_EVERY = 60.0

Removed = Callable[[tuple[str, ...]], None]


@dataclass(frozen=True, slots=True)
class RetentionStats:
    retention: float  # the server's default, seconds (math.inf: for ever)
    request_window: float  # seconds
    rows_purged: dict[str, int] = field(default_factory=dict)  # by table, by this replica
    tombstones_purged: int = 0
    # Purge rounds this replica ran: three bounded purges each, and batches' once a minute.
    rounds: int = 0
    failures: int = 0
    last_run: datetime | None = None  # when this replica's last round ended
    last_round_seconds: float = 0.0
    # As the database last counted (every replica's rows), at counted_time:
    overdue_instances: int = 0
    oldest_instance_due: datetime | None = None
    overdue_requests: int = 0
    oldest_request_time: datetime | None = None
    counted_time: datetime | None = None


@dataclass(frozen=True, slots=True)
class _Round:
    instances: Purged
    requests: int
    tombstones: int
    batches: Purged
    seconds: float
    ended: datetime


class RetentionPurger(BackgroundLoop[_Round, RetentionCounts]):
    """EventLoop thread only, except ``stats`` (a snapshot read from any thread)."""

    label = "retention purge"
    idle_every = IDLE_EVERY
    count_every = COUNT_EVERY

    def __init__(
        self,
        on: Background,
        *,
        retention: float,
        request_window: float,
        removed: Removed,
        batch: int = BATCH,
    ) -> None:
        """``removed`` is told, on this thread, of the instances each batch removed."""
        super().__init__(on)
        self._retention = retention
        self._window = timedelta(seconds=request_window)
        keep = max(retention, request_window)
        self._batches_kept = None if math.isinf(keep) else timedelta(seconds=keep)
        self._batches_due: datetime | None = None  # the next batch purge (None: now)
        self._removed = removed
        self._batch = batch
        self._empty_every = max(IDLE_EVERY, min(EMPTY_EVERY, retention, request_window))
        self._rows: dict[str, int] = {}
        self._tombstones = 0
        self._rounds = 0
        self._last_run: datetime | None = None
        self._last_seconds = 0.0
        self._counts: tuple[RetentionCounts, datetime] | None = None

    def stats(self) -> RetentionStats:
        counts, counted = self._counts if self._counts is not None else (None, None)
        return RetentionStats(
            retention=self._retention,
            request_window=self._window.total_seconds(),
            rows_purged=dict(self._rows),
            tombstones_purged=self._tombstones,
            rounds=self._rounds,
            failures=self.failures,
            last_run=self._last_run,
            last_round_seconds=self._last_seconds,
            overdue_instances=counts.overdue_instances if counts else 0,
            oldest_instance_due=counts.oldest_instance_due if counts else None,
            overdue_requests=counts.overdue_requests if counts else 0,
            oldest_request_time=counts.oldest_request_time if counts else None,
            counted_time=counted,
        )

    # -- purging ---------------------------------------------------------------------

    def _claim(self) -> Callable[[], _Round]:
        repo, clock, batch, window = self._repo, self._clock, self._batch, self._window
        batches_kept = self._batches_kept
        asked = clock.now()
        if self._batches_due is not None and asked < self._batches_due:
            batches_kept = None
        else:
            self._batches_due = asked + timedelta(seconds=BATCHES_EVERY)

        def purge() -> _Round:
            began = time.monotonic()
            now = clock.now()
            instances = repo.purge_expired(now, batch)
            requests = repo.purge_requests(now - window, batch)
            tombstones = repo.purge_tombstones(now - window, batch)
            batches = Purged()
            if batches_kept is not None:
                batches = repo.purge_batches(now - batches_kept, batch)
            return _Round(
                instances, requests, tombstones, batches, time.monotonic() - began, clock.now()
            )

        return purge

    def _fire(self, claimed: _Round) -> float | None:
        removed = claimed.instances
        self._rounds += 1
        for table, count in [*removed.rows.items(), *claimed.batches.rows.items()]:
            self._rows[table] = self._rows.get(table, 0) + count
        # Request records the window expired, apart from those removed with instances.
        self._rows["workflow_requests"] = self._rows.get("workflow_requests", 0) + claimed.requests
        self._tombstones += claimed.tombstones
        self._last_run, self._last_seconds = claimed.ended, claimed.seconds
        if removed.workflow_ids:
            try:
                self._removed(removed.workflow_ids)
            except Exception:
                _log.exception("telling of %d removed instances failed", len(removed.workflow_ids))
        batch_rows = sum(claimed.batches.rows.values())
        if batch_rows >= self._batch:
            self._batches_due = None
        full = (
            max(len(removed.workflow_ids), claimed.requests, claimed.tombstones, batch_rows)
            >= self._batch
        )
        if full:
            # More is due: go on, but leave the database at least as long as this took.
            return max(MIN_PAUSE, claimed.seconds * PAUSE_FACTOR)
        if removed.workflow_ids or claimed.requests or claimed.tombstones or batch_rows:
            return IDLE_EVERY
        return self._empty_every

    # -- counting --------------------------------------------------------------------

    def _counter(self, now: datetime) -> Callable[[], RetentionCounts]:
        repo, window = self._repo, self._window
        return lambda: repo.retention_counts(now, now - window)

    def _counted(self, counts: RetentionCounts, now: datetime) -> None:
        self._counts = (counts, now)
