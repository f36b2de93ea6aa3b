"""Test-only break modes of a real server, to show that the fault suite's checker catches
real bugs.

A server started with ``STATEWRIGHT_TEST_HOOKS=tests.chaos.breaks`` (and the repository on
its ``PYTHONPATH``) loads this module; ``STATEWRIGHT_CHAOS_BREAK=MODE`` (or ``MODE,MODE``)
then breaks one of its promises (or several) on purpose, by replacing a piece of the
server in this process only:

- ``ack-before-save``: a signal is answered accepted as soon as its step is handed to the
  writer, before the save's outcome is known (a conflict re-applies it at another revision,
  a failed save loses it).
- ``skip-cas``: saves no longer compare the revision (the instance row is overwritten
  whatever it holds, and a history row already at that revision is silently kept).
- ``double-complete``: a task's lease fence is gone, so that a duplicate or late completion
  is applied again, to whatever task of the same state the instance runs by then.
- ``double-fire``: a timer that fired is fired once more, and the firing step no longer
  checks that its timer is still armed.
- ``drop-watch``: WatchWorkflow streams leave out revision 3.
- ``stale-retry``: after a compare-and-swap conflict (another replica saved first), the
  step is applied again to the state and context this replica had cached, at the stored
  revision, instead of to the instance as stored: a lost update.
- ``ignore-flow-limit``: a poll of a queue with flow control is served as if the queue
  had none (its max_leased and key_max_leased are not looked at).
- ``batch-twice``: a batch applies each item a second time, under another request id
  (as if the item's request id were not derived from its batch).
- ``batch-ignore-prefix``: a batch's start matches its instances without its id prefix.
- ``unfenced-lease-memory``: a completion through the process that leased the task, taken
  from its memory of the lease, no longer requires the task's row unchanged since, so its
  answer misses a heartbeat another replica took meanwhile.
- ``skip-timer-fence``: a timer's step no longer checks that the entry of the state that
  armed the timer still lasts (the timer is still armed), so a timer disarmed by a step
  that re-entered its state fires in the new entry.

Nothing here is imported by the server package: it exists for tests/chaos only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from typing import Any

from statewrightd import errors
from statewrightd.api.batch_items import BatchItems
from statewrightd.app import tasks as task_desk
from statewrightd.app.batches import BatchAsked, Batches, Started
from statewrightd.app.tasks import Completion, TaskDesk, TaskRef
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import TaskStatus, TraceContext
from statewrightd.engine import writes as writes_module
from statewrightd.engine.answers import Outcome, Result
from statewrightd.engine.commands import CompleteTaskCommand, RequestKey, SignalCommand
from statewrightd.engine.event_loop import EventLoop
from statewrightd.engine.model import TimerPlan
from statewrightd.engine.runtime import MAX_CONFLICT_RETRIES, Job, Loading, WorkflowRuntime
from statewrightd.engine.stepping import Persist
from statewrightd.engine.timers import TimerScheduler
from statewrightd.engine.watch import StepEvent, WatchFeed
from statewrightd.store import postgres as postgres_store
from statewrightd.store import sql_postgres
from statewrightd.store.records import (
    BatchRecord,
    InstanceRecord,
    TimerChange,
    TimerRecord,
    target_of,
)

BREAK_ENV = "STATEWRIGHT_CHAOS_BREAK"
DROPPED_REVISION = 3

_log = logging.getLogger(__name__)


def _ack_before_save() -> None:
    original = WorkflowRuntime._persist

    def early_persist(  # noqa: PLR0917 - the same signature as the method it replaces
        self: WorkflowRuntime,
        job: Job,
        segment: Any,
        persist: Persist,
        loaded: Loaded,
        taken: Loading | None = None,
    ) -> None:
        if isinstance(job.command, SignalCommand):
            reply = job.reply
            job.reply = _ignore  # whatever the save's outcome, the caller has its answer
            op, timers = persist.planned.op, persist.planned.timers
            transitions = persist.result.transitions
            reply(Outcome(target_of(op), loaded, transitions, saved=True, timers=timers))
        original(self, job, segment, persist, loaded, taken)

    WorkflowRuntime._persist = early_persist  # type: ignore[method-assign]


def _ignore(result: Result) -> None:
    pass


def _replace(sql: str, old: str, new: str) -> str:
    if old not in sql:
        raise AssertionError(f"{old!r} is not in the statement any more: update the break")
    return sql.replace(old, new)


def _skip_cas() -> None:
    history_end = "      FROM changed\n), req AS ("
    no_conflict = (
        "      FROM changed\n    ON CONFLICT (workflow_id, revision) DO NOTHING\n), req AS ("
    )
    for key, sql in list(sql_postgres.SAVES.items()):
        unchecked = _replace(sql, "AND revision = %(expected)s", "")
        sql_postgres.SAVES[key] = _replace(unchecked, history_end, no_conflict)
    rows_end = "      FROM rows r JOIN changed USING (workflow_id)\n)\nSELECT"
    rows_no_conflict = (
        "      FROM rows r JOIN changed USING (workflow_id)\n"
        "    ON CONFLICT (workflow_id, revision) DO NOTHING\n)\nSELECT"
    )
    for key, sql in list(sql_postgres.SAVE_MANYS.items()):
        unchecked = _replace(sql, "AND w.revision = r.expected", "")
        sql_postgres.SAVE_MANYS[key] = _replace(unchecked, rows_end, rows_no_conflict)


def _double_complete() -> None:
    # The step's compare-and-swap no longer looks at the task's lease...
    for key, sql in list(sql_postgres.SAVES.items()):
        if key[1]:
            sql_postgres.SAVES[key] = _replace(sql, sql_postgres._TASK_FENCE, "")
    for key, sql in list(sql_postgres.SAVE_MANYS.items()):
        if key[1]:
            sql_postgres.SAVE_MANYS[key] = _replace(sql, " AND r.fenced", "")

    async def complete(
        self: TaskDesk,
        ref: TaskRef,
        token: str,
        result: dict[str, Any],
        *,
        request: RequestKey | None,
        budget: float | None,
        actor: str,
        worker: TraceContext | None = None,
    ) -> Completion:
        # ...and nothing looks at it before the step either.
        task = await self.get(ref)
        command = CompleteTaskCommand(
            actor=actor,
            workflow_id=ref.workflow_id,
            request=request,
            task_id=ref.task_id,
            state=task.state,
            lease_token=token,
            result=result,
        )
        outcome = await self._fenced_step(command, ref, budget)
        return Completion(outcome, task_desk._finished(task, TaskStatus.COMPLETED))

    TaskDesk.complete = complete  # type: ignore[method-assign]


def _unfenced_lease_memory() -> None:
    of = CompleteTaskCommand.of

    def unfenced(*args: Any, remembered: bool = False, **kwargs: Any) -> CompleteTaskCommand:
        return of(*args, **kwargs)  # as if the task had been read: no fence on its row

    CompleteTaskCommand.of = unfenced  # type: ignore[method-assign]


def _skip_timer_fence() -> None:
    change = writes_module.timer_change

    def unfenced(
        plan: TimerPlan,
        record: InstanceRecord,
        now: datetime,
        fired: str | None = None,
        trace: TraceContext | None = None,
    ) -> tuple[TimerChange, tuple[TimerRecord, ...]]:
        return change(plan, record, now, None, trace)  # the save no longer checks it is armed

    writes_module.timer_change = unfenced


def _double_fire() -> None:
    _skip_timer_fence()
    answered = TimerScheduler._answered
    fired_again: set[tuple[str, str]] = set()

    def fire_again(self: TimerScheduler, command: Any, result: Result) -> None:
        answered(self, command, result)
        key = (command.workflow_id, command.timer_id)
        if isinstance(result, Outcome) and result.saved and key not in fired_again:
            fired_again.add(key)
            self._in_flight += 1
            self._submit(command, lambda again: self._answered(command, again))

    TimerScheduler._answered = fire_again  # type: ignore[method-assign]


def _drop_watch() -> None:
    follow = WatchFeed.follow

    async def dropping(
        self: WatchFeed, workflow_id: str, after: int | None
    ) -> AsyncIterator[StepEvent]:
        async for event in follow(self, workflow_id, after):
            if event.record.revision == DROPPED_REVISION and not event.current:
                continue
            yield event

    WatchFeed.follow = dropping  # type: ignore[method-assign]


def _stale_retry() -> None:
    on_saved = WorkflowRuntime._on_saved

    def reapply_to_cache(self: WorkflowRuntime, save: Any, outcome: Any) -> None:
        job = save.job
        session = self._cache.get(job.workflow_id)
        actual = getattr(outcome, "actual_revision", None)
        if (
            isinstance(outcome, errors.Conflict)
            and actual
            and not job.command.expected()
            and session is not None
            and job.attempts < MAX_CONFLICT_RETRIES
            and self._admission.owns(job.workflow_id, save.token)
        ):
            # Learn only the stored revision; keep the state and context cached.
            job.attempts += 1
            session.snapshot = dataclasses.replace(session.snapshot, revision=actual)
            session.record = dataclasses.replace(session.record, revision=actual)
            segment = self._admission.get(job.workflow_id)
            assert segment is not None
            self._execute(job, segment, session)
            return
        on_saved(self, save, outcome)

    WorkflowRuntime._on_saved = reapply_to_cache  # type: ignore[method-assign]


def _ignore_flow_limit() -> None:
    # The claim of a queue without limits, without its check that the queue has none.
    flow = postgres_store.PostgresRepository.FLOW
    fitting = sql_postgres.FITTING_LEASE.replace(sql_postgres._NO_LIMITS, "")
    assert fitting != sql_postgres.FITTING_LEASE, "the one-statement claim's check moved"
    postgres_store.PostgresRepository.FLOW = dataclasses.replace(
        flow,
        unlimited_lease=sql_postgres.SQL.lease_tasks,
        unlimited_ready=sql_postgres.SQL.ready_tasks,
        fitting_lease=fitting,
    )


def _batch_twice() -> None:
    apply_once = BatchItems._apply

    async def apply_twice(self: BatchItems, batch: BatchRecord, workflow_id: str) -> None:
        await apply_once(self, batch, workflow_id)
        again = dataclasses.replace(batch, batch_id=batch.batch_id + ".again")
        await apply_once(self, again, workflow_id)

    BatchItems._apply = apply_twice  # type: ignore[method-assign]


def _batch_ignore_prefix() -> None:
    start = Batches.start

    async def start_unnarrowed(self: Batches, asked: BatchAsked) -> Started:
        return await start(self, dataclasses.replace(asked, id_prefix=""))

    Batches.start = start_unnarrowed  # type: ignore[method-assign]


MODES: dict[str, Callable[[], None]] = {
    "batch-twice": _batch_twice,
    "batch-ignore-prefix": _batch_ignore_prefix,
    "ignore-flow-limit": _ignore_flow_limit,
    "ack-before-save": _ack_before_save,
    "skip-cas": _skip_cas,
    "double-complete": _double_complete,
    "double-fire": _double_fire,
    "drop-watch": _drop_watch,
    "stale-retry": _stale_retry,
    "skip-timer-fence": _skip_timer_fence,
    "unfenced-lease-memory": _unfenced_lease_memory,
}


def install(
    loop: EventLoop, aio: asyncio.AbstractEventLoop, env: Mapping[str, str] | None = None
) -> bool:
    """Break the server as ``STATEWRIGHT_CHAOS_BREAK`` says (one mode, or several that
    break different promises, comma-separated); True if it did."""
    env = os.environ if env is None else env
    modes = [m.strip() for m in env.get(BREAK_ENV, "").split(",") if m.strip()]
    if not modes:
        return False
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"{BREAK_ENV}={mode!r}: not one of {', '.join(sorted(MODES))}")
    for mode in modes:
        MODES[mode]()
    _log.warning("chaos: this server is broken on purpose (%s); for tests only", ", ".join(modes))
    return True
