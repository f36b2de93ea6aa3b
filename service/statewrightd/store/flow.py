"""Flow control on a task queue: which ready tasks one poll may lease.

A queue with a config (``QueueConfig``) is claimed under its config row's lock, so every
replica's polls of it take turns and each sees the leases the one before it made. The
claim counts the queue's leased tasks (in all and by concurrency key), reads what it knows
of the keys (their token buckets, when each was last served, until when a worker closed
it) and a window of ready tasks, and ``plan_claim`` picks among them:

- a task is never leased when that would put more than ``max_leased`` of the queue, or
  more than ``key_max_leased`` of its key, under lease, or spend a token its queue's or
  its key's bucket does not hold, or while its key is closed;
- the order is priority first (1 before 5), then round robin between the keys (a key's
  first task before any key's second; among equals, the key served longest ago first),
  then the time the task became ready;
- priorities age: a task's priority counts one better for every ``AGING`` seconds it has
  waited, down to 1. A task of priority p therefore waits behind tasks that became ready
  later only for (p - 1) x ``AGING`` seconds at most: after that it ranks with the first.

Every backend brings the same inputs (the SQL ones from a few index-range queries), so
the rules are written once, here.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from statewrightd.store.records import TaskRecord

# Seconds of waiting that raise a task's priority by one (see the module's docstring).
AGING = 10.0
# The ready tasks of each priority a limited claim looks at (oldest first), besides
# those of keys that cannot take one now.
WINDOW = 128
# A queue config's limits, by the names the API, the tables and the queues files share.
LIMITS = ("max_leased", "rate", "burst", "key_max_leased", "key_rate", "key_burst")
_EPOCH = datetime.min


@dataclass(frozen=True, slots=True)
class QueueConfig:
    """A queue's limits; zero means none."""

    queue: str
    max_leased: int = 0
    rate: float = 0.0  # tasks a second
    burst: int = 0  # the bucket's size; zero: the rate rounded up, at least 1
    key_max_leased: int = 0
    key_rate: float = 0.0
    key_burst: int = 0
    update_time: datetime | None = None

    @property
    def limited(self) -> bool:
        return bool(self.max_leased or self.rate or self.key_max_leased or self.key_rate)

    def limits(self) -> dict[str, int | float]:
        """The limits by name, as every door and table names them."""
        return {name: getattr(self, name) for name in LIMITS}

    @property
    def bucket(self) -> int:
        return self.burst or max(1, math.ceil(self.rate))

    @property
    def key_bucket(self) -> int:
        return self.key_burst or max(1, math.ceil(self.key_rate))


@dataclass(frozen=True, slots=True)
class StoredQueue:
    """A config with its queue's token bucket as last saved."""

    config: QueueConfig
    tokens: float
    refill_time: datetime | None

    def tokens_at(self, now: datetime) -> float:
        c = self.config
        return refilled(self.tokens, self.refill_time, c.rate, c.bucket, now)


@dataclass(frozen=True, slots=True)
class KeyCounts:
    queue: str
    key: str
    ready: int
    leased: int


@dataclass(frozen=True, slots=True)
class KeyState:
    """What a queue remembers of one concurrency key."""

    key: str
    tokens: float | None = None  # None: a full bucket
    refill_time: datetime | None = None
    last_lease_time: datetime | None = None
    closed_until: datetime | None = None


@dataclass(frozen=True, slots=True)
class QueueState:
    """A limited queue as its claim finds it, under the config row's lock."""

    config: QueueConfig
    tokens: float
    refill_time: datetime | None
    leased: int
    leased_by_key: Mapping[str, int]
    keys: Mapping[str, KeyState]


@dataclass(frozen=True, slots=True)
class Claim:
    chosen: list[TaskRecord]
    tokens: float  # the queue's bucket after the claim, as of ``now``
    keys: list[KeyState] = field(default_factory=list)  # the keys it served, updated


def refilled(
    tokens: float | None, since: datetime | None, rate: float, size: int, now: datetime
) -> float:
    """A bucket's tokens at ``now``: what it held, plus ``rate`` a second since, up to ``size``."""
    if tokens is None or since is None:
        return float(size)
    gained = max(0.0, (now - since).total_seconds()) * rate
    return min(float(size), tokens + gained)


