"""The application: storage, definitions, writer, EventLoop and runtime, wired together.

The servicer talks only to this object, in the engine's terms (commands, outcomes, step
events). Step commands are posted to the EventLoop thread and awaited on the asyncio loop;
plain reads (Get, List, definitions, replays, history) go straight to the store on a small
read pool because they touch no live state.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from statewrightd import errors
from statewrightd.config import ServerConfig
from statewrightd.definitions.registry import DefinitionRegistry, FileReport, Loaded
from statewrightd.domain import TERMINAL
from statewrightd.engine.answers import Outcome, Replay, Result
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import CancelCommand, Command
from statewrightd.engine.event_loop import EventLoop, EventLoopMetrics, Phase
from statewrightd.engine.idempotency import Idempotency
from statewrightd.engine.model import TransitionTaken
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.engine.retention import RetentionPurger, RetentionStats
from statewrightd.engine.runtime import (
    RECENT_TRANSITIONS,
    Job,
    RuntimeCounts,
    WorkflowInfo,
    WorkflowRuntime,
    in_task_state,
)
from statewrightd.engine.snapshots import settled_from, transitions_from_dicts
from statewrightd.engine.task_desk import TaskDesk
from statewrightd.engine.tasks import QueueView, TaskPolls, TaskSweeper
from statewrightd.engine.timers import TimerScheduler, TimerStats
from statewrightd.engine.watch import StepEvent, WatchFeed, WatchHub
from statewrightd.store.backends import open_repository
from statewrightd.store.notifications import HintListener, step_listener, task_listener
from statewrightd.store.records import (
    HistoryRecord,
    InstanceRecord,
    Page,
    Purged,
    QueueCounts,
    TaskRecord,
    TimerRecord,
    Tombstone,
)
from statewrightd.store.repository import Repository
from statewrightd.store.writer import BatchObserver, GroupCommitWriter, WriterStats, unobserved

_log = logging.getLogger(__name__)

T = TypeVar("T")

# Beyond this many queued commands the EventLoop is behind: refuse at once instead of
# letting latency grow without bound.
MAX_LOOP_QUEUE = 20_000
# How often an idle watcher re-reads history when other replicas may write (PostgreSQL):
# the bound on the delay a lost LISTEN/NOTIFY hint can cause.
WATCH_RECHECK_SECONDS = 30.0
HINT_DELAY_SECONDS = 0.02
# How long a server that starts while its database does not answer keeps trying (with
# backoff) before it gives up: enough to ride out a database restart, well inside the two
# minutes the Kubernetes startup probe allows, instead of exiting into a crash loop.
STARTUP_DATABASE_WAIT = 30.0
# Instances read per query when counting them (the store's largest page).
COUNT_PAGE = 1000


@dataclass(frozen=True, slots=True)
class Found:
    """An instance as read from the store, with its definition, its armed timers and its
    open task."""

    record: InstanceRecord
    loaded: Loaded
    timers: tuple[TimerRecord, ...] = ()
    task: TaskRecord | None = None


@dataclass(frozen=True, slots=True)
class Diagnostics:
    loop: EventLoopMetrics
    counts: RuntimeCounts
    writer: WriterStats
    writer_capacity: int
    backend: str
    definitions: list[str]
    uptime: float
    watchers: int
    watch_catch_ups: int
    timers: TimerStats
    task_queues: list[QueueView]
    retention: RetentionStats


class Application:
    def __init__(
        self,
        config: ServerConfig,
        *,
        step_observer: StepObserver | None = None,
        batch_observer: BatchObserver = unobserved,
    ) -> None:
        self.config = config
        self.started = time.monotonic()
        self._step_observer: StepObserver = step_observer or Unobserved()
        self._batch_observer = batch_observer
        self._repo: Repository | None = None
        self._registry: DefinitionRegistry | None = None
        # The definition files as read at start (a dev server's watcher starts from them).
        self.definition_files: list[FileReport] = []
        self._writer: GroupCommitWriter | None = None
        self._loop: EventLoop | None = None
        self._runtime: WorkflowRuntime | None = None
        self._requests: Idempotency | None = None
        self._timers: TimerScheduler | None = None
        self._sweeper: TaskSweeper | None = None
        self._purger: RetentionPurger | None = None
        self._desk: TaskDesk | None = None
        self._polls: TaskPolls | None = None
        self._io = ThreadPoolExecutor(max_workers=8, thread_name_prefix="statewright-io")
        self._reads = ThreadPoolExecutor(max_workers=8, thread_name_prefix="statewright-read")
        self.writer_capacity = config.writer_queue
        self.watch_hub = WatchHub()
        self._feed = WatchFeed(self.watch_hub, self.get, self.history_after)
        self._listeners: list[HintListener[Any]] = []
        # Why storage is known to be down (the readiness check's verdict), or None: calls
        # that need it are then refused at once, so that clients' retries can go elsewhere
        # instead of each waiting out its deadline on a dead database.
        self._storage_down: str | None = None
        # Steps this process has committed: the web console recounts its lists when it
        # moves. Written by the EventLoop thread only; read from the asyncio thread.
        self.committed_steps = 0

    # -- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        url = self.config.database_url
        window = timedelta(seconds=self.config.request_window_seconds)
        repo = await _open_when_reachable(url, STARTUP_DATABASE_WAIT, window)
        self._repo = repo
        registry = DefinitionRegistry(repo)
        directory = self.config.definitions_dir
        if directory is not None:
            dev = self.config.dev_mode
            load = await asyncio.to_thread(registry.load_directory, directory, dev=dev)
            _log.info("loaded %d definitions from %s", len(load.loaded), directory)
            for line in load.warnings:
                _log.warning("%s", line)
            for line in load.refused:
                _log.error("%s", line)
            for placed in load.placed:
                if placed.note:
                    _log.info("dev: %s", placed.note)
            self.definition_files = load.reports
        stored = await asyncio.to_thread(registry.load_stored)
        if stored:
            _log.info("compiled %d more definition versions recorded in the store", stored)
        self._registry = registry
        self._loop = EventLoop()
        self._writer = GroupCommitWriter(
            repo,
            max_queue=self.writer_capacity,
            post=self._loop.post,
            observe=self._batch_observer,
        )
        self._writer.start()
        clock = Clock(timedelta(seconds=self.config.clock_offset_seconds))
        self._runtime = WorkflowRuntime(
            loop=self._loop,
            repo=repo,
            writer=self._writer,
            registry=registry,
            io=self._io,
            observer=self._step_observer,
            clock=clock,
            retention=self.config.retention_seconds,
            max_context_bytes=self.config.limits.context_bytes,
        )
        self._runtime.listeners.append(self._publish_step)
        self._timers = TimerScheduler(
            loop=self._loop,
            repo=repo,
            offload=self._runtime.offload,
            clock=clock,
            submit=self._runtime.fire,
            observer=self._step_observer,
        )
        self._runtime.on_armed = self._timers.armed
        self._requests = Idempotency(
            self._run, repo, registry, self._read, window=window, clock=clock
        )
        aio = asyncio.get_running_loop()
        runtime, hub = self._runtime, self.watch_hub

        def removed(workflow_ids: tuple[str, ...]) -> None:
            # EventLoop thread: what this replica cached goes here, its watchers there.
            runtime.forget(workflow_ids)
            aio.call_soon_threadsafe(hub.gone, workflow_ids)

        self._purger = RetentionPurger(
            loop=self._loop,
            repo=repo,
            offload=self._runtime.offload,
            clock=clock,
            retention=self.config.retention_seconds,
            request_window=self.config.request_window_seconds,
            removed=removed,
        )
        polls = TaskPolls(clock)
        polls.bind(aio)
        self._polls = polls
        self._sweeper = TaskSweeper(
            loop=self._loop,
            repo=repo,
            offload=self._runtime.offload,
            clock=clock,
            submit=self._runtime.fire,
            polls=polls,
            observer=self._step_observer,
        )
        self._runtime.on_scheduled = lambda task: polls.notify_soon(task.queue)
        self._desk = TaskDesk(
            repo=repo,
            polls=polls,
            clock=clock,
            read=self._read,
            step=self.step,
            replayed=self._requests.replay,
            observer=self._step_observer,
        )
        self._loop.start(aio)
        self._loop.post(self._timers.start)
        self._loop.post(self._sweeper.start)
        self._loop.post(self._purger.start)
        if self.config.database_url.startswith(("postgresql://", "postgres://")):
            hub = self.watch_hub

            def deliver(hints: list[tuple[str, int]]) -> None:
                # Hints for this replica's own commits race its local publish; a short
                # delay lets the local copy win, so they cost no history read.
                aio.call_soon_threadsafe(aio.call_later, HINT_DELAY_SECONDS, hub.hint, hints)

            def reconnected() -> None:
                aio.call_soon_threadsafe(hub.catch_up_all)

            hub.recheck_after = WATCH_RECHECK_SECONDS
            own_pids = getattr(repo, "backend_pids", ())
            listener = step_listener(
                url,
                deliver,
                on_connected=reconnected,
                own_pids=own_pids,
                wanted=lambda: hub.count > 0,
            )
            hub.on_first = listener.wake

            def ready(queues: list[str]) -> None:
                for queue in set(queues):
                    polls.notify_soon(queue)

            tasks = task_listener(url, ready, own_pids=own_pids, wanted=lambda: polls.waiting() > 0)
            self._listeners = [listener, tasks]
            for each in self._listeners:
                each.start()

    def _publish_step(self, outcome: Outcome, history: HistoryRecord) -> None:
        # EventLoop thread: hand watched steps to the asyncio side with the batched replies.
        self.committed_steps += 1
        hub = self.watch_hub
        if hub.watched(outcome.record.workflow_id):
            step = StepEvent(
                outcome.record,
                outcome.loaded,
                outcome.transitions,
                history.event,
                timers=outcome.timers,
                actor=history.actor,
            )
            self.loop.reply(functools.partial(hub.publish, step))

    def begin_drain(self) -> None:
        self.watch_hub.close()
        if self._polls is not None:
            self._polls.close()  # waiting polls answer now: a drain must not wait them out
        if self._loop is not None and self._loop.phase is Phase.RUNNING:
            self._loop.phase = Phase.DRAINING

    async def close(self) -> None:
        if self._timers is not None and self._loop is not None:
            # Timers are durable: a stopping replica only stops claiming them.
            with contextlib.suppress(errors.Unavailable):
                self._loop.post(self._timers.stop)
                if self._sweeper is not None:
                    # Nor does it fail or cancel tasks: they outlive any server.
                    self._loop.post(self._sweeper.stop)
                if self._purger is not None:
                    self._loop.post(self._purger.stop)
        for listener in self._listeners:
            await asyncio.to_thread(listener.stop)
        if self._loop is not None:
            await asyncio.to_thread(self._loop.stop)
        if self._writer is not None:
            await asyncio.to_thread(self._writer.stop, True)
        self._io.shutdown(wait=False, cancel_futures=True)
        self._reads.shutdown(wait=False, cancel_futures=True)
        if self._repo is not None:
            await asyncio.to_thread(self._repo.close)

    @property
    def repo(self) -> Repository:
        assert self._repo is not None, "application not opened"
        return self._repo

    @property
    def registry(self) -> DefinitionRegistry:
        assert self._registry is not None, "application not opened"
        return self._registry

    @property
    def loop(self) -> EventLoop:
        assert self._loop is not None, "application not opened"
        return self._loop

    @property
    def runtime(self) -> WorkflowRuntime:
        assert self._runtime is not None, "application not opened"
        return self._runtime

    @property
    def tasks(self) -> TaskDesk:
        """Where workers' calls go: polls, heartbeats, completions and failures."""
        self._require_storage()
        assert self._desk is not None, "application not opened"
        return self._desk

    # -- storage health ----------------------------------------------------------------------

    def storage_verdict(self, down: str | None) -> None:
        """Record the latest storage check: why storage is down, or None when it answered."""
        if down is not None and self._storage_down is None:
            _log.warning("storage is down (%s): calls that need it fail fast", down)
        elif down is None and self._storage_down is not None:
            _log.info("storage is back: calls that need it are served again")
        self._storage_down = down

    def _require_storage(self) -> None:
        down = self._storage_down
        if down is not None:
            raise errors.StorageUnavailable(
                f"storage is unavailable ({down}); retry with backoff",
                reason="STORAGE_UNAVAILABLE",
            )

    # -- steps -------------------------------------------------------------------------------

    async def step(self, command: Command, budget: float | None) -> Outcome:
        """Run one step within ``budget`` seconds; a retried request id gets its original
        answer, in the same shape."""
        self._require_storage()
        assert self._requests is not None, "application not opened"
        try:
            return await self._requests.step(command, budget)
        except errors.NotFound as exc:
            raise await self._missing(command.workflow_id, exc) from None

    async def _run(self, command: Command, budget: float | None) -> Outcome | Replay:
        """Post ``command`` to the EventLoop and await its answer."""
        loop = self.loop
        if loop.queue_depth() > MAX_LOOP_QUEUE:
            raise errors.ResourceExhausted(
                "the server is overloaded; retry with backoff", reason="OVERLOADED"
            )
        aio = asyncio.get_running_loop()
        future: asyncio.Future[object] = aio.create_future()

        def reply(result: Result) -> None:
            loop.reply(functools.partial(_settle, future, result))

        job = Job(command, reply, observed=self._step_observer.requested())
        loop.post(functools.partial(self.runtime.submit, job))
        # A plain timer rather than wait_for(shield(...)): one less task per call. The
        # step goes on regardless; only this caller stops waiting for it.
        expired = False

        def expire() -> None:
            nonlocal expired
            if not future.done():
                expired = True
                future.set_result(_EXPIRED)

        timer = aio.call_later(budget, expire) if budget is not None else None
        try:
            result = await future
        finally:
            if timer is not None:
                timer.cancel()
        if expired:
            raise errors.DeadlineExceeded(
                "the deadline passed before the step finished; its outcome is decided by the "
                "server and visible through GetWorkflow",
                metadata={"workflow_id": command.workflow_id},
            )
        if isinstance(result, errors.StatewrightError):
            raise result
        assert isinstance(result, Outcome | Replay)
        return result

    async def on_loop(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the EventLoop thread (to read live state) and return its result."""
        loop = self.loop
        aio = asyncio.get_running_loop()
        future: asyncio.Future[T] = aio.create_future()

        def run() -> None:
            try:
                value: Any = fn()
            except Exception as exc:
                value = exc
            loop.reply(functools.partial(_settle, future, value))

        loop.post(run)
        return await future

    # -- watching ----------------------------------------------------------------------------

    def watch(self, workflow_id: str, after: int | None) -> AsyncIterator[StepEvent]:
        """Every revision of the instance in order, from ``after`` (None: as it is now)."""
        return self._feed.follow(workflow_id, after)

    # -- reads -------------------------------------------------------------------------------

    async def _read(self, fn: Callable[[], T]) -> T:
        self._require_storage()
        return await asyncio.get_running_loop().run_in_executor(self._reads, fn)

    async def definition(self, name: str, version: int | None) -> Loaded:
        registry = self.registry
        cached = registry.cached(name, version) if version else registry.latest_cached(name)
        if cached is not None:
            return cached
        return await self._read(lambda: registry.get(name, version))

    async def definitions(self) -> list[Loaded]:
        registry = self.registry
        return await self._read(registry.all_recorded)

    async def get(self, workflow_id: str) -> Found:
        repo, registry = self.repo, self.registry

        def read() -> Found:
            try:
                record = settled_from(repo, repo.load(workflow_id))
            except errors.RecordNotFound:
                raise _not_found(workflow_id, repo.lookup_tombstone(workflow_id)) from None
            loaded = registry.get(record.definition, record.version)
            timers: tuple[TimerRecord, ...] = ()
            if loaded.definition.timed_from:  # only then can it have any
                timers = tuple(repo.armed_timers([workflow_id]).get(workflow_id, ()))
            task = None
            if in_task_state(loaded, record):
                task = repo.open_tasks([workflow_id]).get(workflow_id)
            return Found(record, loaded, timers, task)

        return await self._read(read)

    async def _missing(self, workflow_id: str, error: errors.NotFound) -> errors.NotFound:
        """A step's NOT_FOUND, saying that the instance expired when a tombstone says so."""
        if error.reason != "WORKFLOW_NOT_FOUND":
            return error
        repo = self.repo
        try:
            tombstone = await self._read(lambda: repo.lookup_tombstone(workflow_id))
        except errors.StatewrightError:
            return error  # the step's answer stands; the explanation is only a courtesy
        return error if tombstone is None else _not_found(workflow_id, tombstone)

    async def delete(
        self, workflow_id: str, expected_revision: int, *, force: bool, budget: float | None
    ) -> Deleted:
        """DeleteWorkflow: remove one finished instance and everything of it.

        A live one is refused unless ``force``: then it is cancelled first, by a step like
        any other (so its watchers see it end), and removed at the revision that step
        saved. ``expected_revision`` (0: any) is the revision the caller saw."""
        found = await self.get(workflow_id)
        record, loaded, cancelled = found.record, found.loaded, False
        if expected_revision and record.revision != expected_revision:
            raise _revision_mismatch(workflow_id, expected_revision, record.revision)
        if record.status not in TERMINAL:
            if not force:
                raise errors.FailedPrecondition(
                    f"workflow {workflow_id} is {record.status}: only a finished instance is "
                    "deleted, unless force is set (which cancels it first)",
                    reason="WORKFLOW_NOT_FINISHED",
                    metadata={"workflow_id": workflow_id, "status": record.status},
                )
            cancel = CancelCommand(
                workflow_id=workflow_id,
                reason="deleted with force",
                expected_revision=expected_revision,
            )
            outcome = await self.step(cancel, budget)
            record, loaded, cancelled = outcome.record, outcome.loaded, True
        await self._remove(workflow_id, record.revision)
        self.watch_hub.gone((workflow_id,))
        return Deleted(record, loaded, cancelled)

    async def _remove(self, workflow_id: str, revision: int) -> Purged:
        self._require_storage()
        loop, runtime = self.loop, self.runtime
        aio = asyncio.get_running_loop()
        future: asyncio.Future[Any] = aio.create_future()

        def reply(result: Purged | Exception) -> None:
            loop.reply(functools.partial(_settle, future, result))

        loop.post(lambda: runtime.remove(workflow_id, revision, reply))
        try:
            return await future  # type: ignore[no-any-return]
        except errors.RecordNotFound:
            raise _not_found(workflow_id, None) from None
        except errors.Conflict as exc:
            raise _revision_mismatch(workflow_id, revision, exc.actual_revision or 0) from None

    async def list_workflows(
        self, *, definition: str | None, status: str | None, page_size: int, page_token: str
    ) -> tuple[Page, list[Found]]:
        repo, registry = self.repo, self.registry

        def read() -> tuple[Page, list[Found]]:
            page = repo.list(
                definition=definition, status=status, page_size=page_size, page_token=page_token
            )
            loaded = [registry.get(r.definition, r.version) for r in page.items]
            timed = [
                r.workflow_id
                for r, d in zip(page.items, loaded, strict=True)
                if d.definition.timed_from
            ]
            timers = repo.armed_timers(timed) if timed else {}
            tasked = [
                r.workflow_id
                for r, d in zip(page.items, loaded, strict=True)
                if in_task_state(d, r)
            ]
            tasks = repo.open_tasks(tasked) if tasked else {}
            found = [
                Found(
                    settled_from(repo, r),
                    d,
                    tuple(timers.get(r.workflow_id, ())),
                    tasks.get(r.workflow_id),
                )
                for r, d in zip(page.items, loaded, strict=True)
            ]
            return page, found

        return await self._read(read)

    async def count_workflows(
        self, *, definition: str | None, status: str | None, limit: int
    ) -> tuple[int, bool]:
        """How many instances match, counted up to ``limit``; True when there are more."""
        repo = self.repo

        def read() -> tuple[int, bool]:
            count, token = 0, ""
            while count < limit:
                page = repo.list(
                    definition=definition,
                    status=status,
                    page_size=min(COUNT_PAGE, limit - count),
                    page_token=token,
                )
                count += len(page.items)
                token = page.next_page_token
                if not token:
                    return count, False
            return count, True

        return await self._read(read)

    async def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]:
        repo = self.repo
        return await self._read(lambda: repo.history_after(workflow_id, after_revision, limit))

    async def recent_transitions(
        self, workflow_id: str, revision: int
    ) -> tuple[tuple[TransitionTaken, str], ...]:
        """The last transitions of an instance's saved steps (up to as many as a session
        remembers), each with who caused its step, from its history; none when storage
        cannot be read."""
        repo = self.repo
        after = max(0, revision - RECENT_TRANSITIONS)
        try:
            rows = await self._read(
                lambda: repo.history_after(workflow_id, after, RECENT_TRANSITIONS)
            )
        except errors.StatewrightError:
            return ()
        taken = [
            (t, row.actor or "") for row in rows for t in transitions_from_dicts(row.transitions)
        ]
        return tuple(taken[-RECENT_TRANSITIONS:])

    async def ping(self) -> None:
        # Never refused: it is how storage is found to be back.
        await asyncio.get_running_loop().run_in_executor(self._reads, self.repo.ping)

    def writer_stats(self) -> WriterStats | None:
        """The writer's counters, from any thread (metrics scrapes); None before open."""
        return self._writer.stats() if self._writer is not None else None

    # -- diagnostics -------------------------------------------------------------------------

    async def diagnostics(self) -> Diagnostics:
        counts = await self.on_loop(self.runtime.counts)
        assert self._writer is not None
        return Diagnostics(
            loop=self.loop.metrics(),
            counts=counts,
            writer=self._writer.stats(),
            writer_capacity=self.writer_capacity,
            backend="postgresql" if self.config.database_url.startswith("postgres") else "sqlite",
            # What this process has compiled, from memory: diagnostics must answer while
            # the database is unreachable, which is when they are needed most.
            definitions=[
                f"definitions/{item.definition.name}/versions/{item.definition.version}"
                for item in self.registry.all()
            ],
            uptime=time.monotonic() - self.started,
            watchers=self.watch_hub.active(),
            watch_catch_ups=self.watch_hub.catch_ups,
            timers=self.timer_stats(),
            task_queues=self.task_queues(),
            retention=self.retention_stats(),
        )

    def retention_stats(self) -> RetentionStats:
        """The purge's counts, from any thread (metrics scrapes)."""
        assert self._purger is not None, "application not opened"
        return self._purger.stats()

    def timer_stats(self) -> TimerStats:
        """The timer scheduler's counts, from any thread (metrics scrapes)."""
        assert self._timers is not None, "application not opened"
        return self._timers.stats()

    def task_counts(self) -> list[QueueCounts]:
        """Every queue's open tasks as last counted, from any thread (metrics scrapes)."""
        return self._sweeper.counts() if self._sweeper is not None else []

    def task_queues(self) -> list[QueueView]:
        """Every queue with open tasks or polls, as diagnostics show it."""
        assert self._polls is not None, "application not opened"
        polls = self._polls
        counts = {c.queue: c for c in self.task_counts()}
        now = polls.now()
        names = sorted(set(counts) | set(polls.queues()))
        return [polls.view(counts.get(name), name, now) for name in names]

    async def workflow_info(self, workflow_id: str) -> WorkflowInfo:
        runtime = self.runtime
        return await self.on_loop(lambda: runtime.info(workflow_id))


