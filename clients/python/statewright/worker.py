"""The blocking task worker: handlers run in a thread pool, the worker's plans in threads."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from functools import partial
from typing import Any

import grpc

from statewright._plan import Run, Unary
from statewright._worker import (
    SIGNALS,
    Attempt,
    Handle,
    RunningTask,
    TaskFailure,
    Wait,
    WorkerCore,
    WorkerPlan,
    abandoned,
    is_async_handler,
)
from statewright.client import Client

__all__ = ["Handler", "RunningTask", "TaskFailure", "Worker"]

Handler = Callable[[RunningTask], Mapping[str, object] | None]
"""A blocking handler: takes the task, returns its result (a dict) or None."""


class Worker(WorkerCore[Client]):
    """A blocking task worker: polls queues and runs their handlers in a thread pool.

    ``register(queue, handler)`` for each queue, then ``run()``, which blocks until
    ``stop()`` (from another thread) or SIGINT/SIGTERM. At most ``concurrency`` handlers run
    at once, and a poll never asks for more tasks than there are free slots. The worker
    heartbeats every running task by itself (sending what the handler last gave
    ``task.heartbeat``), and sets ``task.cancelled`` when the task was cancelled; it
    completes the task with the handler's return value and fails it with what the handler
    raised (see :class:`TaskFailure`). While the server is unavailable it backs off and
    keeps going.

    On stop it polls no more and gives running handlers ``shutdown_grace`` seconds; those
    still running then are told to stop (``task.cancelled``) and their tasks released
    (FailTask ``WORKER_SHUTDOWN``, no retry delay) for another worker to take at once. A
    thread cannot be killed: a handler that ignores ``task.cancelled`` runs on after
    ``run()`` returns, and keeps the process alive until it ends.

    ``concurrency`` defaults to 10; ``identity`` (default ``pid@host``) names the worker in
    the server's diagnostics; ``poll_wait`` is a long poll's wait (20 s, at most 60);
    ``shutdown_grace`` defaults to 20 s; ``executor`` replaces the thread pool (the worker
    then does not shut it down).
    """

    def _prepare(self) -> None:
        # Reentrant: a future cancelled or done under the lock runs its callback at once.
        self._lock = threading.RLock()
        self._threads: set[threading.Thread] = set()

    def run(self, *, handle_signals: bool = True) -> None:
        """Polls and runs handlers until :meth:`stop`, then shuts down gracefully.

        With ``handle_signals`` (and on the main thread) SIGINT and SIGTERM stop the worker;
        a second one ends the grace period at once. The handlers they replace come back when
        ``run()`` returns. An unexpected failure of the worker itself is raised here, after
        the shutdown.
        """
        with self._lock:
            self._begin()
        previous = self._install_signals() if handle_signals else {}
        try:
            self._drive(self._main(), abandonable=False)
        except BaseException:
            # KeyboardInterrupt without our signal handlers, say: release everything now.
            self.stop(immediately=True)
            raise
        finally:
            while thread := self._any_thread():  # a late poll still spawns its releases
                thread.join()
            for number, handler in previous.items():
                signal.signal(number, handler)
            self._close_pool()
        self._finish()

    def stop(self, *, immediately: bool = False) -> None:
        """Stops polling; running handlers get ``shutdown_grace`` seconds, or none if
        ``immediately``. Safe from any thread and from a signal handler."""
        with self._lock:
            self._request_stop(immediately)
            for call in self._calls:
                call.cancel()

    # --- the shell ------------------------------------------------------------------------

    def _check_handler(self, handler: Callable[..., object]) -> None:
        if is_async_handler(handler):
            raise TypeError("a coroutine handler needs statewright.aio.AsyncWorker")

    def _bell(self) -> threading.Event:
        return threading.Event()

    def _spawn(self, plan: WorkerPlan, *, abandonable: bool) -> None:
        thread = threading.Thread(
            target=self._drive, args=(plan, abandonable), name="statewright-worker", daemon=True
        )
        self._threads.add(thread)
        thread.start()

    def _launch(self, attempt: Attempt) -> Handle:
        future = self._thread_pool().submit(attempt.call)
        future.add_done_callback(partial(self._settled, attempt))
        return future

    def _settled(self, attempt: Attempt, future: Future[Any]) -> None:
        with self._lock:
            self._settle(attempt, future)

    def _any_thread(self) -> threading.Thread | None:
        with self._lock:
            return next(iter(self._threads), None)

    def _drive(self, plan: WorkerPlan, abandonable: bool) -> None:
        """Runs one plan on this thread: its steps under the lock, its effects outside."""
        run: Run[Wait, None] = Run(plan)
        perform = partial(self._perform, abandonable=abandonable)
        try:
            while True:
                with self._lock:
                    try:
                        effect = next(run)
                    except StopIteration:
                        return
                run.answer(perform, effect)
        except Exception as exc:
            with self._lock:
                self._fault(exc)
        finally:
            with self._lock:
                run.close()
                self._threads.discard(threading.current_thread())

    def _perform(self, effect: Any, *, abandonable: bool) -> Any:
        if isinstance(effect, Wait):
            effect.bell.wait(effect.seconds)
            effect.bell.clear()
            return None
        if abandonable and isinstance(effect, Unary):
            return self._abandonable(effect)
        return self._client._perform(effect)

    def _abandonable(self, effect: Unary) -> Any:
        # Outside the lock: a token provider may take its time.
        metadata = self._client._call_metadata()
        with self._lock:
            if self.stopping:
                raise abandoned()
            call: grpc.Future[Any] = self._client._invoke(effect, metadata, future=True)
            self._calls.add(call)
        try:
            return call.result()
        except grpc.FutureCancelledError:
            raise abandoned() from None
        except grpc.RpcError as exc:
            self._client._refused(exc)
            raise
        finally:
            with self._lock:
                self._calls.discard(call)

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        handler = lambda number, frame: self._signalled(number)  # noqa: E731
        return {number: signal.signal(number, handler) for number in SIGNALS}
