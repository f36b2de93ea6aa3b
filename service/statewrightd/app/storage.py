"""Reads of the store from the asyncio side, and whether the store answers at all."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from statewrightd import errors
from statewrightd.reasons import Reason
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

T = TypeVar("T")

READ_WORKERS = 8


class Storage:
    """Blocking store reads run on a small pool of their own, off the asyncio thread; they
    touch no live state, so they need not pass the EventLoop.

    While the readiness check finds storage down, calls that need it are refused at once
    (UNAVAILABLE), so that clients' retries can go elsewhere instead of each waiting out
    its deadline on a dead database."""

    def __init__(self, repo: Repository) -> None:
        self._repo = repo
        self._pool = ThreadPoolExecutor(
            max_workers=READ_WORKERS, thread_name_prefix="statewright-read"
        )
        self._down: str | None = None

    def verdict(self, down: str | None) -> None:
        """Record the latest storage check: why storage is down, or None when it answered."""
        if down is not None and self._down is None:
            _log.warning("storage is down (%s): calls that need it fail fast", down)
        elif down is None and self._down is not None:
            _log.info("storage is back: calls that need it are served again")
        self._down = down

    def require(self) -> None:
        down = self._down
        if down is not None:
            raise errors.StorageUnavailable(
                f"storage is unavailable ({down}); retry with backoff",
                reason=Reason.STORAGE_UNAVAILABLE,
            )

    async def read(self, fn: Callable[[], T]) -> T:
        """``fn`` (blocking) on the read pool, unless storage is known to be down."""
        self.require()
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def ping(self) -> None:
        # Never refused: it is how storage is found to be back.
        await asyncio.get_running_loop().run_in_executor(self._pool, self._repo.ping)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
