"""What :class:`statewright.Worker` and :class:`statewright.aio.AsyncWorker` share: every
decision a task worker makes, written once.

The worker is a few plans (see :mod:`statewright._plan`), like the client's methods: the
main plan, one poller per queue and one supervisor per leased task. They call the server
through the client's own task plans (``Operations.heartbeat_task(client, ...)``) and wait
with one effect of their own, :class:`Wait`. Each shell drives them its way, a thread per
plan under one lock or a task per plan on the event loop, and supplies the few things that
do not block: a bell to ring a waiting plan, spawning a plan, starting a handler.

The plans' state (free slots, running attempts, the shutdown) is only touched from plan
steps and from the shell's settle and stop calls, which the shells serialize: the blocking
worker under its lock, the asyncio worker on its loop.
"""

from __future__ import annotations

import enum
import inspect
import logging
import math
import re
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Generic, Protocol, TypeAlias, TypeVar, cast

import grpc
from opentelemetry import trace

from statewright import _common, _tracing
from statewright._operations import Operations
from statewright._plan import Driver, Effect
from statewright.errors import Cancelled, NotFound, StatewrightError
from statewright.models import Task, TaskHeartbeat
from statewright.values import JSONObject, to_struct

__all__ = ["RunningTask", "TaskFailure"]

log = logging.getLogger("statewright.worker")

QUEUE = re.compile(r"^[a-z][a-z0-9-.]{0,62}$")
SHUTDOWN_TYPE = "WORKER_SHUTDOWN"
# Heartbeats come at a third of the lease left, but never closer together than this: near
# the end of start_to_close the lease stops growing, and a third of little is less.
MIN_HEARTBEAT_INTERVAL = 0.1
# Releasing a task at shutdown is one short call: the lease runs out by itself anyway.
RELEASE_TIMEOUT = 5.0
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class TaskFailure(Exception):
    """Raise this from a handler to fail the attempt with your own error ``type``.

    ``type`` is the UPPER_SNAKE name a definition's ``retry.non_retryable`` and
    ``task_failed`` transitions match on; ``details`` (a JSON object) reach the workflow
    with it. ``non_retryable`` gives the task up at once; ``retry_delay`` (seconds) replaces
    the retry policy's backoff for the next attempt; ``close_key_until`` (an aware
    datetime, an API's Retry-After, say) holds back every task of the task's concurrency
    key on its queue until then. Any other exception fails the attempt too, retryably,
    with its class name as the type.
    """

    def __init__(
        self,
        type: str,
        message: str = "",
        *,
        details: Mapping[str, object] | None = None,
        non_retryable: bool = False,
        retry_delay: float | None = None,
        close_key_until: datetime | None = None,
    ) -> None:
        if not type:
            raise ValueError("a task failure needs a type")
        if close_key_until is not None and close_key_until.tzinfo is None:
            raise ValueError("close_key_until must be an aware datetime (with its time zone)")
        super().__init__(message or type)
        self.type = type
        self.message = message
        self.details = details
        self.non_retryable = non_retryable
        self.retry_delay = retry_delay
        self.close_key_until = close_key_until

    def __repr__(self) -> str:
        return (
            f"TaskFailure({self.type!r}, {self.message!r}, non_retryable={self.non_retryable}, "
            f"retry_delay={self.retry_delay!r})"
        )


def failure_of(error: BaseException) -> TaskFailure:
    """The failure an exception reports: its own fields for a TaskFailure; otherwise its
    class name as the type and its text as the message, retryable."""
    if isinstance(error, TaskFailure):
        return error
    kind = type(error).__name__
    return TaskFailure(kind, str(error) or kind)


