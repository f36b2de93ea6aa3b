"""Fan-out of committed steps to WatchWorkflow streams.

The EventLoop hands each committed step of a watched instance to the asyncio side in its
batched replies; the fan-out to individual watchers happens here, on the asyncio loop,
so the EventLoop's cost does not grow with the number of watchers and a slow client can
never slow it down.

Every watcher has a bounded buffer. When a buffer overflows, the watcher drops what it
buffered and catches up from the history table instead: a slow consumer loses nothing,
it just reads from the database for a while. Hints from other replicas (LISTEN/NOTIFY)
work the same way: they only say "there is something newer than you have; read history".
A hint can be lost; a periodic look at every watched instance's revision, one read for
all of them (``watched_ids``, ``recheck``), sends the watchers it missed to history.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from statewrightd import errors
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import TERMINAL
from statewrightd.engine.model import TransitionTaken
from statewrightd.engine.snapshots import record_at, timers_from_dicts, transitions_from_dicts
from statewrightd.reasons import Reason
from statewrightd.store.records import HistoryRecord, InstanceRecord, TimerRecord

DEFAULT_BUFFER = 64
HISTORY_PAGE = 256


@dataclass(slots=True, eq=False, weakref_slot=True)
class StepEvent:
    """One revision of an instance as a watcher sees it. A live step's event is shared by
    every watcher of the instance (compared by identity, so that whoever converts it can
    convert it once for all of them)."""

    record: InstanceRecord
    loaded: Loaded
    transitions: tuple[TransitionTaken, ...]
    event: str | None
    # The instance as it is when the watch began, rather than a step.
    current: bool = False
    timers: tuple[TimerRecord, ...] = ()  # armed in its state as of this revision
    actor: str | None = None  # who caused the step, when it is known
    input: dict[str, Any] | None = None  # what the step took, when it is known
    # The context at the revision before, which the step's context patch is taken from.
    # A live step's is set by the first feed that delivers it: every feed delivers the
    # revisions of an instance in order, so each would set the same one.
    before: Mapping[str, Any] | None = None


@dataclass(eq=False, slots=True)
class Subscription:
    """One watcher's state. Kept small: an idle watcher is mostly this and its stream, and
    a server holds thousands (a list, not a deque; one future, not an asyncio.Event and a
    wait_for task)."""

    workflow_id: str
    capacity: int = DEFAULT_BUFFER
    buffer: list[StepEvent] = field(default_factory=list)
    needs_catch_up: bool = False
    closed: bool = False
    # The instance was removed from the store (purged or deleted) while watched.
    gone: bool = False
    # Highest revision known to exist (delivered locally or hinted by another replica).
    latest_known: int = 0
    # Highest revision this watcher has in hand: read from history, or buffered from a
    # local step. A hint above it sends the watcher to history, even when an earlier hint
    # named the same revision: a hint can be spurious (a save whose compare-and-swap
    # failed), and the one that follows it for the revision really saved must not be lost.
    seen: int = 0
    _waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait(self) -> None:
        if self.buffer or self.needs_catch_up or self.closed or self.gone:
            return
        self._waiter = waiter = asyncio.get_running_loop().create_future()
        try:
            await waiter
        finally:
            self._waiter = None

    def take(self) -> tuple[list[StepEvent], bool]:
        events, self.buffer = self.buffer, []
        catch_up, self.needs_catch_up = self.needs_catch_up, False
        return events, catch_up


class WatchHub:
    """Subscriptions by instance; asyncio thread only (except the read in ``watched``)."""

    def __init__(self, buffer: int = DEFAULT_BUFFER, recheck_after: float | None = None) -> None:
        self._subs: dict[str, set[Subscription]] = {}
        self._buffer = buffer
        # With other replicas, how often the store is asked for the watched instances'
        # revisions: the bound on the delay a lost hint can cause. A single process
        # (SQLite) sees every step itself and never needs it.
        self.recheck_after = recheck_after
        self.catch_ups = 0
        self.closed = False
        # Read from other threads (the LISTEN thread asks whether hints are wanted).
        self.count = 0
        # Called when the first watcher arrives (the LISTEN thread's wake-up).
        self.on_first: Callable[[], None] | None = None

    def watched(self, workflow_id: str) -> bool:
        # Read from the EventLoop thread to skip unwatched instances. A race with a new
        # subscription is harmless: a subscriber registers before it reads history, so a
        # step it misses here is already committed and in the history it is about to read.
        return workflow_id in self._subs

    def subscribe(self, workflow_id: str) -> Subscription:
        sub = Subscription(workflow_id, capacity=self._buffer)
        sub.closed = self.closed
        self._subs.setdefault(workflow_id, set()).add(sub)
        self.count += 1
        if self.count == 1 and self.on_first is not None:
            self.on_first()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        subs = self._subs.get(sub.workflow_id)
        if subs is not None and sub in subs:
            subs.discard(sub)
            self.count -= 1
            if not subs:
                del self._subs[sub.workflow_id]

    def publish(self, event: StepEvent) -> None:
        for sub in self._subs.get(event.record.workflow_id, ()):
            sub.latest_known = max(sub.latest_known, event.record.revision)
            sub.seen = max(sub.seen, event.record.revision)
            if sub.needs_catch_up:
                continue  # history will have this one too
            if len(sub.buffer) >= sub.capacity:
                sub.buffer.clear()
                sub.needs_catch_up = True
                self.catch_ups += 1
            else:
                sub.buffer.append(event)
            sub.wake()

    def hint(self, hints: Iterable[tuple[str, int]]) -> None:
        for workflow_id, revision in hints:
            for sub in self._subs.get(workflow_id, ()):
                sub.latest_known = max(sub.latest_known, revision)
                if revision > sub.seen:
                    sub.needs_catch_up = True
                    sub.wake()

    def watched_ids(self) -> list[str]:
        """Every instance watched here, for a periodic look at their revisions."""
        return list(self._subs)

    def recheck(self, asked: Iterable[str], revisions: Mapping[str, int]) -> None:
        """The latest ``revisions`` of the instances ``asked`` about, as the store has
        them: a watcher behind one missed a hint and reads history; the watchers of one no
        longer stored (removed by another replica) find out, and end. One read for every
        watcher of a replica, where a look of each watcher's own at its history cost a
        thousand reads a second with ten thousand watchers."""
        self.hint(revisions.items())
        self.gone([w for w in asked if w not in revisions])

    def gone(self, workflow_ids: Iterable[str]) -> None:
        """Instances removed from the store: their watchers find out, and end."""
        for workflow_id in workflow_ids:
            for sub in self._subs.get(workflow_id, ()):
                sub.gone = True
                sub.needs_catch_up = True
                sub.wake()

    def catch_up_all(self) -> None:
        """Hints may have been lost (the listener reconnected): every watcher re-reads."""
        for subs in self._subs.values():
            for sub in subs:
                sub.needs_catch_up = True
                sub.wake()

    def close(self) -> None:
        """Server drain: every stream ends so that clients reconnect elsewhere."""
        self.closed = True
        for subs in self._subs.values():
            for sub in subs:
                sub.closed = True
                sub.wake()

    def active(self) -> int:
        return self.count


class Current(Protocol):
    """An instance as it is now: what a watch starts from."""

    @property
    def record(self) -> InstanceRecord: ...
    @property
    def loaded(self) -> Loaded: ...
    @property
    def timers(self) -> tuple[TimerRecord, ...]: ...


CurrentReader = Callable[[str], Awaitable[Current]]
HistoryReader = Callable[[str, int, int], Awaitable[list[HistoryRecord]]]


class WatchFeed:
    """Every revision of one instance, in order and once: history first, then live.

    A subscription is taken before anything is read, so no step can fall between the read
    and the subscription: whatever commits later is either in history or in the buffer.
    Live steps that skip a revision (a gap: a dropped buffer, another replica's step) are
    refilled from history. The feed ends after the instance's terminal revision, or with
    the error a read of the instance gives when history ends before a revision known to
    exist: the instance was removed (retention, DeleteWorkflow) while it was followed.
    """

    def __init__(
        self,
        hub: WatchHub,
        current: CurrentReader,
        history: HistoryReader,
        page: int = HISTORY_PAGE,
    ) -> None:
        self._hub = hub
        self._current = current
        self._history = history
        self._page = page

    async def follow(self, workflow_id: str, after: int | None) -> AsyncIterator[StepEvent]:
        """From the instance as it is (``after`` None) or after revision ``after``."""
        hub = self._hub
        if hub.closed:
            raise _shutting_down()
        sub = hub.subscribe(workflow_id)
        try:
            now = await self._current(workflow_id)
            current, loaded = now.record, now.loaded
            if after is None:
                yield StepEvent(current, loaded, (), None, current=True, timers=now.timers)
                last = current.revision
                if current.status in TERMINAL:
                    return
            else:
                last = after
                if last > current.revision:
                    raise _beyond(workflow_id, after, current.revision)
                if current.status in TERMINAL and last >= current.revision:
                    return
            sub.seen = max(sub.seen, last)
            catch_up = last < current.revision
            known = current.revision
            # The context at ``last``, the next step's patch's base (see _page_after).
            before: Mapping[str, Any] | None = (
                current.context if last == current.revision else {} if last == 0 else None
            )
            # History rows carry their own context: keep only what record_at needs of the
            # instance.
            base = dataclasses.replace(current, context={}, error=None)
            while True:
                if catch_up:
                    rows, before = await self._page_after(workflow_id, last, before)
                    for row in rows:
                        transitions = transitions_from_dicts(row.transitions)
                        armed = timers_from_dicts(workflow_id, row.revision, row.timers)
                        yield StepEvent(
                            record_at(row, base),
                            loaded,
                            transitions,
                            row.event,
                            timers=armed,
                            actor=row.actor,
                            input=row.input,
                            before=before,
                        )
                        before = row.context
                        last = row.revision
                        sub.seen = max(sub.seen, last)
                        # A finished revision that a repair (retry, reset) stepped on
                        # from is not the end: only the latest known one is.
                        if row.status in TERMINAL and last >= max(known, sub.latest_known):
                            return
                    if len(rows) >= self._page:
                        continue
                    if sub.gone or last < max(known, sub.latest_known):
                        # History ends before a revision that exists: the instance was
                        # removed. Reading it says how (NOT_FOUND, expired or not).
                        sub.gone = False
                        known = (await self._current(workflow_id)).record.revision
                if sub.closed:
                    raise _shutting_down()
                await sub.wait()
                events, catch_up = sub.take()
                for event in events:
                    revision = event.record.revision
                    if revision <= last:
                        continue  # already delivered from history
                    if revision != last + 1:
                        catch_up = True  # a gap: history has what is missing
                        break
                    if event.before is None:
                        event.before = before
                    yield event
                    before = event.record.context
                    last = revision
                    if event.record.status in TERMINAL:
                        return
        finally:
            hub.unsubscribe(sub)

    async def _page_after(
        self, workflow_id: str, last: int, before: Mapping[str, Any] | None
    ) -> tuple[list[HistoryRecord], Mapping[str, Any] | None]:
        """The next page of history after revision ``last``, and the context at ``last``
        (``before``), which the first row's context patch is taken from. When it is not
        known yet the same read takes the row at ``last`` too. An idle watcher keeps this
        one context: after a live step it is the very dict the instance's cached session
        holds; only after a read of history is it a copy of its own."""
        if before is not None:
            return await self._history(workflow_id, last, self._page), before
        rows = await self._history(workflow_id, last - 1, self._page + 1)
        if rows and rows[0].revision == last:
            return rows[1:], rows[0].context
        return rows, None


def _shutting_down() -> errors.Unavailable:
    return errors.Unavailable(
        "the server is shutting down; reconnect with after_revision set to the last "
        "revision received",
        reason=Reason.SHUTTING_DOWN,
    )


def _beyond(workflow_id: str, after: int, current: int) -> errors.OutOfRange:
    # A revision no step has written: no reader of this database can have seen it, so
    # waiting for it would only hang a confused caller.
    return errors.OutOfRange(
        f"workflow {workflow_id} is at revision {current}; after_revision {after} does not "
        "exist yet",
        reason=Reason.REVISION_OUT_OF_RANGE,
        metadata={"workflow_id": workflow_id, "after_revision": after, "current_revision": current},
    )
