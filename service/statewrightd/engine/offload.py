"""Blocking work off the EventLoop thread, with its result handed back to it."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

from statewrightd import errors
from statewrightd.engine.event_loop import EventLoop

_log = logging.getLogger(__name__)

T = TypeVar("T")


class Offload:
    """Runs blocking calls (storage, mostly) on an I/O pool; their results come back to
    the EventLoop thread as a posted callable, so the thread itself never waits."""

    def __init__(self, loop: EventLoop, io: Executor) -> None:
        self._loop = loop
        self._io = io

    def __call__(
        self, fn: Callable[[], T], then: Callable[[T | errors.StatewrightError], None]
    ) -> None:
        """Run ``fn`` on the pool; ``then`` gets its result on the EventLoop thread, or
        what it raised as a StatewrightError (anything unexpected as StorageUnavailable)."""
        loop = self._loop

        def run() -> None:
            result: T | errors.StatewrightError
            try:
                result = fn()
            except errors.StatewrightError as exc:
                result = exc
            except Exception as exc:
                _log.exception("storage call failed")
                result = errors.StorageUnavailable(f"storage call failed: {exc}")
            try:
                loop.post(lambda: then(result))
            except errors.Unavailable:
                _log.warning("event loop stopped before a storage result was delivered")

        self._io.submit(run)
