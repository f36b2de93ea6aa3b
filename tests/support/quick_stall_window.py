"""A test hook for a real server: a task queue counts as stalled after 2 seconds without a
poll instead of a minute, and queues are counted every half second.

A server started with ``STATEWRIGHT_TEST_HOOKS=tests.support.quick_stall_window`` (and the
repository on its ``PYTHONPATH``) loads this module and calls ``install``, so an end-to-end
test can watch a queue become stalled and recover in seconds.
"""

from __future__ import annotations

import asyncio

from statewrightd.engine import tasks
from statewrightd.engine.event_loop import EventLoop

MODULE = __name__
STALLED_AFTER = 2.0
COUNT_EVERY = 0.5


def install(loop: EventLoop, aio: asyncio.AbstractEventLoop) -> None:
    tasks.STALLED_AFTER = STALLED_AFTER
    tasks.TaskSweeper.count_every = COUNT_EVERY
