"""The wiring of one server process: its parts opened in order, closed in reverse.

Storage first (migrated, waited for while the database starts), the definitions, then the
engine: the EventLoop, the group-commit writer, the runtime, the background schedulers
(timers, task sweeper, retention) and, on PostgreSQL, the listeners for other replicas'
hints. The use cases are built over those parts; the doors call nothing else. No use case
is written here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from statewrightd import errors
from statewrightd.app.batch_runner import GROUP_WINDOW
from statewrightd.app.batches import Batches
from statewrightd.app.diagnostics import Diagnostics, Engine
from statewrightd.app.handoff import Handoff
from statewrightd.app.lease_memory import LeaseMemory
from statewrightd.app.migrate import Migrations
from statewrightd.app.queues import QueueDesk
from statewrightd.app.reads import Reads
from statewrightd.app.repair import Repairs
from statewrightd.app.schedule_files import ScheduleFiles
from statewrightd.app.schedules import Schedules
from statewrightd.app.storage import Storage
from statewrightd.app.tasks import TaskDesk
from statewrightd.app.watch_recheck import WatchRecheck
from statewrightd.app.workflows import Workflows
from statewrightd.config import ServerConfig
from statewrightd.definitions.model import CHILD_QUEUE
from statewrightd.definitions.registry import DefinitionRegistry, FileReport
from statewrightd.domain import TERMINAL
from statewrightd.engine.answers import Outcome
from statewrightd.engine.background import Background
from statewrightd.engine.children import ChildRunner
from statewrightd.engine.clock import Clock
from statewrightd.engine.event_loop import EventLoop, Phase
from statewrightd.engine.fsm import StepLimits
from statewrightd.engine.idempotency import Idempotency
from statewrightd.engine.loading import InstanceLoader
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.engine.retention import RetentionPurger
from statewrightd.engine.runtime import WorkflowRuntime
from statewrightd.engine.schedules import ScheduleFirer
from statewrightd.engine.tasks import TaskPolls, TaskSweeper
from statewrightd.engine.timers import TimerScheduler
from statewrightd.engine.watch import StepEvent, WatchHub
from statewrightd.store.backends import open_repository
from statewrightd.store.notifications import HintListener, step_listener, task_listener
from statewrightd.store.records import HistoryRecord, TaskRecord, TaskRelease
from statewrightd.store.repository import Repository
from statewrightd.store.writer import BatchObserver, GroupCommitWriter, unobserved

_log = logging.getLogger(__name__)

# How often the watched instances' revisions are read when other replicas may write
# (PostgreSQL; app/watch_recheck.py): the bound on the delay a lost LISTEN/NOTIFY hint can
# cause. On PostgreSQL a hint is part of its step's transaction and is lost only with the
# listener's connection (which sends every watcher to history when it is back); where
# hints are sent after the commit (Citus), a replica that dies in between loses one, so
# the look comes more often.
WATCH_RECHECK_SECONDS = 30.0
WATCH_RECHECK_UNHINTED_SECONDS = 10.0
HINT_DELAY_SECONDS = 0.02


async def _cancelled(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def watch_recheck_seconds(repo: object) -> float:
    """How often the watched instances are looked at, given how ``repo`` sends step
    hints."""
    unhinted = getattr(repo, "hints_after_commit", False)
    return WATCH_RECHECK_UNHINTED_SECONDS if unhinted else WATCH_RECHECK_SECONDS


# How long a server that starts while its database does not answer keeps trying (with
# backoff) before it gives up: enough to ride out a database restart, well inside the two
# minutes the Kubernetes startup probe allows, instead of exiting into a crash loop.
STARTUP_DATABASE_WAIT = 30.0
IO_WORKERS = 8


@dataclass(frozen=True, slots=True)
class UseCases:
    workflows: Workflows
    reads: Reads
    tasks: TaskDesk
    diagnostics: Diagnostics
    schedules: Schedules
    queues: QueueDesk
    repairs: Repairs
    migrations: Migrations
    batches: Batches


@dataclass(frozen=True, slots=True)
class Parts:
    repo: Repository
    registry: DefinitionRegistry
    storage: Storage
    engine: Engine
    handoff: Handoff
    cases: UseCases


class Application:
    """One server process's parts and the use cases over them."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        step_observer: StepObserver | None = None,
        batch_observer: BatchObserver = unobserved,
    ) -> None:
        self.config = config
        self._step_observer: StepObserver = step_observer or Unobserved()
        self._batch_observer = batch_observer
        # The definition files as read at start (a dev server's watcher starts from them).
        self.definition_files: list[FileReport] = []
        # The definitions directory's schedules files, applied at open (and by a dev
        # server again whenever one changes).
        self.schedule_files: ScheduleFiles | None = None
        # Steps this process has committed: the web console recounts its lists when it
        # moves. Written by the EventLoop thread only; read from the asyncio thread.
        self.committed_steps = 0
        self._closing = contextlib.AsyncExitStack()
        self._parts: Parts | None = None
        # What a close could not finish (the EventLoop, the writer): a shutdown that left
        # work behind says so in its log and its exit status.
        self._unfinished: list[str] = []

    # -- the use cases, once open ----------------------------------------------------

    @property
    def workflows(self) -> Workflows:
        return self._opened().cases.workflows

    @property
    def reads(self) -> Reads:
        return self._opened().cases.reads

    @property
    def tasks(self) -> TaskDesk:
        """Where workers' calls go: polls, heartbeats, completions and failures."""
        parts = self._opened()
        parts.storage.require()
        return parts.cases.tasks

    @property
    def schedules(self) -> Schedules:
        return self._opened().cases.schedules

    @property
    def queues(self) -> QueueDesk:
        """Flow control on task queues: their configs and their health."""
        parts = self._opened()
        parts.storage.require()
        return parts.cases.queues

    @property
    def repairs(self) -> Repairs:
        """Retry and reset of one instance."""
        return self._opened().cases.repairs

    @property
    def migrations(self) -> Migrations:
        """Migration of one instance to another version of its definition."""
        return self._opened().cases.migrations

    @property
    def batches(self) -> Batches:
        """Batch operations: started, read, listed and cancelled here; applied by each
        replica's runner (app/batch_runner.py, which the server starts)."""
        return self._opened().cases.batches

    @property
    def diagnostics(self) -> Diagnostics:
        return self._opened().cases.diagnostics

    # -- the parts the process itself uses -------------------------------------------

    @property
    def parts(self) -> Parts:
        """The opened parts: the store, the definitions, the engine."""
        return self._opened()

    def _opened(self) -> Parts:
        assert self._parts is not None, "application not opened"
        return self._parts

    # -- opening and closing ---------------------------------------------------------

    async def open(self) -> None:
        closing = self._closing
        repo = await _open_when_reachable(self.config.database_url, STARTUP_DATABASE_WAIT)
        closing.push_async_callback(asyncio.to_thread, repo.close)
        storage = Storage(repo)
        closing.callback(storage.close)
        registry = await self._definitions(repo)
        io = ThreadPoolExecutor(max_workers=IO_WORKERS, thread_name_prefix="statewright-io")
        closing.callback(io.shutdown, wait=False, cancel_futures=True)
        engine = await self._engine(repo, registry, io)
        if engine.hub.recheck_after:
            recheck = WatchRecheck(engine.hub, repo, storage.read)
            looking = asyncio.create_task(recheck.run(engine.hub.recheck_after))
            closing.push_async_callback(_cancelled, looking)
        handoff = Handoff(engine.loop, engine.runtime, self._step_observer)
        reads = Reads(repo, registry, storage)
        clock = Clock(timedelta(seconds=self.config.clock_offset_seconds))
        requests = Idempotency(
            handoff.step, repo, registry, storage.read, window=self._window(), clock=clock
        )
        workflows = Workflows(
            handoff=handoff, requests=requests, storage=storage, reads=reads, hub=engine.hub
        )
        queues = QueueDesk(
            repo=repo,
            read=storage.read,
            clock=clock,
            polls=engine.polls,
        )
        tasks = TaskDesk(
            queues=queues,
            repo=repo,
            polls=engine.polls,
            clock=clock,
            read=storage.read,
            write=storage.write,
            step=workflows.step,
            replayed=requests.replay,
            instance=reads.get,
            observer=self._step_observer,
            leased=functools.partial(
                InstanceLoader(repo, registry).leased, cached=engine.runtime.cached_revision
            ),
            leases=LeaseMemory(budget=self.config.limits.cached_context_bytes // 4),
        )
        storage.on_down += [tasks.storage_down, workflows.storage_down]
        backend = "postgresql" if self.config.database_url.startswith("postgres") else "sqlite"
        diagnostics = Diagnostics(engine, handoff, reads, backend)
        schedules = Schedules(
            repo=repo,
            registry=registry,
            read=storage.read,
            clock=clock,
            workflows=workflows,
            poke=lambda: engine.loop.post(engine.schedules.poke),
            observer=self._step_observer,
        )
        diagnostics.limits_from(queues.known)
        if self.config.definitions_dir is not None:
            applied = await queues.apply_files(self.config.definitions_dir)
            if applied:
                _log.info(
                    "set the flow control of %d queue(s) from the queues files: %s",
                    len(applied),
                    ", ".join(c.queue for c in applied),
                )
        repairs = Repairs(workflows, clock)
        migrations = Migrations(workflows, repairs)
        batches = Batches(repo=repo, reads=reads, storage=storage, clock=clock, settle=GROUP_WINDOW)
        cases = UseCases(
            workflows, reads, tasks, diagnostics, schedules, queues, repairs, migrations, batches
        )
        self._parts = Parts(repo, registry, storage, engine, handoff, cases)
        if self.config.definitions_dir is not None:
            self.schedule_files = ScheduleFiles(schedules, self.config.definitions_dir)
            await self.schedule_files.apply()

    async def _definitions(self, repo: Repository) -> DefinitionRegistry:
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
        return registry

    async def _engine(
        self, repo: Repository, registry: DefinitionRegistry, io: ThreadPoolExecutor
    ) -> Engine:
        config, closing = self.config, self._closing
        loop = EventLoop(
            backlog_warning=config.backlog_warning, lag_warning=config.lag_warning_seconds
        )
        writer = GroupCommitWriter(
            repo, max_queue=config.writer_queue, post=loop.post, observe=self._batch_observer
        )
        writer.start()
        closing.push_async_callback(self._stop_checked, "the writer", writer.stop)
        clock = Clock(timedelta(seconds=config.clock_offset_seconds))
        runtime = WorkflowRuntime(
            loop=loop,
            repo=repo,
            writer=writer,
            registry=registry,
            io=io,
            observer=self._step_observer,
            clock=clock,
            retention=config.retention_seconds,
            cache_bytes=config.limits.cached_context_bytes,
            limits=StepLimits(
                value_bytes=config.limits.context_bytes, map_items=config.limits.map_items
            ),
            request_window=self._window(),
        )
        hub = WatchHub()
        runtime.listeners.append(functools.partial(self._publish_step, loop, hub))
        observer, aio = self._step_observer, asyncio.get_running_loop()
        background = Background(loop, repo, runtime.offload, clock)
        timers = TimerScheduler(background, submit=runtime.fire, observer=observer)
        runtime.on_armed = timers.armed

        def removed(workflow_ids: tuple[str, ...]) -> None:
            # EventLoop thread: what this replica cached goes here, its watchers there.
            runtime.forget(workflow_ids)
            aio.call_soon_threadsafe(hub.gone, workflow_ids)

        purger = RetentionPurger(
            background,
            retention=config.retention_seconds,
            request_window=config.request_window_seconds,
            removed=removed,
        )
        polls = TaskPolls(clock, registry.names_queue)
        polls.bind(aio)
        sweeper = TaskSweeper(background, submit=runtime.fire, polls=polls, observer=observer)
        schedules = ScheduleFirer(
            background, submit=runtime.fire, registry=registry, observer=observer
        )
        children = ChildRunner(background, submit=runtime.fire, registry=registry)
        runtime.on_scheduled = functools.partial(_scheduled, polls, children)
        runtime.listeners.append(functools.partial(_ended, children))
        engine = Engine(
            loop,
            runtime,
            writer,
            config.writer_queue,
            registry,
            hub,
            timers,
            sweeper,
            polls,
            purger,
            schedules,
        )
        loop.start(aio)
        closing.push_async_callback(self._stop_checked, "the EventLoop", loop.stop)
        loops = (timers, sweeper, purger, schedules, children)
        for each in loops:
            loop.post(each.start)
        if config.database_url.startswith(("postgresql://", "postgres://")):
            await self._listen(repo, engine, aio, children)
        # Timers are durable: a stopping replica only stops claiming them. Nor does it fail
        # or cancel tasks: they outlive any server. Stopped first, before anything else.
        closing.callback(_post_quietly, loop, [each.stop for each in loops])
        return engine

    async def _listen(
        self,
        repo: Repository,
        engine: Engine,
        aio: asyncio.AbstractEventLoop,
        children: ChildRunner,
    ) -> None:
        """Hints from other replicas: their committed steps (for watchers) and their newly
        ready tasks (for polls)."""
        url, hub, polls = self.config.database_url, engine.hub, engine.polls

        def deliver(hints: list[tuple[str, int]]) -> None:
            # Hints for this replica's own commits race its local publish; a short delay
            # lets the local copy win, so they cost no history read.
            aio.call_soon_threadsafe(aio.call_later, HINT_DELAY_SECONDS, hub.hint, hints)

        def reconnected() -> None:
            aio.call_soon_threadsafe(hub.catch_up_all)

        def ready(queues: list[str]) -> None:
            for queue in set(queues):
                polls.notify_soon(queue)
            if CHILD_QUEUE in queues:  # a child to start: another replica's step
                engine.loop.post(children.poke)

        hub.recheck_after = watch_recheck_seconds(repo)
        own_pids = getattr(repo, "backend_pids", ())
        steps = step_listener(
            url, deliver, on_connected=reconnected, own_pids=own_pids, wanted=lambda: hub.count > 0
        )
        hub.on_first = steps.wake
        tasks = task_listener(url, ready, own_pids=own_pids, wanted=lambda: polls.waiting() > 0)
        listeners: list[HintListener[Any]] = [steps, tasks]
        for listener in listeners:
            listener.start()
            self._closing.push_async_callback(asyncio.to_thread, listener.stop)

    def _publish_step(
        self, loop: EventLoop, hub: WatchHub, outcome: Outcome, history: HistoryRecord
    ) -> None:
        # EventLoop thread: hand watched steps to the asyncio side with the batched replies.
        self.committed_steps += 1
        if hub.watched(outcome.record.workflow_id):
            step = StepEvent(
                outcome.record,
                outcome.loaded,
                outcome.transitions,
                history.event,
                timers=outcome.timers,
                actor=history.actor,
                input=history.input,
            )
            loop.reply(functools.partial(hub.publish, step))

    def _window(self) -> timedelta:
        return timedelta(seconds=self.config.request_window_seconds)

    def begin_drain(self) -> None:
        if self._parts is None:
            return
        engine = self._parts.engine
        engine.hub.close()
        engine.polls.close()  # waiting polls answer now: a drain must not wait them out
        if engine.loop.phase is Phase.RUNNING:
            engine.loop.phase = Phase.DRAINING

    async def close(self) -> list[str]:
        """Close what was opened, last first (also after an open that failed halfway);
        the parts that did not stop cleanly (empty: a clean close)."""
        await self._closing.aclose()
        return list(self._unfinished)

    async def _stop_checked(self, part: str, stop: Callable[[], bool]) -> None:
        if not await asyncio.to_thread(stop):
            self._unfinished.append(part)

    # -- the process's own checks ------------------------------------------------------

    def storage_verdict(self, down: str | None) -> None:
        """Record the latest storage check: why storage is down, or None when it answered."""
        if self._parts is not None:
            self._parts.storage.verdict(down)

    async def ping(self) -> None:
        await self._opened().storage.ping()

    def storage_answered_within(self, seconds: float) -> bool:
        return self._parts is not None and self._parts.storage.answered_within(seconds)


def _scheduled(polls: TaskPolls, children: ChildRunner, task: TaskRecord | TaskRelease) -> None:
    """A step of this replica scheduled ``task``: wake its pollers (or the child runner)."""
    if task.queue == CHILD_QUEUE:
        children.poke()
    else:
        polls.notify_soon(task.queue)


def _ended(children: ChildRunner, outcome: Outcome, history: HistoryRecord) -> None:
    """A step of this replica ended an instance: a child's end may wait for delivery, or a
    parent's children for their cancel."""
    if outcome.record.status in TERMINAL:
        children.ended(outcome.record.workflow_id)


def _post_quietly(loop: EventLoop, stops: list[Any]) -> None:
    with contextlib.suppress(errors.Unavailable):
        for stop in stops:
            loop.post(stop)


async def _open_when_reachable(url: str, wait: float) -> Repository:
    """The repository, migrated; while the database does not answer, tried again with
    backoff for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    delay = 0.25
    while True:
        try:
            return await asyncio.to_thread(functools.partial(open_repository, url, migrate=True))
        except errors.StorageUnavailable as exc:
            left = deadline - time.monotonic()
            if left <= 0:
                raise
            _log.warning("the database does not answer (%s); trying again for %.0fs", exc, left)
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 5.0)