class RunningTask:
    """What a handler gets: one attempt of a leased task.

    ``input`` is the task's input as plain data; ``attempt`` counts from 1; ``name`` is
    ``workflows/{workflow_id}/tasks/{task_id}``, ``workflow`` the instance's name and
    ``state`` the task state that scheduled it; ``task`` is the whole :class:`Task`.
    ``heartbeat(details)`` records progress: the worker heartbeats by itself and sends the
    latest details each time (a later attempt finds them in ``heartbeat_details``).
    ``cancelled`` is set when the task was cancelled (its state was left), its lease was
    lost, or the worker is shutting down past its grace period: stop then, since whatever
    the handler returns is dropped.
    """

    def __init__(self, task: Task) -> None:
        self.task = task
        self.name: str = task.name
        self.workflow: str = task.workflow
        self.queue: str = task.queue
        self.state: str = task.state
        self.attempt: int = task.attempt
        self.input: JSONObject = task.input
        self.heartbeat_details: JSONObject = task.heartbeat_details
        self.cancelled = threading.Event()
        self._details: Mapping[str, object] | None = None
        self._lock = threading.Lock()

    def heartbeat(self, details: Mapping[str, object]) -> None:
        """Records progress for the next automatic heartbeat (the latest details win).

        It never blocks; ``details`` must be a JSON object (TypeError or ValueError if not).
        """
        to_struct(details)
        with self._lock:
            self._details = dict(details)

    def details(self) -> Mapping[str, object] | None:
        with self._lock:
            return self._details

    def __repr__(self) -> str:
        return f"RunningTask({self.name!r}, attempt={self.attempt})"


