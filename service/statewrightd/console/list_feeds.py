"""The list streams' pages, read once for every stream that asks for the same listing.

A list stream (``GET /api/v1/workflows:watch``) sends a ListWorkflows page, again whenever
it changes, and how many instances match. Each stream following its own copy made its
cost grow with its count and with the size of the page: every stream read the page every
second the server stepped, and held the page it last sent. Here one feed per distinct
listing reads it, and keeps the one copy its streams send; a stream holds two counters.
One reader refreshes the feeds one at a time, at most ``REFRESHES_PER_SECOND`` reads a
second in all, so however many list streams are open, they add at most that many reads
(a busy server with many distinct listings refreshes each less often, never the other
way round).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from statewright.v1 import workflow_service_pb2 as pb

_log = logging.getLogger(__name__)

# A feed looks for new steps this often, and reads again at least this often (steps of
# other server processes are not counted here).
TICK_SECONDS = 1.0
IDLE_REFRESH_SECONDS = 5.0
REFRESHES_PER_SECOND = 20.0

Reader = Callable[[pb.ListWorkflowsRequest], Awaitable[tuple[str, str]]]


@dataclass(eq=False, slots=True)
class Feed:
    """One listing: its latest page and count as JSON, each with a version that grows
    when it changes."""

    key: bytes
    request: pb.ListWorkflowsRequest
    page: str
    count: str
    steps: int
    page_version: int = 1
    count_version: int = 1
    subscribers: int = 0
    refreshed: float = field(default_factory=time.monotonic)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def update(self, page: str, count: str) -> None:
        moved = False
        if page != self.page:
            self.page, self.page_version, moved = page, self.page_version + 1, True
        if count != self.count:
            self.count, self.count_version, moved = count, self.count_version + 1, True
        if moved:
            changed, self.changed = self.changed, asyncio.Event()
            changed.set()


class ListFeeds:
    """Every open listing, refreshed by one task while any stream follows it."""

    def __init__(self, read: Reader, steps: Callable[[], int], closing: asyncio.Event) -> None:
        self._read = read
        self._steps = steps
        self._closing = closing
        self._feeds: dict[bytes, Feed] = {}
        self._task: asyncio.Task[None] | None = None
        self.refreshes = 0  # reads made for feeds, for tests and diagnostics

    @staticmethod
    def key(request: pb.ListWorkflowsRequest) -> bytes:
        return request.SerializeToString(deterministic=True)

    async def join(self, request: pb.ListWorkflowsRequest) -> Feed:
        """The feed of ``request``'s listing; a new one reads the listing first (and a
        listing that cannot be read, a bad filter, raises here)."""
        key = self.key(request)
        feed = self._feeds.get(key)
        if feed is None:
            steps = self._steps()
            page, count = await self._read(request)
            # Another stream of the listing may have made it meanwhile.
            feed = self._feeds.get(key)
            if feed is None:
                feed = self._feeds[key] = Feed(key, request, page, count, steps)
                if self._task is None or self._task.done():
                    self._task = asyncio.create_task(self._run(), name="console-list-feeds")
        feed.subscribers += 1
        return feed

    def leave(self, feed: Feed) -> None:
        feed.subscribers -= 1
        if feed.subscribers <= 0:
            self._feeds.pop(feed.key, None)

    @property
    def open(self) -> int:
        return len(self._feeds)

    async def close(self) -> None:
        for feed in self._feeds.values():
            feed.changed.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        spacing = 1.0 / REFRESHES_PER_SECOND
        while self._feeds and not self._closing.is_set():
            steps = self._steps()
            now = time.monotonic()
            due = [
                f
                for f in self._feeds.values()
                if f.steps != steps or now - f.refreshed >= IDLE_REFRESH_SECONDS
            ]
            for feed in sorted(due, key=lambda f: f.refreshed):
                if feed.key not in self._feeds or self._closing.is_set():
                    continue
                started = time.monotonic()
                await self._refresh(feed, steps)
                # Paced: list streams never take the server's storage from its calls.
                await asyncio.sleep(max(0.0, spacing - (time.monotonic() - started)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), TICK_SECONDS)
        if self._closing.is_set():
            for feed in self._feeds.values():
                feed.changed.set()

    async def _refresh(self, feed: Feed, steps: int) -> None:
        feed.steps, feed.refreshed = steps, time.monotonic()
        self.refreshes += 1
        try:
            page, count = await self._read(feed.request)
        except Exception as exc:  # a read missed is a late update; the next tick reads again
            _log.debug("list stream refresh failed: %s", exc)
            feed.steps = -1
            return
        feed.update(page, count)
