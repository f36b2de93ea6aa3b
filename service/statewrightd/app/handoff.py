"""Hand-offs from the asyncio side to the EventLoop thread, and their answers back.

Each posts a callable to the EventLoop and awaits a future that the EventLoop settles
through its batched replies (one wake-up of the asyncio loop per drained batch).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from statewrightd import errors
from statewrightd.engine.answers import Outcome, Replay, Result
from statewrightd.engine.commands import Command
from statewrightd.engine.event_loop import EventLoop
from statewrightd.engine.observer import StepObserver
from statewrightd.engine.runtime import Job, WorkflowRuntime
from statewrightd.reasons import Reason
from statewrightd.store.records import Purged

T = TypeVar("T")

# Beyond this many queued commands the EventLoop is behind: refuse at once instead of
# letting latency grow without bound.
MAX_LOOP_QUEUE = 20_000

_EXPIRED = object()


class Handoff:
    def __init__(self, loop: EventLoop, runtime: WorkflowRuntime, observer: StepObserver) -> None:
        self._loop = loop
        self._runtime = runtime
        self._observer = observer
        # Steps on their way, by the instance each is of: answered OUTCOME_UNKNOWN if
        # storage goes down under them (``release_steps``).
        self._stepping: dict[asyncio.Future[Any], str] = {}

    async def step(self, command: Command, budget: float | None) -> Outcome | Replay:
        """Run ``command`` on the EventLoop and await its answer, for at most ``budget``
        seconds (None: no deadline)."""
        loop = self._loop
        if loop.queue_depth() > MAX_LOOP_QUEUE:
            raise errors.ResourceExhausted(
                "the server is overloaded; retry with backoff", reason=Reason.OVERLOADED
            )
        aio = asyncio.get_running_loop()
        runtime, observed = self._runtime, self._observer.requested(command)
        future = self._post(aio, lambda reply: runtime.submit(Job(command, reply, observed)))
        self._stepping[future] = command.workflow_id
        # A plain timer rather than wait_for(shield(...)): one less task per call. The
        # step goes on regardless; only this caller stops waiting for it.
        timer = None
        if budget is not None:
            timer = aio.call_later(budget, _expire, future)
        try:
            result = await future
        finally:
            del self._stepping[future]
            if timer is not None:
                timer.cancel()
        if result is _EXPIRED:
            raise errors.DeadlineExceeded(
                "the deadline passed before the step finished; its outcome is decided by the "
                "server and visible through GetWorkflow",
                metadata={"workflow_id": command.workflow_id},
            )
        assert isinstance(result, Outcome | Replay)
        return result

    def release_steps(self) -> None:
        """Answer every step still on its way OUTCOME_UNKNOWN: storage went down under it
        (the step goes on; only its caller stops waiting)."""
        for waiting, workflow_id in list(self._stepping.items()):
            settle(waiting, _in_doubt(workflow_id))

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the EventLoop thread (to read live state) and return its result."""

        def run(reply: Callable[[object], None]) -> None:
            try:
                value: object = fn()
            except Exception as exc:
                value = exc
            reply(value)

        result: T = await self._post(asyncio.get_running_loop(), run)
        return result

    async def remove(self, workflow_id: str, revision: int) -> Purged:
        """The runtime's removal of a finished instance (raises what the store refused)."""
        runtime = self._runtime
        result: Purged = await self._post(
            asyncio.get_running_loop(), lambda reply: runtime.remove(workflow_id, revision, reply)
        )
        return result

    def _post(
        self, aio: asyncio.AbstractEventLoop, start: Callable[[Callable[[Any], None]], None]
    ) -> asyncio.Future[Any]:
        """Post ``start(reply)``: the future settles with what it replies (an exception
        replied is raised)."""
        loop = self._loop
        future: asyncio.Future[Any] = aio.create_future()

        def reply(result: Result | object) -> None:
            loop.reply(functools.partial(settle, future, result))

        loop.post(functools.partial(start, reply))
        return future


def _in_doubt(workflow_id: str) -> errors.Unknown:
    return errors.Unknown(
        "storage went down while this step was on its way: it may or may not be saved. Read "
        "the instance (or retry with the same request_id) once storage is back",
        reason=Reason.OUTCOME_UNKNOWN,
        metadata={"workflow_id": workflow_id},
    )


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_result(_EXPIRED)


def settle(future: asyncio.Future[Any], value: Any) -> None:
    """Answer ``future`` with ``value`` (raised when an exception), unless it has been."""
    if future.done():
        return
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)