async def _open_when_reachable(url: str, wait: float, request_window: timedelta) -> Repository:
    """The repository, migrated; while the database does not answer, tried again with
    backoff for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    delay = 0.25
    while True:
        try:
            return await asyncio.to_thread(
                functools.partial(open_repository, url, migrate=True, request_window=request_window)
            )
        except errors.StorageUnavailable as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            _log.warning("the database does not answer (%s); trying again for %.0fs", exc, left)
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 5.0)


_EXPIRED = object()


@dataclass(frozen=True, slots=True)
class Deleted:
    """What DeleteWorkflow removed: the instance as it was, and whether it was cancelled
    for it (force)."""

    record: InstanceRecord
    loaded: Loaded
    cancelled: bool


def _not_found(workflow_id: str, tombstone: Tombstone | None) -> errors.NotFound:
    if tombstone is None:
        return errors.NotFound(
            f"workflow {workflow_id} not found",
            reason="WORKFLOW_NOT_FOUND",
            metadata={"workflow_id": workflow_id},
        )
    return errors.NotFound(
        f"workflow {workflow_id} expired: it finished, its retention passed, and it was "
        f"removed at {tombstone.removed_time.isoformat()}",
        reason="WORKFLOW_EXPIRED",
        metadata={
            "workflow_id": workflow_id,
            "expire_time": tombstone.expire_time.isoformat(),
            "removed_time": tombstone.removed_time.isoformat(),
        },
    )


def _revision_mismatch(workflow_id: str, expected: int, actual: int) -> errors.Aborted:
    return errors.Aborted(
        f"workflow {workflow_id} is at revision {actual}, not {expected}",
        reason="REVISION_MISMATCH",
        metadata={
            "workflow_id": workflow_id,
            "expected_revision": expected,
            "actual_revision": actual,
        },
    )


def _settle(future: asyncio.Future[Any], value: Any) -> None:
    if future.done():
        return
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)
