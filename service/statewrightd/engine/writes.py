"""What a step writes: its instance row, its history row, its request record, and what it
does to the instance's timers and task, as the store's one operation.

The engine decides every value here, policies included: when a finished instance
expires (its definition's retention, or the server's), and until when a request record
answers retries of its request id (the request window), so the store only compares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from statewrightd.definitions.registry import Loaded
from statewrightd.domain import TERMINAL, TaskStatus, TraceContext, task_id_of, timer_id_of
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import Command, StartCommand, StepCommand
from statewrightd.engine.model import PlannedTask, Snapshot, StepResult, TimerPlan
from statewrightd.engine.observer import Observation
from statewrightd.engine.projection import Failed, ignore_failure, project
from statewrightd.engine.sessions import Session
from statewrightd.engine.snapshots import history_record, instance_record
from statewrightd.store.records import (
    HELD_UNTIL,
    NO_TASKS,
    NO_TIMERS,
    Create,
    InstanceRecord,
    Operation,
    RequestRecord,
    Save,
    SearchValues,
    TaskChange,
    TaskFinish,
    TaskRecord,
    TaskRelease,
    TimerChange,
    TimerRecord,
)


@dataclass(frozen=True, slots=True)
class Planned:
    """A step's operation, and what the instance has once it commits."""

    op: Operation
    timers: tuple[TimerRecord, ...]  # armed in its state after the step, in due order
    task: TaskRecord | None  # its open task after the step


class StepWrites:
    """Builds the operation of a step from its result."""

    def __init__(
        self,
        clock: Clock,
        retention: float,
        request_window: timedelta | None = None,
        projection_failed: Failed | None = None,
    ) -> None:
        """``retention``: seconds a finished instance is kept (math.inf: for ever) unless
        its definition says otherwise; ``request_window``: how long a request record
        answers retries (None: for ever)."""
        self._clock = clock
        self._retention = retention
        self._window = request_window
        self._failed = projection_failed

    def create(
        self, command: StartCommand, result: StepResult, observed: Observation | None = None
    ) -> Planned:
        """``observed``: what the observer noted of the step, whose trace context a task or
        a timer it plans keeps."""
        now = self._clock.now()
        trace = kept_trace(observed, result)
        record = instance_record(
            result.snapshot, now, now, self._expire_time(command.loaded, result, now)
        )
        change, armed = timer_change(result.timers, record, now, trace=trace)
        tasks, task = task_change(result, record, now, trace=trace)
        op = Create(
            record,
            history_record(
                result,
                command.history_event(),
                now,
                record,
                armed,
                actor=command.actor,
                taken=command.taken(),
            ),
            self._request_record(command, record),
            change,
            tasks,
            self._search(command.loaded, result.snapshot) or None,
        )
        return Planned(op, armed, task)

    def save(
        self,
        command: StepCommand,
        session: Session,
        result: StepResult,
        observed: Observation | None = None,
    ) -> Planned:
        now = self._clock.now()
        loaded = command.stepped_with(session.loaded)  # a migration's: the new version
        trace = kept_trace(observed, result)
        record = instance_record(
            result.snapshot,
            session.record.create_time,
            now,
            self._expire_time(loaded, result, now),
            command.run_after(session.record.run),
        )
        change, armed = timer_change(result.timers, record, now, command.fired(), trace)
        if not result.timers.disarm and not armed:
            armed = session.timers  # the step stayed in its state: its timers stay armed
        tasks, task = task_change(result, record, now, command.finishes(), trace)
        if task is None and not tasks.cancel and tasks.finish is None:
            task = session.task  # the step did not touch the task: it stays open
        history = history_record(
            result,
            command.history_event(result),
            now,
            record,
            armed if change.arm else (),
            actor=command.actor,
            taken=command.taken(),
        )
        op = Save(
            record,
            session.snapshot.revision,
            history,
            self._request_record(command, record),
            change,
            tasks,
            self._changed_search(session.loaded, session.snapshot, result.snapshot)
            if loaded is session.loaded
            else self._search(loaded, result.snapshot),  # another version: its fields only
        )
        return Planned(op, armed, task)

    def _search(self, loaded: Loaded, snapshot: Snapshot, *, counted: bool = True) -> SearchValues:
        d = loaded.definition
        if not d.search_fields:
            return ()
        s = snapshot
        failed = self._failed if counted and self._failed is not None else ignore_failure
        return project(
            d,
            workflow_id=s.workflow_id,
            state=s.state,
            revision=s.revision,
            context=s.context,
            failed=failed,
        )

    def _changed_search(
        self, loaded: Loaded, before: Snapshot, after: Snapshot
    ) -> SearchValues | None:
        """The instance's search values after the step, or None when they did not change
        (nothing to write: most steps change no projected value)."""
        if not loaded.definition.search_fields:
            return None
        new = self._search(loaded, after)
        return None if new == self._search(loaded, before, counted=False) else new

    def _expire_time(self, loaded: Loaded, result: StepResult, now: datetime) -> datetime | None:
        """When an instance this step finishes may be removed; None while it lives."""
        if result.snapshot.status not in TERMINAL:
            return None
        own = loaded.definition.retention
        seconds = self._retention if own is None else own
        return None if math.isinf(seconds) else now + timedelta(seconds=seconds)

    def _request_record(self, command: Command, record: InstanceRecord) -> RequestRecord | None:
        """What the step that answers the command's request id writes with itself. The
        answer is rebuilt from the history row at this revision on replay, so only the
        revision is stored. A record of the same id older than the window answers no
        retry any more: this one takes its place."""
        key = command.request
        if key is None:
            return None
        now = record.update_time
        return RequestRecord(
            request_id=key.request_id,
            workflow_id=record.workflow_id,
            method=key.method,
            fingerprint=key.fingerprint,
            # The text json.dumps writes, without its encoder's cost on every step.
            response=b'{"revision": %d}' % record.revision,
            create_time=now,
            live_after=None if self._window is None else now - self._window,
        )


