"""The periodic look that covers a lost cross-replica hint, for every watcher at once.

Another replica's step reaches this replica's watchers as a LISTEN/NOTIFY hint, and a
hint can be lost (a listener's connection dropped; on Citus a replica that died between
its commit and its hint). Every ``every`` seconds the store is asked for the revision of
each instance watched here, a thousand to a read, and only the watchers behind go to
history. A look of each watcher's own made the reads grow with the watchers: with
thousands of streams open they queued behind each other, and every stream's steps
arrived tens of seconds late.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from statewrightd import errors
from statewrightd.app.storage import Reader
from statewrightd.engine.watch import WatchHub
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

CHUNK = 1000  # instances asked about in one read


class WatchRecheck:
    """Asyncio thread; ``run`` until cancelled."""

    def __init__(self, hub: WatchHub, repo: Repository, read: Reader) -> None:
        self._hub, self._repo, self._read = hub, repo, read
        self.reads = 0

    async def run(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self.once()

    async def once(self) -> None:
        ids = self._hub.watched_ids()
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            try:
                found = await self._read(functools.partial(self._repo.instance_revisions, chunk))
            except errors.StatewrightError as exc:
                # The next look covers it; a hint that does arrive needs no look at all.
                _log.info("watched instances not rechecked: %s", exc)
                return
            self.reads += 1
            self._hub.recheck(chunk, found)
