"""What workers ask of tasks: leases, heartbeats, completions, failures.

The asyncio side of the task protocol. Leasing, heartbeats and retries touch only the task
table (none of them is a step of the instance, so none bumps its revision) and go to the
store straight from here. A completion, and a failure that gives up, are steps: they are
posted to the EventLoop like any other, and the store's fence on the task decides, in the
step's own compare-and-swap transaction, whether the lease the worker holds is still the
current one.

A poll that finds nothing waits on this replica's record of polls (``TaskPolls``) until
a task becomes ready on its queue (scheduled here, retried here, or hinted by another
replica), re-checking the table at least every ``RECHECK`` seconds for what no hint told.

An abandoned poll loses no task for long. A poll whose caller goes away while the lease
query runs puts what it leased back at once (``release_task``: the attempt is not
counted). A response that is lost after it left (the connection dropped on the way) holds
its tasks no longer than the first lease, at most ``FIRST_LEASE`` seconds: a worker's
first heartbeat is what extends a lease to its full length.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from statewrightd import errors
from statewrightd.app.lease_memory import LeaseMemory
from statewrightd.app.queues import QueueDesk
from statewrightd.app.storage import Reader
from statewrightd.domain import TaskStatus, TraceContext
from statewrightd.engine.answers import Outcome
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import Command, CompleteTaskCommand, RequestKey, TaskGiveUpCommand
from statewrightd.engine.loading import Found
from statewrightd.engine.observer import StepObserver
from statewrightd.engine.tasks import FIRST_LEASE, TaskPolls, failure_payload, gives_up, retry_delay
from statewrightd.reasons import Reason
from statewrightd.store.filters import TASKS, parse_filter
from statewrightd.store.records import InstanceRecord, Page, TaskRecord
from statewrightd.store.repository import Choose, Repository

_log = logging.getLogger(__name__)


RECHECK = 2.0


Step = Callable[[Command, float | None], Awaitable[Outcome]]
# (workflow id, request key) -> the stored answer: request ids are unique per instance.
Replayed = Callable[[str, RequestKey], Awaitable[Outcome | None]]
Instance = Callable[[str], Awaitable[Found]]
# Blocking: the instances of tasks just leased that a completion may step unloaded, by id,
# given those the lease read along with them (Repository.lease_tasks).
Leased = Callable[[Sequence[TaskRecord], Mapping[str, InstanceRecord]], dict[str, Found]]


@dataclass(frozen=True, slots=True)
class TaskRef:
    workflow_id: str
    task_id: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    task: TaskRecord
    cancel_requested: bool


@dataclass(frozen=True, slots=True)
class Completion:
    outcome: Outcome
    task: TaskRecord  # as the completion left it


@dataclass(frozen=True, slots=True)
class Failure:
    task: TaskRecord  # BACKOFF (to be retried), or as giving up left it
    outcome: Outcome | None  # the give-up step (None: the task will be retried)
    instance: Found | None = None  # a retry's answer: the instance, which it leaves as it is


@dataclass(frozen=True, slots=True)
class _Completing:
    """What a CompleteTask call brings besides the task."""

    token: str
    result: dict[str, Any]
    request: RequestKey | None
    budget: float | None
    actor: str
    worker: TraceContext | None


@dataclass(frozen=True, slots=True)
class TaskFailure:
    type: str
    message: str
    details: dict[str, Any]


@dataclass(kw_only=True)
class TaskDesk:
    repo: Repository
    polls: TaskPolls
    clock: Clock
    read: Reader
    # The task table's own writes (leases, heartbeats, retries): they may land even when
    # their answer says storage went down, so that answer is OUTCOME_UNKNOWN.
    write: Reader
    step: Step
    replayed: Replayed
    # Reads the instance a retry answers with, as GetWorkflow would.
    instance: Instance
    observer: StepObserver
    queues: QueueDesk | None = None  # flow control: which queues have limits
    # The leases this process handed out: their completions need no read first.
    leases: LeaseMemory = field(default_factory=LeaseMemory)
    # Reads what a poll's leases remember of their instances (None: nothing is read).
    leased: Leased | None = None
    # Draws the retry delays; a seeded one makes them repeatable (``statewrightd test``).
    rng: random.Random = field(default_factory=random.Random)

    # -- polls -----------------------------------------------------------------------

    def storage_down(self, down: str) -> None:
        """Storage was found down (asyncio loop): waiting polls look again, and are refused."""
        for queue in self.polls.queues():
            self.polls.notify(queue)

    async def poll(
        self,
        queue: str,
        identity: str,
        max_tasks: int,
        wait: float,
        choose: Choose | None = None,
        *,
        room: int | None = None,
    ) -> list[TaskRecord]:
        """Lease up to ``max_tasks`` ready tasks of ``queue``, waiting up to ``wait``
        seconds for one; none when the wait runs out or the server drains. ``choose``
        picks among the ready tasks those to lease (the ones the answer has room for);
        ``room`` is the answer's size in bytes, which spares the store the read before
        the lease when the tasks are surely small enough (Repository.lease_tasks)."""
        polls, queues = self.polls, self.queues
        polls.polled(queue, identity)
        deadline = time.monotonic() + wait
        while True:
            seen = polls.generation(queue)
            if queues is not None:
                await queues.refresh()
            tasks = await self._lease(queue, max_tasks, choose, room)
            if tasks:
                polls.polled(queue, identity)
                return tasks
            remaining = deadline - time.monotonic()
            if remaining <= 0 or polls.closed:
                return []
            within = min(remaining, RECHECK)
            if queues is not None:
                within = queues.recheck(queue, within)
            await polls.wait(queue, within, since=seen)
            polls.polled(queue, identity)

    async def _lease(
        self, queue: str, limit: int, choose: Choose | None, room: int | None
    ) -> list[TaskRecord]:
        repo, clock, instances_of = self.repo, self.clock, self.leased

        def lease() -> tuple[list[TaskRecord], dict[str, Found]]:
            # The time is read when the claim runs, not when it was queued: a queue's
            # limits and buckets are reckoned at it, and the leases start at it.
            read: dict[str, InstanceRecord] = {}
            tasks = repo.lease_tasks(
                queue, clock.now(), limit, FIRST_LEASE, choose, room=room, read=read
            )
            return tasks, _instances(instances_of, tasks, read)

        leasing = asyncio.ensure_future(self.write(lease))
        try:
            tasks, instances = await asyncio.shield(leasing)
        except asyncio.CancelledError:
            # The caller went away while the lease ran: put back what it took.
            leasing.add_done_callback(self._release_abandoned)
            raise
        self.leases.leased(tasks, instances)
        for task in tasks:
            now = task.attempt_start_time or clock.now()
            waited = max(0.0, (now - task.available_time).total_seconds())
            self.observer.task_leased(task.queue, waited)
        return tasks

    def _release_abandoned(
        self, leasing: asyncio.Future[tuple[list[TaskRecord], dict[str, Found]]]
    ) -> None:
        if leasing.cancelled() or leasing.exception() is not None:
            return
        repo, now = self.repo, self.clock.now()
        tasks, _ = leasing.result()
        for task in tasks:
            self.leases.forget(task.workflow_id, task.task_id)
            token = task.lease_token or ""

            def release(task: TaskRecord = task, token: str = token) -> Any:
                return repo.release_task(task.workflow_id, task.task_id, token, now)

            future = asyncio.ensure_future(self.write(release))
            future.add_done_callback(_logged_release)
        if tasks:
            self.polls.notify(tasks[0].queue)

    # -- heartbeats ------------------------------------------------------------------

    async def heartbeat(
        self, ref: TaskRef, token: str, details: dict[str, Any] | None
    ) -> Heartbeat:
        repo, now = self.repo, self.clock.now()

        def beat() -> TaskRecord | None:
            return repo.heartbeat_task(ref.workflow_id, ref.task_id, token, now, details)

        renewed = await self.write(beat)
        if renewed is not None:
            self.leases.renewed(renewed)
            return Heartbeat(renewed, cancel_requested=False)
        task = await self.get(ref)
        if task.status is TaskStatus.CANCELLED and task.lease_token == token:
            self.leases.forget(ref.workflow_id, ref.task_id)
            self.observer.task_attempt_ended(task.queue, "cancelled")
            return Heartbeat(task, cancel_requested=True)
        raise self._fenced(task)

    # -- completions -----------------------------------------------------------------

    async def complete(
        self,
        ref: TaskRef,
        token: str,
        result: dict[str, Any],
        *,
        request: RequestKey | None,
        budget: float | None,
        actor: str,
        worker: TraceContext | None = None,
    ) -> Completion:
        """``worker``: the trace context of the worker's span, linked from the step.

        A lease this process handed out is completed without reading the task first; if
        its row changed meanwhile (the save refuses it as superseded), the task is read
        and completed as any other."""
        completing = _Completing(token, result, request, budget, actor, worker)
        remembered = self.leases.take(ref.workflow_id, ref.task_id, token)
        if remembered is not None:
            try:
                return await self._completed(
                    remembered.task, completing, remembered=True, leased=remembered.instance
                )
            except errors.TaskFenced as fenced:
                if fenced.reason != Reason.LEASE_SUPERSEDED:
                    raise  # cancelled: the answer was read already (_fenced_step)
        task = await self.get(ref)
        if task.status is not TaskStatus.LEASED or task.lease_token != token:
            return Completion(await self._replay_or_fence(task, request), _finished(task))
        return await self._completed(task, completing)

    async def _completed(
        self,
        task: TaskRecord,
        completing: _Completing,
        *,
        remembered: bool = False,
        leased: Found | None = None,
    ) -> Completion:
        command = CompleteTaskCommand.of(
            task,
            completing.token,
            completing.result,
            actor=completing.actor,
            request=completing.request,
            worker=completing.worker,
            remembered=remembered,
            leased=leased,
        )
        ref = TaskRef(task.workflow_id, task.task_id)
        outcome = await self._fenced_step(command, ref, completing.budget)
        if outcome.replayed and remembered:
            # The answer of an earlier call with this request id (through another
            # process, say): the task as stored, which this process may not have seen.
            return Completion(outcome, _finished(await self.get(ref)))
        if outcome.saved:
            self.observer.task_attempt_ended(task.queue, "completed")
        self._ended(task.queue)
        return Completion(outcome, _finished(task, TaskStatus.COMPLETED))

    # -- failures --------------------------------------------------------------------

    async def fail(
        self,
        ref: TaskRef,
        token: str,
        failure: TaskFailure,
        *,
        non_retryable: bool,
        retry_after: float | None,
        request: RequestKey | None,
        budget: float | None,
        actor: str,
        close_key_until: datetime | None = None,
        worker: TraceContext | None = None,
    ) -> Failure:
        self.leases.forget(ref.workflow_id, ref.task_id)
        task = await self.get(ref)
        request_id = request.request_id if request is not None else None
        if request_id is not None and task.last_request_id == request_id:
            # This very call retried the attempt already.
            return Failure(task, None, await self.instance(ref.workflow_id))
        if task.status is not TaskStatus.LEASED or task.lease_token != token:
            outcome = await self._replay_or_fence(task, request)
            return Failure(_finished(task), outcome)
        error = {"type": failure.type, "message": failure.message, "details": failure.details}
        now = self.clock.now()
        if retry_after is None:
            retry_after = retry_delay(task.retry, task.attempt, self.rng)
        key = task.concurrency_key
        closing: tuple[str, datetime] | None = None
        if close_key_until is not None and key is not None and close_key_until > now:
            closing = (key, close_key_until)
            # The task's own retry waits for its key too.
            retry_after = max(retry_after, (close_key_until - now).total_seconds())
        available = now + timedelta(seconds=retry_after)
        giving_up = gives_up(task, failure.type, now, non_retryable) or available >= task.deadline
        # A retry answers with the instance, which it leaves as it is. It is read before
        # anything is written: a read after the retry that met the database gone would
        # answer UNAVAILABLE (nothing written) for a lease already given up.
        instance = None if giving_up else await self.instance(ref.workflow_id)
        if closing is not None:
            await self._close_key(task.queue, *closing)
        if giving_up:
            return await self._give_up(
                task, token, error, request=request, budget=budget, actor=actor, worker=worker
            )
        repo = self.repo

        def retry() -> TaskRecord | None:
            return repo.retry_task(
                ref.workflow_id,
                ref.task_id,
                token,
                now=now,
                available=available,
                error=error,
                request_id=request_id,
            )

        retried = await self.write(retry)
        if retried is None:
            raise self._fenced(await self.get(ref))
        self.observer.task_attempt_ended(task.queue, "failed")
        self.polls.ready_at(task.queue, retry_after)
        self._ended(task.queue)
        return Failure(retried, None, instance)

    async def _close_key(self, queue: str, key: str, until: datetime) -> None:
        repo = self.repo
        await self.write(lambda: repo.close_key(queue, key, until))
        if self.queues is not None:
            self.queues.key_closed(queue, until)

    def _ended(self, queue: str) -> None:
        if self.queues is not None:
            self.queues.task_ended(queue)

    async def _give_up(
        self,
        task: TaskRecord,
        token: str,
        error: dict[str, Any],
        *,
        request: RequestKey | None,
        budget: float | None,
        actor: str,
        worker: TraceContext | None,
    ) -> Failure:
        failure = failure_payload(task, error)
        command = TaskGiveUpCommand.of(
            task,
            failure,
            actor=actor,
            lease_token=token,
            leased=True,
            request=request,
            worker=worker,
        )
        outcome = await self._fenced_step(command, TaskRef(task.workflow_id, task.task_id), budget)
        if outcome.saved:
            self.observer.task_attempt_ended(task.queue, "failed")
        self._ended(task.queue)
        gave_up = replace(_finished(task, TaskStatus.FAILED), last_error=error)
        return Failure(gave_up, outcome)

    # -- reads -----------------------------------------------------------------------

    async def get(self, ref: TaskRef) -> TaskRecord:
        repo = self.repo
        return await self.read(lambda: repo.get_task(ref.workflow_id, ref.task_id))

    async def list(
        self,
        *,
        queue: str | None,
        workflow_id: str | None,
        status: str | None,
        page_size: int,
        page_token: str,
        filter_text: str = "",
    ) -> Page[TaskRecord]:
        repo = self.repo
        which = parse_filter(filter_text, {}, TASKS)  # no search fields: only the task's own
        return await self.read(
            lambda: repo.list_tasks(
                queue=queue,
                workflow_id=workflow_id,
                status=status,
                page_size=page_size,
                page_token=page_token,
                which=which,
            )
        )

    # -- fences ----------------------------------------------------------------------

    async def _fenced_step(self, command: Command, ref: TaskRef, budget: float | None) -> Outcome:
        """Run a step that finishes a task. The engine refuses one whose instance has left
        the task's state, which is all it knows; the task itself says why (completed by a
        rival call, or cancelled), and that is the answer."""
        try:
            return await self.step(command, budget)
        except errors.FailedPrecondition as exc:
            if exc.reason != Reason.TASK_CANCELLED:
                raise
            fenced = self._fenced(await self.get(ref))
        if fenced.reason == Reason.TASK_CANCELLED:
            self.observer.task_attempt_ended(fenced.metadata.get("queue", ""), "cancelled")
        raise fenced

    async def _replay_or_fence(self, task: TaskRecord, request: RequestKey | None) -> Outcome:
        """A call whose lease is not current: its own earlier answer, if it was this call's
        retry that got one; otherwise the fence's error."""
        if request is not None:
            replayed = await self.replayed(task.workflow_id, request)
            if replayed is not None:
                return replayed
        raise self._fenced(task)

    @staticmethod
    def _fenced(task: TaskRecord) -> errors.TaskFenced:
        meta = {"workflow_id": task.workflow_id, "task_id": task.task_id, "queue": task.queue}
        if task.status is TaskStatus.CANCELLED:
            return errors.TaskFenced(
                f"task {task.task_id} of workflow {task.workflow_id} was cancelled: "
                f"the instance left state {task.state!r}",
                reason=Reason.TASK_CANCELLED,
                metadata=meta,
            )
        return errors.TaskFenced(
            f"task {task.task_id} of workflow {task.workflow_id}: this lease is no longer "
            f"current (the task is {task.status}, attempt {task.attempt})",
            reason=Reason.LEASE_SUPERSEDED,
            metadata=meta,
        )


def _finished(task: TaskRecord, status: TaskStatus | None = None) -> TaskRecord:
    """``task`` as a finishing step leaves it (its lease gone), or as found."""
    if status is None:
        return replace(task, lease_token=None)
    return replace(task, status=status, lease_token=None, lease_expire_time=None)


def _instances(
    leased: Leased | None, tasks: list[TaskRecord], read: Mapping[str, InstanceRecord]
) -> dict[str, Found]:
    """What ``leased`` reads of ``tasks``' instances; none when it fails, whatever the
    failure: the lease is made and must be answered, and a completion that finds no
    instance remembered loads it. Only a speed-up is lost."""
    if leased is None or not tasks:
        return {}
    try:
        return leased(tasks, read)
    except errors.StatewrightError as exc:
        _log.debug("the instances of a poll's leases were not read: %s", exc)
    except Exception:
        _log.exception("reading the instances of a poll's leases failed; the leases stand")
    return {}


def _logged_release(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        _log.warning("could not put back a task an abandoned poll leased: %s", future.exception())
