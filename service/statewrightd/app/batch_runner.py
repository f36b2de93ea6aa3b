"""The batch runner: every replica runs one, which works through one batch at a time.

Each round it leases a RUNNING batch (``claim_batch``; replicas never hold one at once)
for LEASE seconds and works on it for at most SLICE of them, then leases again (which
renews its own): a replica that dies leaves its batch to another once the lease lapses.
Work stops before the lease could lapse: an item is started only within the slice, and
each has ITEM_BUDGET seconds, so a slow one cannot outlive the lease either.

Within a slice it works in groups: it reads the batch (RUNNING, or it stops), then starts
items, in workflow id order, for at most GROUP_WINDOW seconds, at the batch's rate (a
token bucket holding one token, so never more than ``rate`` a second) and with at most
MAX_IN_FLIGHT at once (a batch never floods the EventLoop); then it records the ends
that came (``end_items``, which answers the batch as it is, so a cancel is seen there).
Since an item starts only within GROUP_WINDOW of a read that found its batch RUNNING, a
cancel that waits that long before it answers (app/batches.py) is followed by no start.

An item that fails for good ends failed; one refused for a moment (storage down, the
server busy, out of time) is left pending and tried again after the others. Each item is
applied with the request id ``batch-<id>``: an item tried twice (a replica died before
recording its end) is applied once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Final

from statewrightd import errors, visibility
from statewrightd.app.batches import DEFAULT_RATE, RUNNING
from statewrightd.app.storage import Storage
from statewrightd.context import ANONYMOUS, set_actor, set_definition_scope
from statewrightd.engine.clock import Clock
from statewrightd.store.records import BatchItemEnd, BatchRecord
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

LEASE: Final = 10.0
SLICE: Final = 3.0
ITEM_BUDGET: Final = 4.0
GROUP_WINDOW: Final = 0.5
MAX_IN_FLIGHT: Final = 8
# How long an idle runner waits before it looks for a batch again (a start on this
# replica wakes it at once), and how long it backs off after the store failed.
IDLE: Final = 2.0
# How long it waits before trying again the items refused for a moment.
RETRY_AFTER: Final = 1.0
MAX_PACERS: Final = 100

# Applies a batch's operation to one instance: how its item ended, or None when it was
# refused for a moment (it stays pending). Called in a task that has the batch's actor
# and view.
Apply = Callable[[BatchRecord, str], Awaitable[BatchItemEnd | None]]


class Pacer:
    """A token bucket of ``rate`` tokens a second that holds one: starts are at least
    1/rate seconds apart, so no second has more than ``rate`` of them."""

    def __init__(self, rate: float, now: float) -> None:
        self.rate = rate
        self._interval = 1.0 / rate
        self._next = now

    def due(self, now: float) -> float:
        """When the next start may be (``now`` or later)."""
        return max(now, self._next)

    def took(self, at: float) -> None:
        """A start was made at ``at``: the next one waits an interval."""
        self._next = max(at, self._next) + self._interval


def page_size(rate: float) -> int:
    """How many pending items a group reads: as many as it may start in its window."""
    return max(MAX_IN_FLIGHT, min(1000, int(rate * GROUP_WINDOW) + 1))


def owner_token() -> str:
    """Names this server process as a lease holder: unique among every replica's."""
    return f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class BatchRunner:
    """asyncio thread only."""

    def __init__(
        self, repo: Repository, storage: Storage, clock: Clock, apply: Apply, owner: str = ""
    ) -> None:
        self.repo, self.clock, self.apply = repo, clock, apply
        self.read = storage.read
        self.owner = owner or owner_token()
        self.stopping = False
        self.items_ended = 0  # items this replica ended (done or failed)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # Each batch's pace, kept from one slice to the next.
        self._pacers: dict[str, Pacer] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="batch-runner")

    def poke(self) -> None:
        """Look for a batch now (one was started here)."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop claiming; the items in flight finish and their ends are recorded."""
        self.stopping = True
        self._wake.set()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while not self.stopping:
            claimed_at = time.monotonic()
            try:
                batch = await self.read(self._claim)
            except errors.StatewrightError as exc:
                _log.warning("batch claim failed: %s", exc)
                batch = None
            if batch is None:
                await self._idle(IDLE)
                continue
            try:
                # A task of its own: the batch's actor and view are set for it alone.
                work = asyncio.create_task(
                    self._work(batch, claimed_at), name=f"batch-{batch.batch_id}"
                )
                if not await work:
                    await self._idle(IDLE)
            except errors.StatewrightError as exc:
                _log.warning("batch %s: its work stopped: %s", batch.batch_id, exc)
                await self._idle(IDLE)
            except Exception:
                _log.exception("batch %s: its work stopped", batch.batch_id)
                await self._idle(IDLE)

    def _claim(self) -> BatchRecord | None:
        now = self.clock.now()
        return self.repo.claim_batch(self.owner, now, now + timedelta(seconds=LEASE))

    async def _idle(self, seconds: float) -> None:
        self._wake.clear()
        if self.stopping:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _work(self, batch: BatchRecord, claimed_at: float) -> bool:
        """Work on ``batch`` for one slice of its lease; whether an item was started."""
        document = batch.document
        set_actor(str(document.get("actor") or ANONYMOUS))
        patterns = document.get("view")
        view = None if patterns is None else visibility.of_patterns("StartBatchOperation", patterns)
        visibility.limit(view)
        set_definition_scope(None if view is None else view.allows)
        pacer = self._pacers.get(batch.batch_id)
        if pacer is None:
            if len(self._pacers) >= MAX_PACERS:
                self._pacers.clear()
            rate = float(document.get("rate") or DEFAULT_RATE)
            pacer = self._pacers[batch.batch_id] = Pacer(rate, time.monotonic())
        piece = _Slice(self, batch, pacer)
        await piece.run(claimed_at, claimed_at + SLICE)
        return piece.started > 0


