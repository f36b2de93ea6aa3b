"""Which node of a Citus cluster holds an instance: the shard map and Citus's hash.

Citus places a row by the hash of its distribution column (for text, PostgreSQL's
``hashtext``) in the shard whose range holds it. Knowing the ranges and where each shard
is placed, the writer groups a batch by node without asking the database: one call per
node. A map that is out of date (a shard moved since it was read) costs a retry, never a
wrong write: the node checks every row's shard before it writes (see the shard functions
of the Citus migrations) and answers "misrouted" for rows it does not hold.
"""

from __future__ import annotations

import bisect
import functools
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from statewrightd.errors import StorageUnavailable

_M = 0xFFFFFFFF
# Keys tried to find one whose hash lands on each node: with Citus's even ranges a few
# dozen do; only a node holding nothing but slivers of the hash range would need more.
_ROUTE_SEARCH = 100_000
_WORDS = struct.Struct("<III")
# The rotations of lookup3's mix and final rounds.
_MIX = (4, 6, 8, 16, 19, 4)
_FINAL = (14, 11, 25, 16, 4, 14, 24)


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M


@functools.lru_cache(maxsize=1 << 16)
def hash_text(text: str) -> int:
    """PostgreSQL's ``hashtext`` of ``text`` (Bob Jenkins' lookup3 over its UTF-8 bytes,
    as ``hash_bytes`` computes it on a little-endian machine), as a signed 32-bit value.

    Cached: an instance's id is hashed once for all of its steps.
    """
    data = text.encode()
    a = b = c = (0x9E3779B9 + len(data) + 3923095) & _M
    end = len(data) - len(data) % 12
    for i in range(0, end, 12):
        x, y, z = _WORDS.unpack_from(data, i)
        a, b, c = (a + x) & _M, (b + y) & _M, (c + z) & _M
        # lookup3's mix: one round (x -= z, x ^= rot(z, r), z += y) on the words turned by
        # one each time, (a, b, c), (b, c, a), (c, a, b), ..., six rounds: back to (a, b, c).
        for r in _MIX:
            a = ((a - c) & _M) ^ _rot(c, r)
            c = (c + b) & _M
            a, b, c = b, c, a
    x, y, z = _WORDS.unpack_from(data[end:] + bytes(12))
    # The last bytes: the lowest byte of c is left for the length (already in the seed).
    p, q, s = (c + (z << 8)) & _M, (b + y) & _M, (a + x) & _M
    # lookup3's final: one round (x ^= y, x -= rot(y, r)) on (c, b), (a, c), (b, a), (c, b),
    # ...; after the seventh, on c, the turn leaves c in q.
    for r in _FINAL:
        p = ((p ^ q) - _rot(q, r)) & _M
        p, q, s = s, p, q
    c = q
    signed: int = c - (1 << 32) if c & 0x80000000 else c
    return signed


@dataclass(frozen=True, slots=True)
class Shard:
    low: int  # the hash range it holds, both ends included
    high: int
    group: int  # the node group (pg_dist_node.groupid) it is placed on


class ShardMap:
    """The shards of ``workflow_instances`` (every per-instance table is colocated with
    it) and where they are placed."""

    def __init__(self, shards: Iterable[Shard]) -> None:
        self._shards = sorted(shards, key=lambda s: s.low)
        if not self._shards:
            raise StorageUnavailable("the Citus cluster holds no shards of workflow_instances")
        self._lows = [s.low for s in self._shards]
        self.groups: tuple[int, ...] = tuple(sorted({s.group for s in self._shards}))
        self.count = len(self._shards)
        self._routes = self._route_keys()

    def shard_of(self, workflow_id: str) -> Shard:
        h = hash_text(workflow_id)
        shard = self._shards[bisect.bisect_right(self._lows, h) - 1]
        if not shard.low <= h <= shard.high:
            raise StorageUnavailable(f"no shard holds the hash of {workflow_id!r}")
        return shard

    def group_of(self, workflow_id: str) -> int:
        return self.shard_of(workflow_id).group

    def route(self, group: int) -> str:
        """A key whose shard is on ``group``: calls that concern a node rather than an
        instance (claims, purges, counts) name it to be delegated there."""
        key = self._routes.get(group)
        if key is None:
            raise StorageUnavailable(f"no route key found for node group {group}")
        return key

    def _route_keys(self) -> dict[int, str]:
        keys: dict[int, str] = {}
        for i in range(_ROUTE_SEARCH):
            key = f"statewright-route-{i}"
            h = hash_text(key)
            shard = self._shards[bisect.bisect_right(self._lows, h) - 1]
            if shard.low <= h <= shard.high:
                keys.setdefault(shard.group, key)
            if len(keys) == len(self.groups):
                break
        return keys
