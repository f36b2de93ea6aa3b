"""Flow control on task queues: their configs, and what ListQueues shows of them.

The limits themselves are kept by the store and honoured by its claim (store/flow.py),
under a lock every replica takes; this side sets and reads them, and remembers which
queues have any, so that polls of those look again when a lease may have freed (a task
ended on this replica, a token came due, a closed key opened) rather than on the next
recheck only.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, TypeVar

from statewrightd.engine.clock import Clock
from statewrightd.engine.tasks import TaskPolls
from statewrightd.store.flow import KeyCounts, KeyState, QueueConfig, StoredQueue
from statewrightd.store.records import QueueCounts
from statewrightd.store.repository import Repository

# How long the set of limited queues is trusted before it is read again: a config set on
# another replica is honoured at once by the claim (it reads the config in its own
# transaction); only the wake-ups of this replica's waiting polls learn of it this late.
KNOWN_FOR = 5.0
# A poll of a rate-limited queue that found nothing looks again after half the time one
# token takes to refill (so that a token waits for its poll half that long at most), but
# no sooner than this.
MIN_RECHECK = 0.02
DEFAULT_KEYS = 5
MAX_KEYS = 100

T = TypeVar("T")


class Reader(Protocol):
    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


@dataclass(frozen=True, slots=True)
class QueueStatus:
    queue: str
    stored: StoredQueue | None
    backlog: int
    leased: int
    oldest_waiting: float | None  # seconds
    tokens: float | None
    busiest: list[KeyCounts]
    closed: list[KeyState]


@dataclass(kw_only=True)
class QueueDesk:
    repo: Repository
    read: Reader
    clock: Clock
    polls: TaskPolls
    _known: dict[str, QueueConfig] = field(default_factory=dict)
    _known_at: float = float("-inf")

    # -- what polls ask --------------------------------------------------------------

    def limits(self, queue: str) -> QueueConfig | None:
        """The queue's config as last read (no database call)."""
        return self._known.get(queue)

    def recheck(self, queue: str, within: float) -> float:
        """How long a poll of ``queue`` that found nothing may wait before it looks again."""
        config = self._known.get(queue)
        if config is None:
            return within
        rates = [r for r in (config.rate, config.key_rate) if r]
        if rates:
            within = min(within, max(MIN_RECHECK, 0.5 / max(rates)))
        return within

    def task_ended(self, queue: str) -> None:
        """A task of ``queue`` left its lease (asyncio loop): with a limit, a slot is free."""
        if queue in self._known:
            self.polls.notify(queue)

    def key_closed(self, queue: str, until: datetime) -> None:
        self.polls.ready_at(queue, (until - self.clock.now()).total_seconds())

    async def refresh(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._known_at < KNOWN_FOR:
            return
        repo = self.repo
        stored = await self.read(repo.queue_configs)
        self._known = {s.config.queue: s.config for s in stored}
        self._known_at = time.monotonic()

    # -- the API ---------------------------------------------------------------------

    async def set_config(self, config: QueueConfig) -> QueueConfig | None:
        repo, now = self.repo, self.clock.now()
        stored = await self.read(lambda: repo.set_queue_config(config, now))
        await self.refresh(force=True)
        self.polls.notify(config.queue)  # a looser limit may let waiting polls take more
        return stored

    async def get_config(self, queue: str) -> tuple[StoredQueue | None, list[KeyState]]:
        repo, now = self.repo, self.clock.now()

        def get() -> tuple[StoredQueue | None, list[KeyState]]:
            found = repo.queue_configs(queue)
            return (found[0] if found else None), repo.closed_keys(queue, now)

        return await self.read(get)

    async def list(self, key_count: int) -> list[QueueStatus]:
        repo, now = self.repo, self.clock.now()

        def gather() -> tuple[
            list[StoredQueue], list[QueueCounts], list[KeyCounts], dict[str, list[KeyState]]
        ]:
            # Counted now, not as the sweeper last counted: a queue page shows the leases
            # a limit is judged by.
            stored = repo.queue_configs()
            closed = {s.config.queue: repo.closed_keys(s.config.queue, now) for s in stored}
            return stored, repo.queue_stats(now), repo.key_counts(now), closed

        stored, queue_counts, keys, closed = await self.read(gather)
        configs = {s.config.queue: s for s in stored}
        counts = {c.queue: c for c in queue_counts}
        by_queue: dict[str, list[KeyCounts]] = defaultdict(list)
        for k in keys:
            by_queue[k.queue].append(k)
        out = []
        for name in sorted(set(configs) | set(counts)):
            c, s = counts.get(name), configs.get(name)
            oldest = None
            if c is not None and c.oldest_ready is not None:
                oldest = max(0.0, (now - c.oldest_ready).total_seconds())
            busiest = sorted(by_queue.get(name, []), key=lambda k: (-(k.ready + k.leased), k.key))
            out.append(
                QueueStatus(
                    queue=name,
                    stored=s,
                    backlog=c.ready if c is not None else 0,
                    leased=c.leased if c is not None else 0,
                    oldest_waiting=oldest,
                    tokens=s.tokens_at(now) if s is not None and s.config.rate else None,
                    busiest=busiest[:key_count],
                    closed=closed.get(name, []),
                )
            )
        return out
