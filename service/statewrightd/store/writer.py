"""Group commit: one background thread turns concurrent saves into batched transactions.

There is no timer: while one batch commits, the next one accumulates, so batches grow
with load and a lone save is never delayed. ``submit`` never blocks — the event loop
calls it — and refuses with ``Overloaded`` when the queue is full.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from statewrightd.errors import (
    Conflict,
    OutcomeUnknown,
    Overloaded,
    StorageUnavailable,
    StoreError,
)
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord, Operation
from statewrightd.store.repository import Repository

log = logging.getLogger(__name__)

Callback = Callable[[InstanceRecord | StoreError], None]
Outcomes = list[InstanceRecord | StoreError]
# Runs one group-commit transaction, ``apply(ops)``, for whoever observes the store
# (spans, metrics); the composition root passes one in, so the store knows no telemetry.
BatchObserver = Callable[[Callable[[list[Operation]], Outcomes], list[Operation]], Outcomes]


def unobserved(apply: Callable[[list[Operation]], Outcomes], ops: list[Operation]) -> Outcomes:
    return apply(ops)


_LATENCY_WINDOW = 4096  # recent saves kept for percentiles: bounded memory, current view


@dataclass(frozen=True, slots=True)
class WriterStats:
    queue_depth: int
    batches: int
    saves: int
    mean_batch_size: float
    latency_p50_ms: float
    latency_p99_ms: float
    conflicts: int
    unknown_outcomes: int
    failures: int
    running: bool


@dataclass(slots=True)
class _Pending:
    op: Operation
    callback: Callback
    enqueued: float


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, round(fraction * (len(sorted_values) - 1)))
    return sorted_values[index]


class GroupCommitWriter:
    def __init__(
        self,
        repo: Repository,
        *,
        max_queue: int = 10_000,
        max_batch: int = 256,
        post: Callable[[Callable[[], None]], None] | None = None,
        observe: BatchObserver = unobserved,
    ) -> None:
        """``post``, when given, carries each batch's callbacks to another thread in one
        hand-off (the EventLoop's ``post``); without it they run on the writer thread.
        ``observe`` runs each batch's transaction."""
        if max_queue < 1 or max_batch < 1:
            raise ValueError("max_queue and max_batch must be positive")
        self._repo = repo
        self._post = post
        self._observe = observe
        self._max_queue = max_queue
        self._max_batch = max_batch
        self._queue: collections.deque[_Pending] = collections.deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._accepting = False
        self._stopping = False
        self._drain = True
        self._batches = 0
        self._saves = 0
        self._conflicts = 0
        self._unknown = 0
        self._failures = 0
        self._latencies: collections.deque[float] = collections.deque(maxlen=_LATENCY_WINDOW)

    def start(self) -> None:
        with self._cond:
            if self._thread is not None:
                raise RuntimeError("writer already started")
            self._accepting = True
            self._thread = threading.Thread(
                target=self._run, name="statewright-group-commit", daemon=True
            )
            self._thread.start()

    def submit(self, op: Operation, callback: Callback) -> None:
        """Queue ``op``; ``callback`` later runs with the outcome (see ``post``)."""
        refusal = self.submit_many([(op, callback)])[0]
        if refusal is not None:
            raise refusal

    def submit_many(self, items: list[tuple[Operation, Callback]]) -> list[StoreError | None]:
        """Queue several operations with one wake-up of the writer thread.

        Returns, per item, None (queued) or why it was refused (the queue is full, or the
        writer is stopping); a refused item's callback is never called.
        """
        with self._cond:
            if self._stopping:
                stopped = StorageUnavailable("the writer is stopping", reason=Reason.WRITER_STOPPED)
                return [stopped for _ in items]
            now = time.monotonic()
            refusals: list[StoreError | None] = []
            for op, callback in items:
                if len(self._queue) >= self._max_queue:
                    refusals.append(
                        Overloaded(
                            f"persistence queue is full ({self._max_queue} saves pending)",
                            metadata={"queue_depth": len(self._queue)},
                        )
                    )
                else:
                    self._queue.append(_Pending(op, callback, now))
                    refusals.append(None)
            if None in refusals:
                self._cond.notify()
            return refusals

    def stop(self, drain: bool = True, timeout: float = 30.0) -> bool:
        """Stop accepting saves; with ``drain`` finish queued ones, else fail them.

        False when a drain did not finish: the thread outlived ``timeout`` or saves were
        left that it never wrote (their callers got WRITER_STOPPED, nothing acknowledged).
        """
        with self._cond:
            self._stopping = True
            self._accepting = False
            self._drain = drain
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        stuck = thread is not None and thread.is_alive()
        # Never started, or stopped without draining: answer everything still queued.
        with self._cond:
            leftovers = list(self._queue)
            self._queue.clear()
        for pending in leftovers:
            self._deliver(
                pending, StorageUnavailable("the writer stopped", reason=Reason.WRITER_STOPPED)
            )
        if drain and (stuck or leftovers):
            log.error(
                "the writer did not drain: %s, %d saves never written (answered WRITER_STOPPED)",
                f"still writing after {timeout:.1f}s" if stuck else "stopped",
                len(leftovers),
            )
            return False
        return True

    def stats(self) -> WriterStats:
        with self._cond:
            latencies = sorted(self._latencies)
            return WriterStats(
                queue_depth=len(self._queue),
                batches=self._batches,
                saves=self._saves,
                mean_batch_size=self._saves / self._batches if self._batches else 0.0,
                latency_p50_ms=_percentile(latencies, 0.50) * 1000,
                latency_p99_ms=_percentile(latencies, 0.99) * 1000,
                conflicts=self._conflicts,
                unknown_outcomes=self._unknown,
                failures=self._failures,
                running=self._thread is not None and self._thread.is_alive(),
            )

    def _next_batch(self) -> list[_Pending] | None:
        with self._cond:
            while not self._queue:
                if self._stopping:
                    return None
                self._cond.wait()
            if self._stopping and not self._drain:
                return None
            count = min(self._max_batch, len(self._queue))
            return [self._queue.popleft() for _ in range(count)]

    def _run(self) -> None:
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._commit(batch)

    def commit_queued(self) -> int:
        """Commit every queued save on the calling thread, a batch at a time, and return
        how many there were: how a writer that was never started (the scenario runner's,
        which runs without threads) does what its thread would."""
        count = 0
        while True:
            with self._cond:
                if not self._queue:
                    return count
                size = min(self._max_batch, len(self._queue))
                batch = [self._queue.popleft() for _ in range(size)]
            self._commit(batch)
            count += len(batch)

    def _commit(self, batch: list[_Pending]) -> None:
        """One group-commit transaction, counted, its outcomes delivered."""
        results = self._observe(self._apply, [p.op for p in batch])
        done = time.monotonic()
        with self._cond:
            self._batches += 1
            self._saves += len(batch)
            for pending, result in zip(batch, results, strict=True):
                self._latencies.append(done - pending.enqueued)
                if isinstance(result, Conflict):
                    self._conflicts += 1
                elif isinstance(result, OutcomeUnknown):
                    self._unknown += 1
                elif isinstance(result, StoreError):
                    self._failures += 1
        self._deliver_batch(batch, results)

    def _deliver_batch(
        self, batch: list[_Pending], results: list[InstanceRecord | StoreError]
    ) -> None:
        def deliver_all() -> None:
            for pending, result in zip(batch, results, strict=True):
                self._deliver(pending, result)

        if self._post is not None:
            try:
                self._post(deliver_all)
                return
            except Exception:
                # The receiving thread is gone (shutdown): the callbacks still run, here.
                log.debug("writer could not post a batch's callbacks; running them here")
        deliver_all()

    def _apply(self, ops: list[Operation]) -> list[InstanceRecord | StoreError]:
        try:
            return self._repo.apply_batch(ops)
        except StoreError as exc:
            return [exc for _ in ops]
        except Exception as exc:
            # The thread must survive a bug in one batch; every caller still gets an answer.
            log.exception("group commit batch failed")
            error = StoreError(f"batch failed: {exc}", reason=Reason.STORE_ERROR)
            return [error for _ in ops]

    @staticmethod
    def _deliver(pending: _Pending, result: InstanceRecord | StoreError) -> None:
        try:
            pending.callback(result)
        except Exception:
            log.exception("writer callback raised; ignoring")