def effective_priority(task: TaskRecord, now: datetime) -> int:
    waited = max(0.0, (now - task.available_time).total_seconds())
    return max(1, task.priority - int(waited // AGING))


def blocked_keys(state: QueueState, now: datetime) -> list[str]:
    """Keys none of whose tasks this claim may lease: closed, full, or out of tokens."""
    config = state.config
    out = set()
    for key, ks in state.keys.items():
        if (ks.closed_until is not None and ks.closed_until > now) or (
            config.key_rate
            and refilled(ks.tokens, ks.refill_time, config.key_rate, config.key_bucket, now) < 1
        ):
            out.add(key)
    if config.key_max_leased:
        out.update(k for k, n in state.leased_by_key.items() if n >= config.key_max_leased)
    return sorted(out)


def room(state: QueueState, limit: int, now: datetime) -> int:
    """How many tasks the queue may lease now, whatever their keys."""
    config = state.config
    if config.max_leased:
        limit = min(limit, config.max_leased - state.leased)
    if config.rate:
        tokens = refilled(state.tokens, state.refill_time, config.rate, config.bucket, now)
        limit = min(limit, int(tokens))
    return max(0, limit)


def ranked(
    tasks: Iterable[TaskRecord], keys: Mapping[str, KeyState], now: datetime
) -> list[TaskRecord]:
    """``tasks`` in the order a claim serves them (see the module's docstring)."""
    by_key: dict[str | None, list[tuple[int, TaskRecord]]] = defaultdict(list)
    for task in tasks:
        by_key[task.concurrency_key].append((effective_priority(task, now), task))
    rows = []
    for key, group in by_key.items():
        group.sort(key=lambda e: (e[0], e[1].available_time, e[1].workflow_id, e[1].task_id))
        state = keys.get(key) if key is not None else None
        served = state.last_lease_time if state is not None and state.last_lease_time else _EPOCH
        served = served.replace(tzinfo=None)
        for turn, (eff, task) in enumerate(group):
            rows.append(((eff, turn, served, task.available_time, task.workflow_id), task))
    rows.sort(key=lambda r: r[0])
    return [task for _, task in rows]


def plan_claim(state: QueueState, ready: Iterable[TaskRecord], limit: int, now: datetime) -> Claim:
    """The tasks to lease among ``ready`` (any superset of the candidates, any order), and
    the buckets and keys as leasing them leaves them."""
    config = state.config
    tokens = refilled(state.tokens, state.refill_time, config.rate, config.bucket, now)
    budget = room(state, limit, now)
    blocked = set(blocked_keys(state, now))
    taken: dict[str, int] = defaultdict(int)
    key_tokens: dict[str, float] = {}
    chosen: list[TaskRecord] = []
    for task in ranked(ready, state.keys, now):
        if len(chosen) >= budget:
            break
        key = task.concurrency_key
        if key is not None:
            if key in blocked:
                continue
            if config.key_max_leased and (
                state.leased_by_key.get(key, 0) + taken[key] >= config.key_max_leased
            ):
                continue
            if config.key_rate:
                if key not in key_tokens:
                    ks = state.keys.get(key)
                    key_tokens[key] = refilled(
                        None if ks is None else ks.tokens,
                        None if ks is None else ks.refill_time,
                        config.key_rate,
                        config.key_bucket,
                        now,
                    )
                if key_tokens[key] < 1:
                    continue
                key_tokens[key] -= 1
            taken[key] += 1
        chosen.append(task)
    if config.rate:
        tokens -= len(chosen)
    served = []
    for key in taken:
        ks = state.keys.get(key) or KeyState(key)
        served.append(
            KeyState(
                key,
                tokens=key_tokens.get(key, ks.tokens),
                refill_time=now if key in key_tokens else ks.refill_time,
                last_lease_time=now,
                closed_until=ks.closed_until,
            )
        )
    return Claim(chosen, tokens, served)
