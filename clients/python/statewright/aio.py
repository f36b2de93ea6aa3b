"""The asyncio Statewright client, over ``grpc.aio``, with the same API as :class:`Client`;
and the asyncio task worker."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import signal
import threading
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from types import TracebackType
from typing import Any

import grpc
import grpc.aio

from statewright import _common
from statewright._operations import Operations
from statewright._plan import Awaiting, Effect, OpenStream, Receive, Run, Sleep, Unary
from statewright._worker import (
    SIGNALS,
    Attempt,
    Handle,
    RunningTask,
    Wait,
    WorkerCore,
    WorkerPlan,
    abandoned,
    is_async_handler,
)

__all__ = ["AsyncClient", "AsyncHandler", "AsyncWorker"]

AsyncHandler = Callable[[RunningTask], Awaitable[Mapping[str, object] | None]]
"""A coroutine handler: takes the task, returns its result (a dict) or None."""


class AsyncClient(Operations, Awaiting):
    """An asyncio client for ``statewright.v1.WorkflowService``.

    Behaves like :class:`statewright.Client` (deadlines, UNAVAILABLE-only retries, typed
    errors, resuming watches, TLS and tokens from its options or the environment) and takes
    the same arguments, with a ``grpc.aio`` channel; its token provider may also be a
    coroutine function. Every call is a coroutine, and ``list``, ``list_pages``, ``watch``
    and ``definitions`` are async iterators. Create it inside a running event loop and
    ``await client.close()`` (or use ``async with``).
    """

    async def close(self) -> None:
        if self._owns_channel:
            await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _open(
        self, credentials: grpc.ChannelCredentials | None, options: _common.ChannelOptions
    ) -> grpc.aio.Channel:
        if credentials is None:
            return grpc.aio.insecure_channel(self.target, options=options)
        return grpc.aio.secure_channel(self.target, credentials, options=options)

    async def _perform(self, effect: Effect) -> Any:
        try:
            match effect:
                case Unary():
                    return await self._invoke(effect, await self._call_metadata())
                case OpenStream():
                    return self._invoke(effect, await self._call_metadata())
                case Receive(call):
                    message = await call.read()
                    return None if message is grpc.aio.EOF else message
                case Sleep(seconds):
                    await asyncio.sleep(seconds)
        except grpc.RpcError as exc:
            self._refused(exc)
            raise
        return None


class AsyncWorker(WorkerCore[AsyncClient]):
    """An asyncio task worker: polls queues and runs their handlers on the event loop.

    It behaves like :class:`statewright.Worker` (concurrency limit, polls for the free
    slots only, automatic heartbeats, completion and failure, backoff, graceful shutdown
    with release) and takes the same arguments, with an :class:`AsyncClient`. Handlers are
    coroutine functions; a plain function is run in a thread pool (``executor``, or one of
    ``concurrency`` threads). When a task is cancelled, its lease lost, or the grace period
    over, ``task.cancelled`` is set and a coroutine handler is cancelled
    (``asyncio.CancelledError`` at its ``await``).
    """

    def _prepare(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()
        self._runs: set[asyncio.Future[Any]] = set()

    async def run(self, *, handle_signals: bool = True) -> None:
        """Polls and runs handlers until :meth:`stop`, then shuts down gracefully.

        With ``handle_signals`` (on the main thread) SIGINT and SIGTERM stop the worker; a
        second one ends the grace period at once; the previous handlers come back after.
        Cancelling ``run()`` releases every running task at once. An unexpected failure of
        the worker itself is raised here, after the shutdown.
        """
        self._begin()
        loop = asyncio.get_running_loop()
        previous = self._install_signals(loop) if handle_signals else {}
        try:
            await self._drive(self._main(), abandonable=False)
        except asyncio.CancelledError:
            self.stop(immediately=True)
            raise
        finally:
            while self._tasks:  # a poll that returns late still spawns its releases
                await asyncio.gather(*self._tasks, return_exceptions=True)
            for number, handler in previous.items():
                loop.remove_signal_handler(number)
                signal.signal(number, handler)
            self._close_pool()
        self._finish()

    def stop(self, *, immediately: bool = False) -> None:
        """Stops polling; running handlers get ``shutdown_grace`` seconds, or none if
        ``immediately``. Call it on the loop's thread (from another thread, through
        ``loop.call_soon_threadsafe``)."""
        self._request_stop(immediately)
        for call in self._calls:
            call.cancel()

    # --- the shell ------------------------------------------------------------------------

    def _check_handler(self, handler: Callable[..., object]) -> None:
        pass  # a coroutine function runs on the loop, any other callable in a thread

    def _bell(self) -> asyncio.Event:
        return asyncio.Event()

    def _spawn(self, plan: WorkerPlan, *, abandonable: bool) -> None:
        task = asyncio.get_running_loop().create_task(self._drive(plan, abandonable))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _launch(self, attempt: Attempt) -> Handle:
        loop = asyncio.get_running_loop()
        run: asyncio.Future[Any]
        if is_async_handler(attempt.handler):
            run = loop.create_task(attempt.call_async())  # what it raises ends the run
        else:
            # Like asyncio.to_thread: the handler sees the caller's context variables.
            call = partial(contextvars.copy_context().run, attempt.call)
            run = loop.run_in_executor(self._thread_pool(), call)
        # The loop holds tasks weakly: keep each run until it ends, even once dropped.
        self._runs.add(run)
        run.add_done_callback(self._runs.discard)
        run.add_done_callback(partial(self._settle, attempt))
        return run

    async def _drive(self, plan: WorkerPlan, abandonable: bool) -> None:
        perform = partial(self._perform, abandonable=abandonable)
        try:
            with contextlib.closing(run := Run[Wait, None](plan)):
                for effect in run:
                    await run.answer_async(perform, effect)
        except Exception as exc:
            self._fault(exc)

    async def _perform(self, effect: Any, *, abandonable: bool) -> Any:
        if isinstance(effect, Wait):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(effect.bell.wait(), effect.seconds)
            effect.bell.clear()
            return None
        if abandonable and isinstance(effect, Unary):
            return await self._abandonable(effect)
        return await self._client._perform(effect)

    async def _abandonable(self, effect: Unary) -> Any:
        if self.stopping:
            raise abandoned()
        metadata = await self._client._call_metadata()
        if self.stopping:  # stopped while a token provider was asked
            raise abandoned()
        call = self._client._invoke(effect, metadata)
        self._calls.add(call)
        try:
            return await call
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if call.cancelled() and (current is None or not current.cancelling()):
                raise abandoned() from None
            raise
        except grpc.RpcError as exc:
            self._client._refused(exc)
            raise
        finally:
            self._calls.discard(call)

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous: dict[int, Any] = {}
        for number in SIGNALS:
            handler = signal.getsignal(number)
            try:
                loop.add_signal_handler(number, self._signalled, number)
            except (NotImplementedError, RuntimeError):  # no signals on this loop
                continue
            previous[number] = handler
        return previous
