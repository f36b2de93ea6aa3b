"""The server's engine in one thread, on a virtual clock and an in-memory store.

A ``Sandbox`` wires the parts a server wires (the definition registry, the runtime, the
group-commit writer, the timer scheduler, the task sweeper, the task desk, request ids)
the way the server does, and changes only what surrounds them: the store is a
``MemoryRepository``, the EventLoop thread is a queue the caller drains (``ManualLoop``),
storage calls run inline, and the clock is a ``VirtualClock`` that moves only when told.
Every step therefore runs the server's own code, from the request's conversion to the
step's saved result: nothing here decides what a step does.

Moving the clock (``advance_to``) stops at every instant something is due (a timer, a
task's lease or deadline), in order, and there has the timer scheduler look and the task
sweeper sweep, as they would on a server whose clock reached that instant.
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import random
import threading
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from google.protobuf import duration_pb2, struct_pb2
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd import errors
from statewrightd.api import requests as api_requests
from statewrightd.api import task_requests
from statewrightd.api.convert import dict_to_struct, struct_to_dict
from statewrightd.app.tasks import Completion, Failure, TaskDesk, TaskFailure, TaskRef
from statewrightd.config import Limits, ServerConfig
from statewrightd.context import current_actor
from statewrightd.definitions.model import CHILD_QUEUE
from statewrightd.definitions.registry import DefinitionRegistry, FileReport, Loaded
from statewrightd.domain import OPEN_TASK, TaskStatus
from statewrightd.engine import loading
from statewrightd.engine.answers import Outcome, Replay, Result
from statewrightd.engine.background import Background
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import Command
from statewrightd.engine.event_loop import EventLoop, Phase, TimerHandle
from statewrightd.engine.fsm import StepLimits
from statewrightd.engine.idempotency import Idempotency
from statewrightd.engine.observer import Unobserved
from statewrightd.engine.runtime import Job, StepListener, WorkflowRuntime
from statewrightd.engine.snapshots import settled_from
from statewrightd.engine.tasks import TaskPolls, TaskSweeper
from statewrightd.engine.timers import TimerScheduler
from statewrightd.reasons import Reason
from statewrightd.store.memory import MemoryRepository
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord
from statewrightd.store.writer import GroupCommitWriter

T = TypeVar("T")
P = ParamSpec("P")

# Where a sandbox's clock starts unless told otherwise: a fixed instant, so that runs repeat.
DEFAULT_START = datetime(2026, 1, 1, tzinfo=UTC)
# Whom history names for a scenario's requests: as on a server without authentication.
ACTOR = current_actor()
# The identity a scenario's worker polls with.
WORKER = "statewright-test"
# Instants one move of the clock may stop at before it is taken for a loop that never ends
# (a timer that re-arms itself with no delay, say).
MAX_STOPS = 100_000


class VirtualClock(Clock):
    """A clock that stands still until ``set``; never moves backwards."""

    def __init__(self, start: datetime = DEFAULT_START) -> None:
        super().__init__()
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def set(self, when: datetime) -> None:
        if when < self._now:
            raise ValueError(f"the clock cannot go back from {self._now} to {when}")
        self._now = when


class ManualLoop(EventLoop):
    """The EventLoop's contract without its thread: ``post`` queues, ``drain`` runs what is
    queued on the caller's thread, and ``call_later`` counts on the virtual clock."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(name="scenario")
        self._clock = clock
        self._ready: deque[Callable[[], None]] = deque()
        self._later: list[tuple[datetime, int, TimerHandle, Callable[[], None]]] = []
        self._order = itertools.count()

    def start(self, aio: asyncio.AbstractEventLoop) -> None:
        raise RuntimeError("a ManualLoop has no thread to start: drain() runs it")

    def post(self, fn: Callable[[], None]) -> None:
        if self.phase in (Phase.STOPPING, Phase.TERMINATED):
            raise errors.Unavailable("the sandbox is closed", reason=Reason.SHUTTING_DOWN)
        self._ready.append(fn)

    def queue_depth(self) -> int:
        return len(self._ready)

    def stop(self, timeout: float = 10.0) -> bool:
        self.phase = Phase.TERMINATED
        return True

    def in_loop(self) -> bool:
        return True

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle()
        due = self._clock.now() + timedelta(seconds=max(0.0, delay))
        heapq.heappush(self._later, (due, next(self._order), handle, fn))
        return handle

    def reply(self, fn: Callable[[], None]) -> None:
        self._ready.append(fn)

    def drain(self) -> None:
        """Run everything queued, and every callback due by now, until nothing is left;
        then what runs at a batch's end (the runtime hands its saves to the writer)."""
        now = self._clock.now()
        while True:
            while self._ready:
                self._ready.popleft()()
            while self._later and self._later[0][0] <= now:
                _, _, handle, fn = heapq.heappop(self._later)
                if not handle.cancelled:
                    fn()
            if self._ready:
                continue
            for hook in self._batch_end:
                hook()
            if not self._ready:
                return


