"""Reads of the store from the asyncio side, and whether the store answers at all.

Once the readiness check finds storage down, no call waits out its deadline on it: new
calls that need it are refused at once, reads already waiting are answered at once (the
read goes on, unheeded), and whatever else waits on storage is told (``on_down``: waiting
polls, steps on their way). A write that is no step (a lease, a heartbeat, a task's retry)
and was already waiting may still land: it is answered OUTCOME_UNKNOWN, never "not done".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, TypeVar

from statewrightd import errors
from statewrightd.app.handoff import settle
from statewrightd.reasons import Reason
from statewrightd.store.repository import Repository

_log = logging.getLogger(__name__)

T = TypeVar("T")


class Reader(Protocol):
    """``Storage.read``, as the use cases that read through it take it."""

    def __call__(self, fn: Callable[[], T], /) -> Awaitable[T]: ...


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
        # Reads and writes waiting on the pool, answered as soon as storage is found down.
        self._reading: set[asyncio.Future[Any]] = set()
        self._writing: set[asyncio.Future[Any]] = set()
        # Told, on the asyncio loop, why storage went down when the check first finds it so.
        self.on_down: list[Callable[[str], None]] = []

    @property
    def down(self) -> str | None:
        """Why storage is down; None while it answers."""
        return self._down

    def verdict(self, down: str | None) -> None:
        """Record the latest storage check: why storage is down, or None when it answered
        (asyncio loop)."""
        was_down = self._down is not None
        self._down = down
        self._repo.set_unreachable(down is not None)
        if down is not None and not was_down:
            _log.warning("storage is down (%s): calls that need it fail fast", down)
            self._release_waiting_calls(down)
        elif down is None and was_down:
            _log.info("storage is back: calls that need it are served again")

    def _release_waiting_calls(self, down: str) -> None:
        message = f"storage went down while this call waited ({down}); retry with backoff"
        for waiting in list(self._reading):
            settle(waiting, errors.StorageUnavailable(message, reason=Reason.STORAGE_UNAVAILABLE))
        unknown = (
            f"storage went down while this write waited ({down}): it may or may not have been "
            "applied; read it back, or send it again, once storage is back"
        )
        for waiting in list(self._writing):
            settle(waiting, errors.OutcomeUnknown(unknown))
        for tell in self.on_down:
            tell(down)

    def answered_within(self, seconds: float) -> bool:
        """Whether the database answered a call in the last ``seconds``: then a check that
        waits longer is held up by a busy database (its connections all in use), not by
        one that is down."""
        return time.monotonic() - self._repo.answered_at() < seconds

    def require(self) -> None:
        down = self._down
        if down is not None:
            raise errors.StorageUnavailable(
                f"storage is unavailable ({down}); retry with backoff",
                reason=Reason.STORAGE_UNAVAILABLE,
            )

    async def read(self, fn: Callable[[], T]) -> T:
        """``fn`` (blocking) on the read pool, unless storage is known to be down; answered
        STORAGE_UNAVAILABLE at once if storage is found down while it waits."""
        return await self._run(fn, self._reading)

    async def write(self, fn: Callable[[], T]) -> T:
        """As ``read``, for a write that is no step: answered OUTCOME_UNKNOWN at once if
        storage is found down while it waits, since it may land all the same."""
        return await self._run(fn, self._writing)

    async def _run(self, fn: Callable[[], T], waiting_calls: set[asyncio.Future[Any]]) -> T:
        self.require()
        aio = asyncio.get_running_loop()
        waiting: asyncio.Future[T] = aio.create_future()

        def run() -> None:
            try:
                value: Any = fn()
            except Exception as exc:
                value = exc
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                aio.call_soon_threadsafe(settle, waiting, value)

        self._pool.submit(run)
        waiting_calls.add(waiting)
        try:
            return await waiting
        finally:
            waiting_calls.discard(waiting)

    async def ping(self) -> None:
        # Never refused: it is how storage is found to be back.
        await asyncio.get_running_loop().run_in_executor(self._pool, self._repo.ping)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        # Calls the shutdown dropped are not waited for; a write among them may still land.
        for waiting in list(self._reading):
            stopping = errors.Unavailable("the server is stopping", reason=Reason.SHUTTING_DOWN)
            settle(waiting, stopping)
        for waiting in list(self._writing):
            settle(waiting, errors.OutcomeUnknown("the server stopped while this write waited"))
