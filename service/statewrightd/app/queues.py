"""Flow control on task queues: their configs, and what ListQueues shows of them.

The limits themselves are kept by the store and honoured by its claim (store/flow.py),
under a lock every replica takes; this side sets and reads them, and remembers which
queues have any, so that polls of those look again when a lease may have freed (a task
ended on this replica, a token came due, a closed key opened) rather than on the next
recheck only.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import yaml

from statewrightd import errors
from statewrightd.app.storage import Reader
from statewrightd.definitions.files import is_queues_file
from statewrightd.definitions.model import QUEUE_NAME
from statewrightd.engine.clock import Clock
from statewrightd.engine.tasks import TaskPolls
from statewrightd.reasons import Reason
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


# A queue's limits: counts of tasks, and tasks a second.
MAX_LIMIT = 1_000_000
MAX_RATE = 100_000.0
COUNTS = ("max_leased", "burst", "key_max_leased", "key_burst")
RATES = ("rate", "key_rate")


def checked_config(queue: str, values: Mapping[str, object], where: str) -> QueueConfig:
    """A queue's config from its named limits, each checked (``where`` names the field's
    parent in messages: ``config`` for the API, a file's path for a queues file)."""
    if not isinstance(queue, str) or not QUEUE_NAME.match(queue):
        raise errors.InvalidArgument(
            f"{where}: a queue name must match [a-z][a-z0-9-.]{{0,62}}; got {queue!r}",
            reason=Reason.INVALID_FIELD,
            metadata={"field": f"{where}.queue"},
        )
    limits: dict[str, float] = {}
    for name, value in values.items():
        field_name = f"{where}.{name}"
        if name in COUNTS:
            ok = isinstance(value, int) and not isinstance(value, bool)
            ok = ok and 0 <= value <= MAX_LIMIT  # type: ignore[operator]
            rule = f"a whole number from 0 (none) to {MAX_LIMIT:,}"
        elif name in RATES:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
            ok = ok and math.isfinite(value) and 0 <= value <= MAX_RATE  # type: ignore[arg-type,operator]
            rule = f"tasks a second, from 0 (none) to {MAX_RATE:,.0f}"
        else:
            known = ", ".join(COUNTS[:1] + RATES[:1] + COUNTS[1:] + RATES[1:])
            raise errors.InvalidArgument(
                f"{field_name}: unknown limit; a queue takes {known}",
                reason=Reason.INVALID_FIELD,
                metadata={"field": field_name},
            )
        if not ok:
            raise errors.InvalidArgument(
                f"{field_name} must be {rule}; got {value!r}",
                reason=Reason.INVALID_FIELD,
                metadata={"field": field_name},
            )
        limits[name] = value  # type: ignore[assignment]
    return QueueConfig(queue, **limits)  # type: ignore[arg-type]


def read_queue_files(directory: Path) -> list[QueueConfig]:
    """The queue configs of a definitions directory's queues files, by queue. Each file is
    a map ``queues: {name: {max_leased: 5, rate: 20, ...}}``; a queue in two files, or a
    file that does not read, is refused with its path."""
    found: dict[str, tuple[QueueConfig, Path]] = {}
    for path in sorted(p for p in directory.iterdir() if p.is_file() and is_queues_file(p)):
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise errors.InvalidArgument(
                f"{path}: cannot read it: {exc}", reason=Reason.INVALID_FIELD
            ) from None
        queues = doc.get("queues") if isinstance(doc, dict) else None
        if not isinstance(queues, dict) or set(doc) != {"queues"}:
            raise errors.InvalidArgument(
                f"{path}: a queues file is a map with one key, queues: a map of queue "
                "names to their limits",
                reason=Reason.INVALID_FIELD,
            )
        for name, limits in queues.items():
            where = f"{path}: queues.{name}"
            if not isinstance(limits, dict):
                raise errors.InvalidArgument(
                    f"{where} must be a map of limits", reason=Reason.INVALID_FIELD
                )
            if name in found:
                raise errors.InvalidArgument(
                    f"{where}: also set in {found[name][1]}", reason=Reason.INVALID_FIELD
                )
            found[name] = (checked_config(name, limits, where), path)
    return [config for _, (config, _) in sorted(found.items())]


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

    def known(self) -> list[QueueConfig]:
        """Every queue's config as last read (from any thread: one whole-value read)."""
        return list(self._known.values())

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

    async def apply_files(self, directory: Path) -> list[QueueConfig]:
        """Set the configs of the directory's queues files (at start): the files win over
        what the API set before; a queue they do not name keeps its config."""
        configs = await asyncio.to_thread(read_queue_files, directory)
        for config in configs:
            await self.set_config(config)
        return configs

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