class InlineExecutor(Executor):
    """Runs what is submitted at once, on the caller's thread: storage is in memory."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)
        return future


@dataclass(frozen=True, slots=True)
class Found:
    """An instance as a read finds it: its row, definition, armed timers and open tasks."""

    record: InstanceRecord
    loaded: Loaded
    timers: tuple[TimerRecord, ...]
    tasks: tuple[TaskRecord, ...]


class NoTask(LookupError):
    """A worker waited for a task of a queue on which none is open, or will be: the
    scenario, not the server, is at odds with what happened."""


class Unsettled(RuntimeError):
    """Time did not settle: something kept coming due at the same instant."""


class Sandbox:
    """One server's engine, driven from the caller's thread. Not thread-safe."""

    def __init__(
        self,
        *,
        start: datetime = DEFAULT_START,
        seed: int = 0,
        config: ServerConfig | None = None,
    ) -> None:
        """``seed`` draws the retry delays that tasks' backoff leaves to chance."""
        config = config or ServerConfig()
        self.clock = VirtualClock(start)
        self.repo = MemoryRepository()
        window = timedelta(seconds=config.request_window_seconds)
        self.registry = DefinitionRegistry(self.repo)
        self._limits = api_requests.value_limits(config.limits or Limits())
        self._loop = ManualLoop(self.clock)
        self._writer = GroupCommitWriter(self.repo, post=self._loop.post)
        self._runtime = WorkflowRuntime(
            loop=self._loop,
            repo=self.repo,
            writer=self._writer,
            registry=self.registry,
            io=InlineExecutor(),
            clock=self.clock,
            retention=config.retention_seconds,
            limits=StepLimits(
                value_bytes=config.limits.context_bytes, map_items=config.limits.map_items
            ),
            request_window=window,
        )
        observer = Unobserved()
        background = Background(self._loop, self.repo, self._runtime.offload, self.clock)
        self._timers = TimerScheduler(background, submit=self._runtime.fire, observer=observer)
        self._runtime.on_armed = self._timers.armed
        self._requests = Idempotency(
            self._run,
            self.repo,
            self.registry,
            self._read,
            window=window,
            clock=self.clock,
        )
        polls = TaskPolls(self.clock)
        rng = random.Random(seed)
        self._sweeper = TaskSweeper(
            background,
            submit=self._runtime.fire,
            polls=polls,
            observer=observer,
            rng=rng,
        )
        self._desk = TaskDesk(
            repo=self.repo,
            polls=polls,
            clock=self.clock,
            read=self._read,
            write=self._read,
            step=self._requests.step,
            replayed=self._requests.replay,
            instance=self._instance,
            observer=observer,
            rng=rng,
        )
        # Neither the timer scheduler nor the sweeper is started: their periodic looks
        # stand for the passing of real time, which here passes only in ``advance_to``,
        # and that has them look at every instant something comes due.

    def on_step(self, listener: StepListener) -> None:
        """Tell ``listener`` of every step that commits, whoever started it (a request, a
        timer, the task sweeper), with the transitions it took."""
        self._runtime.listeners.append(listener)

    def close(self) -> None:
        self._loop.stop()
        self.repo.close()

    # -- definitions -------------------------------------------------------------------

    def place(self, report: FileReport) -> Loaded:
        """Load a definition file as read (``registry.read_file``), as the server would."""
        return self.registry.place(report).loaded

    def definition(self, name: str, version: int | None = None) -> Loaded:
        return self.registry.get(name, version)

    # -- the clock ---------------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def advance(self, delta: timedelta) -> None:
        """Let ``delta`` of time pass; everything that comes due meanwhile happens, in order."""
        if delta < timedelta(0):
            raise ValueError("time only moves forward")
        self.advance_to(self.clock.now() + delta)

    def advance_to(self, until: datetime) -> None:
        for _ in range(MAX_STOPS):
            self._settle()
            due = self._next_due()
            if due is None or due > until:
                if until > self.clock.now():
                    self._stop_at(until)
                return
            self._stop_at(due)
        raise Unsettled(
            f"time did not settle: more than {MAX_STOPS:,} instants with something due "
            f"before {until.isoformat()}"
        )

    def _stop_at(self, when: datetime) -> None:
        self.clock.set(when)
        self._loop.drain()
        self._timers.round_now()
        self._sweeper.round_now()
        self._settle()

    def _next_due(self) -> datetime | None:
        """The next instant after now at which a timer or a task needs the server."""
        now = self.clock.now()
        dues = [self.repo.next_timer_due(now)]
        for task in self._open_tasks():
            dues.append(task.deadline)
            if task.lease_expire_time is not None:
                dues.append(task.lease_expire_time)
        later = [due for due in dues if due is not None and due > now]
        return min(later) if later else None

    def _open_tasks(
        self, workflow_id: str | None = None, queue: str | None = None
    ) -> list[TaskRecord]:
        found: list[TaskRecord] = []
        token = ""
        while True:
            page = self.repo.list_tasks(
                workflow_id=workflow_id, queue=queue, page_size=1000, page_token=token
            )
            found.extend(t for t in page.items if t.status in OPEN_TASK)
            token = page.next_page_token
            if not token:
                return found

    # -- running the loop --------------------------------------------------------------

    def _settle(self) -> None:
        """Run the loop and the writer until neither has anything left to do."""
        while True:
            self._loop.drain()
            if not self._writer.commit_queued():
                return

    async def _run(self, command: Command, budget: float | None) -> Outcome | Replay:
        """The application's hand-off of a step to the EventLoop, and its answer."""
        answers: list[Result] = []
        self._loop.post(functools.partial(self._runtime.submit, Job(command, answers.append)))
        self._settle()
        if not answers:
            raise errors.Internal(f"the {command.kind} step was not answered")
        result = answers[0]
        if isinstance(result, errors.StatewrightError):
            raise result
        return result

    @staticmethod
    async def _read(fn: Callable[[], T]) -> T:
        return fn()

    @staticmethod
    def _await(coro: Coroutine[Any, Any, T]) -> T:
        """Run one of the server's coroutines to its end, on the calling thread's asyncio
        loop of sandboxes (in a helper thread when the caller's thread runs a loop of its
        own, as an async test does)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _thread_loop().run_until_complete(coro)
        box: list[T | BaseException] = []

        def run() -> None:
            try:
                box.append(_thread_loop().run_until_complete(coro))
            except BaseException as exc:
                box.append(exc)

        thread = threading.Thread(target=run, name="statewright-test")
        thread.start()
        thread.join()
        result = box[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _step(self, command: Command) -> Outcome:
        return self._await(self._requests.step(command, None))

    @staticmethod
    def _struct(values: Mapping[str, Any], field: str) -> struct_pb2.Struct:
        """A map of values as a request carries it: a protobuf Struct."""
        try:
            return dict_to_struct(values)
        except (ValueError, TypeError) as exc:
            raise TypeError(f"{field}: {exc}") from None

    def _values(self, values: Mapping[str, Any], field: str) -> dict[str, Any]:
        """A map of values as the server receives it: through a Struct (numbers are doubles
        there; integral ones come back as ints), within the server's limits."""
        return struct_to_dict(self._struct(values, field), field, self._limits)

    # -- requests ----------------------------------------------------------------------

    def start(
        self,
        definition: str,
        version: int | None = None,
        *,
        workflow_id: str = "",
        input: Mapping[str, Any] | None = None,
    ) -> Outcome:
        request = pb.StartWorkflowRequest(
            definition=definition,
            version=version or 0,
            workflow_id=workflow_id,
            input=self._struct(input or {}, "input"),
        )
        loaded = self.registry.get(*api_requests.start_target(request))
        return self._step(api_requests.start_command(request, loaded, self._limits))

    def resume(
        self, workflow_id: str, event: str = "", input: Mapping[str, Any] | None = None
    ) -> Outcome:
        request = pb.ResumeWorkflowRequest(
            name=f"workflows/{workflow_id}",
            event=event,
            input=self._struct(input or {}, "input"),
        )
        return self._step(api_requests.resume_command(request, self._limits))

    def signal(
        self, workflow_id: str, event: str, payload: Mapping[str, Any] | None = None
    ) -> Outcome:
        """A signal's outcome: ``accepted`` False (with ``rejection``) when refused."""
        request = pb.SignalWorkflowRequest(
            name=f"workflows/{workflow_id}",
            event=event,
            payload=self._struct(payload or {}, "payload"),
        )
        return self._step(api_requests.signal_command(request, self._limits))

    def cancel(self, workflow_id: str, reason: str = "") -> Outcome:
        request = pb.CancelWorkflowRequest(name=f"workflows/{workflow_id}", reason=reason)
        return self._step(api_requests.cancel_command(request))

    # -- a worker's side of tasks ------------------------------------------------------

    def lease(self, queue: str) -> TaskRecord | None:
        """Poll ``queue`` once, now, as a worker would; the task leased, if one is ready."""
        if queue != CHILD_QUEUE:  # the children's queue no worker may poll: a scenario may
            task_requests.poll(  # play a child's end on it (the server's runner is not here)
                task_pb.PollTasksRequest(queue=queue, identity=WORKER, max_tasks=1), None
            )
        tasks = self._await(self._desk.poll(queue, WORKER, 1, 0.0))
        self._settle()
        return tasks[0] if tasks else None

    def take(self, queue: str, workflow_id: str | None = None) -> TaskRecord:
        """The next task of ``queue`` (of ``workflow_id``'s, when given), leased by a worker
        that waits for it: the clock moves on to when it is ready, if it is not yet, and
        whatever comes due meanwhile happens first."""
        for _ in range(MAX_STOPS):
            waiting = self._open_tasks(workflow_id, queue)
            if not waiting:
                raise NoTask(f"no task is open on queue {queue!r}")
            ready = [t for t in waiting if t.status is not TaskStatus.LEASED]
            if not ready:
                raise NoTask(f"every open task of queue {queue!r} is leased by another worker")
            soonest = min(t.available_time for t in ready)
            if soonest > self.clock.now():
                self.advance_to(soonest)
                continue
            leased = self.lease(queue)
            if leased is None:
                raise NoTask(f"the open task of queue {queue!r} is not ready to be leased")
            return leased
        raise Unsettled(f"no task of queue {queue!r} became ready")

    def complete(self, task: TaskRecord, result: Mapping[str, Any] | None = None) -> Completion:
        assert task.lease_token is not None, "only a leased task is completed"
        values = self._values(result or {}, "result")
        ref = TaskRef(task.workflow_id, task.task_id)
        done = self._await(
            self._desk.complete(
                ref, task.lease_token, values, request=None, budget=None, actor=ACTOR
            )
        )
        self._settle()
        return done

    def fail(
        self,
        task: TaskRecord,
        *,
        type: str,
        message: str = "",
        details: Mapping[str, Any] | None = None,
        non_retryable: bool = False,
        retry_after: timedelta | None = None,
    ) -> Failure:
        assert task.lease_token is not None, "only a leased task is failed"
        request = task_pb.FailTaskRequest(
            name=f"workflows/{task.workflow_id}/tasks/{task.task_id}",
            lease_token=task.lease_token,
            non_retryable=non_retryable,
        )
        request.error.type = type
        request.error.message = message
        request.error.details.CopyFrom(self._struct(details or {}, "details"))
        if retry_after is not None:
            request.retry_delay.CopyFrom(duration_pb2.Duration())
            request.retry_delay.FromTimedelta(retry_after)
        fail = task_requests.fail(request, self._limits)
        failed = self._await(
            self._desk.fail(
                fail.ref,
                fail.token,
                TaskFailure(fail.failure.type, fail.failure.message, fail.failure.details),
                non_retryable=fail.non_retryable,
                retry_after=fail.retry_after,
                request=None,
                budget=None,
                actor=ACTOR,
            )
        )
        self._settle()
        return failed

    def time_out(self, task: TaskRecord) -> None:
        """The worker that leased ``task`` never answers: its lease runs out, and the
        sweeper retries the task or gives it up, as on a server."""
        assert task.lease_expire_time is not None, "only a leased task times out"
        self.advance_to(task.lease_expire_time)

    # -- reads -------------------------------------------------------------------------

    async def _instance(self, workflow_id: str) -> loading.Found:
        found = self.get(workflow_id)
        return loading.Found(found.record, found.loaded, found.timers)

    def get(self, workflow_id: str) -> Found:
        """The instance as GetWorkflow reads it, with every open task of its."""
        record = settled_from(self.repo, self.repo.load(workflow_id))
        loaded = self.registry.get(record.definition, record.version)
        timers: tuple[TimerRecord, ...] = ()
        if loaded.definition.timed_from:
            timers = tuple(self.repo.armed_timers([workflow_id]).get(workflow_id, ()))
        tasks = tuple(self._open_tasks(workflow_id))
        return Found(record, loaded, timers, tasks)


class _LoopHolder:
    """A thread's asyncio loop for sandboxes, closed when the thread (or the process)
    lets go of it: one per thread however many sandboxes it runs, each loop holding file
    descriptors of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        self.loop.close()


class _ThreadLoops(threading.local):
    holder: _LoopHolder | None = None


_LOOPS = _ThreadLoops()


def _thread_loop() -> asyncio.AbstractEventLoop:
    if _LOOPS.holder is None:
        _LOOPS.holder = _LoopHolder()
    return _LOOPS.holder.loop