class _Slice:
    """One slice of work on one batch (what ``BatchRunner._work`` runs)."""

    def __init__(self, runner: BatchRunner, batch: BatchRecord, pacer: Pacer) -> None:
        self._runner = runner
        self._batch = batch
        self._id = batch.batch_id
        self._pacer = pacer
        self._page = page_size(pacer.rate)
        self._slots = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._flying: set[asyncio.Task[None]] = set()
        self._ends: list[BatchItemEnd] = []
        self._refused = 0  # items refused for a moment since the last pass over them
        self.started = 0

    async def run(self, checked: float, until: float) -> None:
        """Work until ``until`` (monotonic); ``checked``: when the batch was last read
        RUNNING (before the claim that leased it)."""
        cursor, state = "", self._batch.state
        queue: list[str] = []
        try:
            while state == RUNNING and not self._runner.stopping and time.monotonic() < until:
                if not queue:
                    queue = await self._pending(cursor)
                if not queue:
                    if not cursor and not self._refused:
                        break  # nothing pending at all: the last ends complete it below
                    cursor = ""
                    checked, state = await self._pass_over()
                    continue
                window = min(checked + GROUP_WINDOW, until)
                cursor = await self._start_group(queue, window) or cursor
                checked = time.monotonic()
                state = await self._record()
        finally:
            if self._flying:
                await asyncio.wait(self._flying)
            await self._record(force=True)

    async def _pending(self, cursor: str) -> list[str]:
        repo, batch_id, limit = self._runner.repo, self._id, self._page
        found: list[str] = await self._runner.read(
            lambda: repo.pending_items(batch_id, cursor, limit)
        )
        return found

    async def _pass_over(self) -> tuple[float, str]:
        """The end of the pending items was reached: wait for those in flight, and, after
        a pause, go over the ones refused for a moment again. When the batch was read,
        and its state."""
        if self._flying:
            await asyncio.wait(self._flying)
        if self._refused:
            self._refused = 0
            await asyncio.sleep(RETRY_AFTER)
        checked = time.monotonic()
        return checked, await self._record()

    async def _start_group(self, queue: list[str], window: float) -> str:
        """Start items of ``queue`` (taking them off it) until ``window``; the last one
        started, which the next read of pending items starts after."""
        last = ""
        while queue:
            now = time.monotonic()
            due = self._pacer.due(now)
            if due >= window:
                break
            if due > now:
                await asyncio.sleep(due - now)
            await self._slots.acquire()
            now = time.monotonic()
            if now >= window:
                self._slots.release()
                break
            self._pacer.took(now)
            last = queue.pop(0)
            self.started += 1
            task = asyncio.create_task(self._one(last))
            self._flying.add(task)
            task.add_done_callback(self._flying.discard)
        if not last:  # none was due in this window: the next group starts after it
            await asyncio.sleep(max(0.0, window - time.monotonic()))
        return last

    async def _one(self, workflow_id: str) -> None:
        try:
            end = await self._runner.apply(self._batch, workflow_id)
        finally:
            self._slots.release()
        if end is None:
            self._refused += 1
        else:
            self._ends.append(end)

    async def _record(self, *, force: bool = False) -> str:
        """Record the ends that came (``force``: even none, which completes a batch left
        with nothing pending); the batch's state as the store has it after."""
        ends, self._ends = self._ends, []
        repo, batch_id = self._runner.repo, self._id
        if ends or force:
            now = self._runner.clock.now()
            batch = await self._runner.read(lambda: repo.end_items(batch_id, ends, now))
            self._runner.items_ended += len(ends)
        else:
            batch = await self._runner.read(lambda: repo.get_batch(batch_id))
        return "" if batch is None else str(batch.state)
