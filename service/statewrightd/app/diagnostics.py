"""Diagnostics: the runtime as a whole, and one instance as the runtime holds it.

Both answer from memory wherever they can: they are what an operator reads while the
database is in trouble. The counters metrics scrape are read from any thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from statewrightd.app.handoff import Handoff
from statewrightd.app.reads import Reads
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.engine.event_loop import EventLoop, EventLoopMetrics
from statewrightd.engine.model import TransitionTaken
from statewrightd.engine.retention import RetentionPurger, RetentionStats
from statewrightd.engine.runtime import RuntimeCounts, WorkflowInfo, WorkflowRuntime
from statewrightd.engine.schedules import ScheduleFirer
from statewrightd.engine.tasks import QueueView, TaskPolls, TaskSweeper
from statewrightd.engine.timers import TimerScheduler, TimerStats
from statewrightd.engine.watch import WatchHub
from statewrightd.store.flow import QueueConfig
from statewrightd.store.records import QueueCounts, TimerRecord
from statewrightd.store.writer import GroupCommitWriter, WriterStats


@dataclass(frozen=True, slots=True)
class RuntimeDiagnostics:
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


@dataclass(frozen=True, slots=True)
class InstanceDiagnostics:
    """One instance as the runtime holds it, completed from the store where it holds
    nothing of it."""

    info: WorkflowInfo
    revision: int
    timers: tuple[TimerRecord, ...]
    recent: tuple[tuple[TransitionTaken, str], ...]  # with the actor of each one's step


@dataclass(frozen=True, slots=True)
class Engine:
    """The running parts diagnostics read."""

    loop: EventLoop
    runtime: WorkflowRuntime
    writer: GroupCommitWriter
    writer_capacity: int
    registry: DefinitionRegistry
    hub: WatchHub
    timers: TimerScheduler
    sweeper: TaskSweeper
    polls: TaskPolls
    purger: RetentionPurger
    schedules: ScheduleFirer


class Diagnostics:
    def __init__(self, engine: Engine, handoff: Handoff, reads: Reads, backend: str) -> None:
        self._engine = engine
        self._handoff = handoff
        self._reads = reads
        self._backend = backend
        self._started = time.monotonic()
        self._limits: Callable[[], list[QueueConfig]] = list

    def limits_from(self, limits: Callable[[], list[QueueConfig]]) -> None:
        """Where the queues' flow-control configs are read (as last known, no database call)."""
        self._limits = limits

    def queue_limits(self) -> list[QueueConfig]:
        return self._limits()

    async def runtime(self) -> RuntimeDiagnostics:
        e = self._engine
        counts = await self._handoff.call(e.runtime.counts)
        return RuntimeDiagnostics(
            loop=e.loop.metrics(),
            counts=counts,
            writer=e.writer.stats(),
            writer_capacity=e.writer_capacity,
            backend=self._backend,
            # What this process has compiled, from memory: diagnostics must answer while
            # the database is unreachable, which is when they are needed most.
            definitions=[
                f"definitions/{item.definition.name}/versions/{item.definition.version}"
                for item in e.registry.all()
            ],
            uptime=time.monotonic() - self._started,
            watchers=e.hub.active(),
            watch_catch_ups=e.hub.catch_ups,
            timers=e.timers.stats(),
            task_queues=self.task_queues(),
            retention=e.purger.stats(),
        )

    async def instance(self, workflow_id: str) -> InstanceDiagnostics:
        """GetWorkflowDiagnostics: the runtime's view of ``workflow_id`` (NOT_FOUND when
        neither the runtime nor the store has it)."""
        runtime = self._engine.runtime
        info = await self._handoff.call(lambda: runtime.info(workflow_id))
        revision, timers, recent = info.revision, info.timers, info.recent
        if not info.cached and info.admission is None:
            found = await self._reads.get(workflow_id)  # NOT_FOUND for unknown ids
            revision, timers = found.record.revision, found.timers
        if not recent and not info.cached:
            # The server keeps no session of an instance it is not running (a finished one,
            # one it never loaded): its last transitions are in its history. A cached
            # session answers alone, so that diagnostics of a live instance need no
            # database (they are what an operator reads while the database is in trouble).
            recent = await self._reads.recent_transitions(workflow_id, revision)
        return InstanceDiagnostics(info, revision, timers, recent)

    # -- from any thread (metrics scrapes) -------------------------------------------

    def loop_metrics(self) -> EventLoopMetrics:
        return self._engine.loop.metrics()

    def writer_stats(self) -> WriterStats:
        return self._engine.writer.stats()

    def timer_stats(self) -> TimerStats:
        return self._engine.timers.stats()

    def retention_stats(self) -> RetentionStats:
        return self._engine.purger.stats()

    def task_counts(self) -> list[QueueCounts]:
        """Every queue's open tasks as last counted."""
        return self._engine.sweeper.counts()

    def task_queues(self) -> list[QueueView]:
        """Every queue with open tasks or polls, as diagnostics show it."""
        polls = self._engine.polls
        counts = {c.queue: c for c in self.task_counts()}
        now = polls.now()
        names = sorted(set(counts) | set(polls.queues()))
        return [polls.view(counts.get(name), name, now) for name in names]