def kept_trace(observed: Observation | None, result: StepResult) -> TraceContext | None:
    """The step's trace context when a timer or a task it plans keeps it: written (by the
    observer, with OpenTelemetry's propagator) only then, not for every step."""
    if observed is None:
        return None
    if not result.timers.arm and result.task.schedule is None and not result.task.items:
        return None
    return observed.trace


def timer_change(
    plan: TimerPlan,
    record: InstanceRecord,
    now: datetime,
    fired: str | None = None,
    trace: TraceContext | None = None,
) -> tuple[TimerChange, tuple[TimerRecord, ...]]:
    """A step's timer plan as the store's work, and the timers it arms, in due order, each
    with ``trace`` (the step's trace context, which the step it fires is linked to)."""
    armed = tuple(
        sorted(
            (
                TimerRecord(
                    workflow_id=record.workflow_id,
                    timer_id=timer_id_of(record.revision, t.transition),
                    revision=record.revision,
                    transition=t.transition,
                    target=t.target,
                    after=t.after,
                    due_time=t.at if t.at is not None else now + (t.delay or timedelta(0)),
                    trace=trace,
                )
                for t in plan.arm
            ),
            key=lambda t: t.due_time,
        )
    )
    if not plan.disarm and not armed and fired is None:
        return NO_TIMERS, armed
    return TimerChange(disarm=plan.disarm, arm=armed, fired=fired), armed


def task_change(
    result: StepResult,
    record: InstanceRecord,
    now: datetime,
    finish: TaskFinish | None = None,
    trace: TraceContext | None = None,
) -> tuple[TaskChange, TaskRecord | None]:
    """A step's task plan as the store's work, and the task it schedules, if any, each
    with ``trace`` (the step's trace context)."""
    plan = result.task
    scheduled = None if plan.schedule is None else _task(plan.schedule, record, now, trace)
    items = tuple(
        _task(p, record, now, trace, held=i >= plan.offered) for i, p in enumerate(plan.items)
    )
    release = None
    if plan.release is not None:
        r = plan.release
        release = TaskRelease(
            task_id_of(r.revision, r.index),
            r.spec.queue,
            now,
            now + timedelta(seconds=r.spec.schedule_to_close),
        )
    if scheduled is None and not plan.cancel and finish is None and not items and not release:
        return NO_TASKS, None
    change = TaskChange(
        schedule=scheduled, cancel=plan.cancel, finish=finish, items=items, release=release
    )
    return change, scheduled


def _task(
    planned: PlannedTask,
    record: InstanceRecord,
    now: datetime,
    trace: TraceContext | None,
    held: bool = False,
) -> TaskRecord:
    """The task row of ``planned``; a held item waits (HELD_UNTIL) for its release."""
    spec = planned.spec
    retry = spec.retry
    return TaskRecord(
        workflow_id=record.workflow_id,
        task_id=task_id_of(record.revision, planned.item),
        revision=record.revision,
        state=planned.state,
        queue=spec.queue,
        input=dict(planned.input),
        status=TaskStatus.SCHEDULED,
        attempt=0,
        max_attempts=retry.max_attempts,
        lease_token=None,
        lease_expire_time=None,
        attempt_start_time=None,
        available_time=HELD_UNTIL if held else now,
        schedule_time=now,
        deadline=HELD_UNTIL if held else now + timedelta(seconds=spec.schedule_to_close),
        start_to_close=spec.start_to_close,
        heartbeat=spec.heartbeat,
        retry={
            "initial_interval": retry.initial_interval,
            "backoff": retry.backoff,
            "max_interval": retry.max_interval,
            "non_retryable": sorted(retry.non_retryable),
        },
        heartbeat_details=None,
        last_error=None,
        last_request_id=None,
        update_time=now,
        priority=planned.priority,
        concurrency_key=planned.concurrency_key,
        item_index=planned.item,
        trace=trace,
    )
