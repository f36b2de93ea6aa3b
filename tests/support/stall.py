"""A test hook for a real server: SIGUSR1 blocks its EventLoop thread for a while.

A server started with ``STATEWRIGHT_TEST_HOOKS=tests.support.stall`` (and the repository
on its ``PYTHONPATH``) loads this module and calls ``install``. With
``STATEWRIGHT_DEBUG_STALL=SECONDS``, every SIGUSR1 then posts a command that blocks the
EventLoop for SECONDS: the one way to make a real server's loop stop making progress, so
end-to-end tests can watch ``liveness`` turn NOT_SERVING and recover.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Mapping

from statewrightd.engine.event_loop import EventLoop

STALL_ENV = "STATEWRIGHT_DEBUG_STALL"
MODULE = __name__

_log = logging.getLogger(__name__)


def install(
    loop: EventLoop, aio: asyncio.AbstractEventLoop, env: Mapping[str, str] | None = None
) -> bool:
    """Arm the SIGUSR1 stall when the environment asks for it; True if armed."""
    env = os.environ if env is None else env
    text = env.get(STALL_ENV, "").strip()
    if not text:
        return False
    try:
        seconds = float(text)
    except ValueError:
        _log.error("%s=%r is not a number of seconds; stall hook not armed", STALL_ENV, text)
        return False

    def stall() -> None:
        _log.warning("debug: blocking the EventLoop thread for %gs", seconds)
        time.sleep(seconds)  # deliberately blocking: this simulates a stuck loop

    aio.add_signal_handler(signal.SIGUSR1, loop.post, stall)
    _log.warning(
        "debug: %s is set: SIGUSR1 blocks the EventLoop for %gs (for tests only)",
        STALL_ENV,
        seconds,
    )
    return True