class Bell(Protocol):
    """How a plan is woken: a ``threading.Event`` or an ``asyncio.Event`` (the core only
    rings it; the shell waits on it and clears it)."""

    def set(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Wait:
    """The worker's one effect: wait until ``bell`` rings or ``seconds`` pass (None: no
    limit). The outcome is None; the plan then looks again at what changed."""

    bell: Any
    seconds: float | None


WorkerPlan: TypeAlias = Generator[Effect | Wait, Any, None]
_Client = TypeVar("_Client", bound=Driver[Any])


class Settled(Protocol):
    """A finished handler run: a ``concurrent.futures`` or an ``asyncio`` future."""

    def cancelled(self) -> bool: ...
    def exception(self) -> BaseException | None: ...
    def result(self) -> Any: ...


class Handle(Protocol):
    """A handler run that can be told to stop (a future's ``cancel``)."""

    def cancel(self) -> bool: ...


class Verdict(enum.Enum):
    RETRY = "retry"  # the server or the network: try again with backoff
    DROP = "drop"  # the task is no longer ours: forget it quietly
    GIVE_UP = "give up"  # anything else (a bug, most likely): log it


_RETRY_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
)
# Transport failures carry no ErrorInfo; the same codes with a reason are the server's word.
_TRANSPORT_CODES = frozenset(
    {grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
)
_DROP_REASONS = frozenset({"LEASE_SUPERSEDED", "TASK_CANCELLED"})
# The server lost the answer of its own commit: the same report (same request id) is
# answered with what became of the first, so sending it again is safe.
_UNKNOWN_OUTCOME = "OUTCOME_UNKNOWN"


def verdict(error: StatewrightError) -> Verdict:
    """What a failed heartbeat, completion or failure call means for the task."""
    if error.reason in _DROP_REASONS or isinstance(error, NotFound):
        return Verdict.DROP
    if error.code in _RETRY_CODES or (error.code in _TRANSPORT_CODES and not error.reason):
        return Verdict.RETRY
    if error.reason == _UNKNOWN_OUTCOME:
        return Verdict.RETRY
    return Verdict.GIVE_UP


def backoff() -> _common.Backoff:
    """0.1 s doubling to 5 s, with jitter, for as long as it takes."""
    return _common.Backoff(initial=0.1, maximum=5.0, budget=math.inf)


def pause(policy: _common.Backoff, error: StatewrightError | None = None) -> float:
    """The next wait: the backoff's, or longer when the server said when to come back (a
    RetryInfo, as RATE_LIMITED carries)."""
    delay = policy.delay() or policy.maximum  # an unbounded budget always has a next delay
    if error is not None and error.retry_delay is not None:
        return max(delay, error.retry_delay)
    return delay


def next_heartbeat(now: float, expires: datetime | None) -> float:
    """When to heartbeat a lease that ``expires`` (wall clock): after a third of the time
    left, so the short first lease is extended early and every later one well in time."""
    left = (expires - datetime.now(UTC)).total_seconds() if expires is not None else 0.0
    return now + max(left / 3, MIN_HEARTBEAT_INTERVAL)


def poll_share(free: int, idle_pollers: int) -> int:
    """How many tasks one poll asks for: the free slots, shared with the other pollers not
    already in a poll (so one queue cannot hold every slot), at most 100."""
    return min(_common.MAX_POLL_TASKS, max(1, free // max(1, idle_pollers)))


def request_id(task: Task, what: str) -> str:
    """Stable for a task and attempt, so a retried completion or failure is idempotent."""
    return f"{task.name}#{task.attempt}#{what}"


def abandoned() -> StatewrightError:
    """What a poll raises in its plan when the worker stops while it waits."""
    return Cancelled("the worker is stopping", code=grpc.StatusCode.CANCELLED)


def is_async_handler(handler: Callable[..., object]) -> bool:
    call = getattr(handler, "__call__", None)  # noqa: B004 (a callable object's method)
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


class Attempt:
    """One leased attempt, from the poll to its completion, failure or release."""

    def __init__(self, task: Task, handler: Callable[..., object], bell: Bell) -> None:
        self.task = task
        self.handler = handler
        self.context = RunningTask(task)
        self.bell = bell
        self.handle: Handle | None = None
        self.outcome: Settled | None = None
        # Cancelled or superseded: nothing is reported for it any more.
        self.dropped = False
        self.next_beat = next_heartbeat(time.monotonic(), task.lease_expire_time)
        self.backoff = backoff()
        self.started = time.monotonic()
        # The attempt's span, a child of the step that scheduled the task: the handler
        # runs in it, and its context goes back with the completion or failure.
        self.span = _tracing.task_span(task)
        self.traceparent, self.tracestate = _tracing.headers_of(self.span)

    def call(self) -> Any:
        """Runs a plain handler in the attempt's span (on the thread that calls this)."""
        with trace.use_span(self.span, end_on_exit=False):
            return self.handler(self.context)

    async def call_async(self) -> Any:
        """Awaits a coroutine handler in the attempt's span."""
        handler = cast(Callable[[RunningTask], Awaitable[Any]], self.handler)
        with trace.use_span(self.span, end_on_exit=False):
            return await handler(self.context)

    def cancel(self) -> None:
        self.dropped = True
        self.context.cancelled.set()
        if self.handle is not None:
            self.handle.cancel()  # asyncio: the coroutine is cancelled; a thread runs on


class WorkerCore(ABC, Generic[_Client]):
    """The worker's state and plans; a shell adds the driving (see the module docstring)."""

    def __init__(
        self,
        client: _Client,
        *,
        concurrency: int = 10,
        identity: str | None = None,
        poll_wait: float = 20.0,
        shutdown_grace: float = 20.0,
        executor: Executor | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, not {concurrency}")
        if not 0 < poll_wait <= 60:
            raise ValueError(f"poll_wait must be more than 0 and at most 60 s, not {poll_wait}")
        if shutdown_grace < 0:
            raise ValueError(f"shutdown_grace must not be negative, not {shutdown_grace}")
        self._client = client
        self.concurrency = concurrency
        self.identity = identity or _common.default_identity()
        self.poll_wait = poll_wait
        self.shutdown_grace = shutdown_grace
        self._handlers: dict[str, Callable[..., object]] = {}
        self._started = False
        self._stopping = False
        self._stop_time = 0.0
        self._grace_over = False
        self._fault_error: BaseException | None = None
        self._free = concurrency
        self._pollers = 0
        self._in_poll = 0
        self._poller_bells: list[Bell] = []
        self._starved: set[Bell] = set()  # the bells of pollers waiting for a free slot
        self._attempts: set[Attempt] = set()
        self._main_bell: Bell | None = None
        # The shell's: the handlers' thread pool (made when needed unless given), and the
        # calls to abandon when the worker stops.
        self._executor = executor
        self._pool: Executor | None = None
        self._calls: set[Any] = set()
        self._prepare()

    # --- the shell's part ---------------------------------------------------------------

    @abstractmethod
    def _prepare(self) -> None:
        """Sets up the shell's own state (called by __init__)."""

    def _thread_pool(self) -> Executor:
        """Where blocking handlers run: ``executor``, else a pool of ``concurrency`` threads."""
        if self._pool is None:
            self._pool = self._executor or ThreadPoolExecutor(
                self.concurrency, thread_name_prefix="statewright-task"
            )
        return self._pool

    def _close_pool(self) -> None:
        # A handler that ignored its cancellation keeps its thread; nothing waits for it.
        if self._pool is not None and self._executor is None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    @abstractmethod
    def _bell(self) -> Bell:
        """A new unrung bell for one plan to wait on."""

    @abstractmethod
    def _spawn(self, plan: WorkerPlan, *, abandonable: bool) -> None:
        """Drives ``plan`` concurrently. A call of an ``abandonable`` plan (a poller's) is
        abandoned when the worker stops, raising :func:`abandoned` in the plan."""

    @abstractmethod
    def _launch(self, attempt: Attempt) -> Handle:
        """Starts ``attempt.handler(attempt.context)``; when it ends, the shell calls
        :meth:`_settle` (serialized like a plan step)."""

    @abstractmethod
    def _check_handler(self, handler: Callable[..., object]) -> None: ...

    @abstractmethod
    def stop(self, *, immediately: bool = False) -> None: ...

    def _signalled(self, number: int) -> None:
        log.info("worker %s got signal %d", self.identity, number)
        self.stop(immediately=self._stopping)

    # --- public ---------------------------------------------------------------------------

    def register(self, queue: str, handler: Callable[..., object]) -> None:
        """Runs ``handler`` for every task of ``queue``: it gets a :class:`RunningTask` and
        returns the result, a JSON object (a dict) or None."""
        if self._started:
            raise RuntimeError("register handlers before run()")
        if not QUEUE.match(queue):
            raise ValueError(f"not a queue name ([a-z][a-z0-9-.]{{0,62}}): {queue!r}")
        if queue in self._handlers:
            raise ValueError(f"queue {queue!r} already has a handler")
        if not callable(handler):
            raise TypeError(f"a handler must be callable, not {type(handler).__name__}")
        self._check_handler(handler)
        self._handlers[queue] = handler

    @property
    def queues(self) -> tuple[str, ...]:
        return tuple(self._handlers)

    @property
    def stopping(self) -> bool:
        return self._stopping

    # --- serialized entry points for the shells -----------------------------------------

    def _begin(self) -> None:
        if self._started:
            raise RuntimeError("a worker runs once")
        if not self._handlers:
            raise RuntimeError("register a handler before run()")
        self._started = True
        self._main_bell = self._bell()

    def _request_stop(self, immediately: bool) -> None:
        """Stops polling; running handlers get the grace period unless ``immediately``."""
        if immediately:
            self._end_grace()
        if self._stopping:
            return
        self._stopping = True
        self._stop_time = time.monotonic()
        log.info("worker %s stopping: polling ends", self.identity)
        self._ring_main()
        for bell in self._poller_bells:
            bell.set()

    def _settle(self, attempt: Attempt, run: Settled) -> None:
        attempt.outcome = run
        error = None if run.cancelled() else run.exception()
        failed = "CancelledError" if run.cancelled() else None
        if error is not None:
            failed = failure_of(error).type
        _tracing.end_task_span(attempt.span, failed)
        attempt.bell.set()

    def _fault(self, error: BaseException) -> None:
        """A plan failed unexpectedly (a bug): release every task at once and stop; run()
        raises the error at the end."""
        log.error("worker %s failed; stopping", self.identity, exc_info=error)
        if self._fault_error is None:
            self._fault_error = error
        self.stop(immediately=True)

    def _finish(self) -> None:
        if self._fault_error is not None:
            raise self._fault_error

    def _ring_main(self) -> None:
        if self._main_bell is not None:
            self._main_bell.set()

    def _end_grace(self) -> None:
        if self._grace_over or not self._started:
            return
        self._grace_over = True
        if self._attempts:
            log.info("worker %s: releasing %d running task(s)", self.identity, len(self._attempts))
        for attempt in self._attempts:
            attempt.bell.set()
        self._ring_main()

    def _return_slots(self, count: int) -> None:
        self._free += count
        if count > 0:
            for bell in self._starved:
                bell.set()

    # --- plans ------------------------------------------------------------------------------

    def _main(self) -> WorkerPlan:
        log.info(
            "worker %s polling %s with %d slot(s)",
            self.identity,
            ", ".join(self._handlers),
            self.concurrency,
        )
        for queue in self._handlers:
            self._pollers += 1
            self._spawn(self._poller(queue), abandonable=True)
        while not self._stopping:
            yield Wait(self._main_bell, None)
        deadline = self._stop_time + self.shutdown_grace
        while self._attempts and not self._grace_over:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            yield Wait(self._main_bell, left)
        self._end_grace()
        while self._attempts or self._pollers:
            yield Wait(self._main_bell, None)
        log.info("worker %s stopped", self.identity)

    def _poller(self, queue: str) -> WorkerPlan:
        bell = self._bell()
        self._poller_bells.append(bell)
        policy = backoff()
        failing = False
        try:
            while not self._stopping:
                if self._free <= 0:
                    self._starved.add(bell)
                    yield Wait(bell, None)  # rung when a slot frees, or at stop
                    continue
                self._starved.discard(bell)
                take = poll_share(self._free, self._pollers - self._in_poll)
                self._free -= take
                self._in_poll += 1
                try:
                    tasks: tuple[Task, ...] = yield from Operations.poll_tasks(
                        self._client,
                        queue,
                        max_tasks=take,
                        wait=self.poll_wait,
                        identity=self.identity,
                    )
                except StatewrightError as exc:
                    self._return_slots(take)
                    if self._stopping:
                        return
                    level = logging.DEBUG if failing else logging.WARNING
                    if verdict(exc) is Verdict.GIVE_UP:
                        level = logging.ERROR
                    log.log(level, "polling %s failed, backing off: %s", queue, exc)
                    failing = True
                    yield from self._pause(bell, pause(policy, exc))
                    continue
                finally:
                    self._in_poll -= 1
                if failing:
                    log.info("polling %s works again", queue)
                    failing = False
                policy.reset()
                self._return_slots(take - len(tasks))
                for task in tasks:
                    attempt = Attempt(task, self._handlers[queue], self._bell())
                    self._attempts.add(attempt)
                    self._spawn(self._supervise(attempt), abandonable=False)
        finally:
            self._poller_bells.remove(bell)
            self._starved.discard(bell)
            self._pollers -= 1
            self._ring_main()

    def _pause(self, bell: Bell, seconds: float) -> WorkerPlan:
        """Waits ``seconds``, or until the worker stops (other rings do not cut it short)."""
        end = time.monotonic() + seconds
        while not self._stopping and (left := end - time.monotonic()) > 0:
            yield Wait(bell, left)

    def _supervise(self, attempt: Attempt) -> WorkerPlan:
        try:
            if self._stopping:
                # Leased by a poll that raced the stop: hand it straight back.
                yield from self._release(attempt)
                return
            task = attempt.task
            log.info("task %s (queue %s, attempt %d): working", task.name, task.queue, task.attempt)
            attempt.handle = self._launch(attempt)
            while attempt.outcome is None:
                if self._grace_over:
                    if not attempt.dropped:
                        attempt.cancel()
                        yield from self._release(attempt)
                    return
                if attempt.dropped:
                    # Cancelled: the slot stays taken until the handler returns.
                    yield Wait(attempt.bell, None)
                    continue
                wait = attempt.next_beat - time.monotonic()
                if wait > 0:
                    yield Wait(attempt.bell, wait)
                    continue
                yield from self._heartbeat(attempt)
            if not attempt.dropped:
                yield from self._report(attempt, attempt.outcome)
        finally:
            self._attempts.discard(attempt)
            self._return_slots(1)
            self._ring_main()

    def _heartbeat(self, attempt: Attempt) -> WorkerPlan:
        task = attempt.task
        try:
            beat: TaskHeartbeat = yield from Operations.heartbeat_task(
                self._client, task.name, task.lease_token, attempt.context.details()
            )
        except StatewrightError as exc:
            judged = verdict(exc)
            if judged is Verdict.DROP:
                log.info("task %s is no longer ours (%s): cancelling its handler", task.name, exc)
                attempt.cancel()
                return
            level = logging.ERROR if judged is Verdict.GIVE_UP else logging.WARNING
            log.log(level, "heartbeat of %s failed, retrying: %s", task.name, exc)
            attempt.next_beat = time.monotonic() + pause(attempt.backoff, exc)
            return
        attempt.backoff.reset()
        attempt.next_beat = next_heartbeat(time.monotonic(), beat.lease_expire_time)
        if beat.cancel_requested:
            log.info("task %s was cancelled: cancelling its handler", task.name)
            attempt.cancel()

    def _report(self, attempt: Attempt, run: Settled) -> WorkerPlan:
        task = attempt.task
        failure = _failure_of_run(run)
        if failure is None:
            result = run.result()
            delivered = yield from self._deliver(
                attempt,
                "completion",
                lambda: Operations.complete_task(
                    self._client,
                    task.name,
                    task.lease_token,
                    result,
                    request_id=request_id(task, "complete"),
                    traceparent=attempt.traceparent,
                    tracestate=attempt.tracestate,
                ),
                retry=True,
            )
            if delivered:
                took = (time.monotonic() - attempt.started) * 1000
                log.info("task %s (queue %s): completed in %.0f ms", task.name, task.queue, took)
            return
        error = None if run.cancelled() else run.exception()
        if error is not None and not isinstance(error, TaskFailure):
            # Most likely a bug in the handler: its traceback belongs in the worker's log.
            log.warning("task %s attempt %d raised", task.name, task.attempt, exc_info=error)
        else:
            log.info("task %s attempt %d failed: %r", task.name, task.attempt, failure)
        yield from self._deliver(
            attempt,
            "failure",
            lambda: Operations.fail_task(
                self._client,
                task.name,
                task.lease_token,
                failure.type,
                failure.message,
                details=failure.details,
                non_retryable=failure.non_retryable,
                retry_delay=failure.retry_delay,
                request_id=request_id(task, "fail"),
                close_key_until=failure.close_key_until,
                traceparent=attempt.traceparent,
                tracestate=attempt.tracestate,
            ),
            retry=True,
        )

    def _release(self, attempt: Attempt) -> WorkerPlan:
        task = attempt.task
        yield from self._deliver(
            attempt,
            "release",
            lambda: Operations.fail_task(
                self._client,
                task.name,
                task.lease_token,
                SHUTDOWN_TYPE,
                "the worker stopped before the handler finished",
                retry_delay=0,
                request_id=request_id(task, "fail"),
                timeout=RELEASE_TIMEOUT,
            ),
            retry=False,
        )

    def _deliver(
        self,
        attempt: Attempt,
        what: str,
        call: Callable[[], Generator[Effect, Any, Any]],
        *,
        retry: bool,
    ) -> Generator[Effect | Wait, Any, bool]:
        """Makes ``call`` (a completion, failure or release), retrying with backoff while
        the server is unavailable; idempotent by lease and request id. After the grace
        period a failed call is not tried again. True if the call was made."""
        task = attempt.task
        policy = backoff()
        while True:
            try:
                yield from call()
                return True
            except StatewrightError as exc:
                judged = verdict(exc)
                if judged is Verdict.DROP:
                    log.info("%s of %s dropped: %s", what, task.name, exc)
                    return False
                if judged is Verdict.RETRY and retry and not self._grace_over:
                    log.warning("%s of %s failed, retrying: %s", what, task.name, exc)
                    yield Wait(attempt.bell, pause(policy, exc))
                    continue
                log.error("%s of %s failed, giving up: %s", what, task.name, exc)
                return False


def _failure_of_run(run: Settled) -> TaskFailure | None:
    """The failure a finished handler run reports, or None when its result can complete
    the task (a JSON object, or None for an empty one)."""
    if run.cancelled():
        return TaskFailure("CancelledError", "the handler was cancelled")
    error = run.exception()
    if error is not None:
        return failure_of(error)
    result = run.result()
    if result is not None and not isinstance(result, Mapping):
        kind = type(result).__name__
        return failure_of(TypeError(f"a handler returns a dict (a JSON object) or None: {kind}"))
    try:
        to_struct(result)
    except (TypeError, ValueError) as exc:
        return failure_of(exc)
    return None
