"""Tasks outside their steps: leases that lapse, deadlines that pass, polls that wait.

A task is written by the step that enters its task state and finished by a step (its
completion, or its giving up). Between the two it lives in the task table alone: workers
lease it, heartbeat it and fail attempts of it, none of which is a step of the instance.

``TaskSweeper`` runs on the EventLoop thread of every replica. Every ``SWEEP_EVERY`` it
claims the tasks whose lease expired or whose deadline passed (a short claim, so that two
replicas do not sweep the same task): an expired attempt with attempts left goes back to
the queue after its backoff, counted as a failed attempt of type ``TIMED_OUT``; a task out
of attempts or past its deadline gives up, as a step (``TaskGiveUpCommand``), whose
fenced compare-and-swap decides whether it still applies. It also counts every queue's
open tasks for diagnostics, and warns about a queue with a backlog nobody polls.

``TaskPolls`` is the asyncio side's record of polls: whom to wake when a task becomes
ready on this replica, and who polled what, when. What it keeps is bounded: it remembers
only queues some definition names (a poll of any other waits like the rest but leaves no
trace once it ends), and at most ``MAX_POLLERS`` identities a queue, the most recent.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from statewrightd import errors
from statewrightd.domain import SWEEPER_ACTOR, TaskStatus
from statewrightd.engine.answers import Result
from statewrightd.engine.background import Background, BackgroundLoop
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import TaskGiveUpCommand
from statewrightd.engine.observer import StepObserver
from statewrightd.store.records import QueueCounts, TaskRecord

_log = logging.getLogger(__name__)

SWEEP_EVERY = 1.0
SWEEP_BATCH = 256
SWEEP_CLAIM = timedelta(seconds=5)
COUNT_EVERY = 5.0  # queues are counted (diagnostics, metrics, stalled queues)
# A queue with a backlog and no poll for this long is reported (diagnostics, the log).
STALLED_AFTER = 60.0
POLLERS_WINDOW = 60.0
# The identities remembered for one queue (the most recent pollers): diagnostics show
# those of the last POLLERS_WINDOW.
MAX_POLLERS = 1024
# The longest first lease: a worker that took a task from a poll it then abandoned (the
# connection dropped before the answer arrived) holds it no longer than this. A worker's
# first heartbeat extends the lease to its full length.
FIRST_LEASE = 30.0

Submit = Callable[[TaskGiveUpCommand, Callable[[Result], None]], None]


def retry_delay(retry: dict[str, Any], attempt: int, rng: random.Random) -> float:
    """Seconds before the retry that follows failed attempt ``attempt`` (from 1): full
    jitter over an exponential ceiling, so that many failing tasks do not retry in step."""
    initial = float(retry.get("initial_interval", 1.0))
    longest = float(retry.get("max_interval", 60.0))
    try:
        grown = initial * float(retry.get("backoff", 2.0)) ** max(0, attempt - 1)
    except OverflowError:  # a thousand attempts and more: the ceiling is long reached
        grown = longest
    return rng.uniform(0.0, min(longest, grown))


def gives_up(task: TaskRecord, error_type: str, now: datetime, non_retryable: bool) -> bool:
    """Whether a failed attempt ends the task rather than being retried."""
    return (
        non_retryable
        or error_type in task.retry.get("non_retryable", ())
        or task.attempt >= task.max_attempts
        or now >= task.deadline
    )


def failure_payload(task: TaskRecord, error: dict[str, Any]) -> dict[str, Any]:
    """What ``task_failed`` carries as its payload."""
    return {
        "type": error.get("type") or "ERROR",
        "message": error.get("message") or "",
        "details": error.get("details") or {},
        "attempts": task.attempt,
    }


@dataclass(frozen=True, slots=True)
class QueueView:
    queue: str
    counts: QueueCounts | None  # as the database last counted (None: no open task)
    oldest_age: float | None  # seconds the oldest ready task has waited, as counted
    last_poll: float | None  # wall-clock seconds of the last poll anywhere it is known
    pollers: tuple[str, ...]
    stalled: bool


class TaskSweeper(BackgroundLoop[list[TaskRecord], list[QueueCounts]]):
    """EventLoop thread only, except ``counts`` (a snapshot read from any thread)."""

    label = "task sweep"
    idle_every = SWEEP_EVERY
    count_every = COUNT_EVERY

    def __init__(
        self,
        on: Background,
        *,
        submit: Submit,
        polls: TaskPolls,
        observer: StepObserver,
        rng: random.Random | None = None,
    ) -> None:
        """``rng`` draws the retry delays (a seeded one makes them repeatable)."""
        super().__init__(on)
        self._observer = observer
        self._submit = submit
        self._polls = polls
        self._rng = rng or random.Random()
        self._counts: list[QueueCounts] = []
        self._counted_at = 0.0
        self._stalled: set[str] = set()  # reported stalled, not yet reported recovered
        self.gave_up = 0
        self.requeued = 0

    def counts(self) -> list[QueueCounts]:
        return list(self._counts)

    # -- leases and deadlines --------------------------------------------------------

    def _claim(self) -> Callable[[], list[TaskRecord]]:
        repo, now = self._repo, self._clock.now()
        return lambda: repo.claim_expired_tasks(now, now + SWEEP_CLAIM, SWEEP_BATCH)

    def _fire(self, claimed: list[TaskRecord]) -> float | None:
        for task in claimed:
            self._expire(task)
        return 0.0 if len(claimed) == SWEEP_BATCH else SWEEP_EVERY

    def _expire(self, task: TaskRecord) -> None:
        now = self._clock.now()
        # A server that was down past both a lease's end and the task's deadline answers
        # for the one that ran out first, as a server running throughout would have.
        lease_ran_out_first = (
            task.status is TaskStatus.LEASED
            and task.lease_expire_time is not None
            and task.lease_expire_time < task.deadline
            and now >= task.lease_expire_time
        )
        if now >= task.deadline and not lease_ran_out_first:
            error = {"type": "TIMED_OUT", "message": "schedule_to_close passed", "details": {}}
            self._give_up(task, error)
            return
        if task.status is not TaskStatus.LEASED:
            return  # claimed for its deadline, which another replica's clock saw first
        error = {
            "type": "TIMED_OUT",
            "message": "the lease expired: no heartbeat or completion in time",
            "details": {},
        }
        if task.attempt >= task.max_attempts:
            self._give_up(task, error)
            return
        available = now + timedelta(seconds=retry_delay(task.retry, task.attempt, self._rng))
        available = min(available, task.deadline)
        repo, polls = self._repo, self._polls
        assert task.lease_token is not None

        def requeue() -> TaskRecord | None:
            return repo.retry_task(
                task.workflow_id,
                task.task_id,
                task.lease_token or "",
                now=now,
                available=available,
                error=error,
                expired_only=True,
            )

        def requeued(result: TaskRecord | errors.StatewrightError | None) -> None:
            if isinstance(result, TaskRecord):
                self.requeued += 1
                self._observer.task_attempt_ended(task.queue, "timed_out")
                polls.ready_at(task.queue, (available - self._clock.now()).total_seconds())

        self._offload(requeue, requeued)

    def _give_up(self, task: TaskRecord, error: dict[str, Any]) -> None:
        failure = failure_payload(task, error)
        command = TaskGiveUpCommand.of(
            task,
            failure,
            actor=SWEEPER_ACTOR,
            lease_token=task.lease_token,
            leased=False,
            timed_out=True,
        )

        def answered(result: Result) -> None:
            if not isinstance(result, errors.StatewrightError):
                self.gave_up += 1
                if task.status is TaskStatus.LEASED:
                    self._observer.task_attempt_ended(task.queue, "timed_out")

        self._submit(command, answered)

    # -- counting --------------------------------------------------------------------

    def _counter(self, now: datetime) -> Callable[[], list[QueueCounts]]:
        repo = self._repo
        return lambda: repo.queue_stats(now)

    def _counted(self, counts: list[QueueCounts], now: datetime) -> None:
        self._counts = counts
        self._counted_at = self._polls.now()
        self._warn_stalled(counts)

    def _warn_stalled(self, counts: list[QueueCounts]) -> None:
        """One warning when a queue becomes stalled, one line when it recovers: a queue
        nobody polls is news once, not every count."""
        now = self._polls.now()
        stalled = {q.queue: q for q in counts if self._polls.stalled(q, now)}
        for name in sorted(stalled.keys() - self._stalled):
            _log.warning(
                "task queue %s has %d task(s) waiting and no poll for %.0fs or more: "
                "is a worker running for it?",
                name,
                stalled[name].ready,
                STALLED_AFTER,
            )
        for name in sorted(self._stalled - stalled.keys()):
            _log.info("task queue %s is no longer stalled: polled, or nothing waits", name)
        self._stalled = set(stalled)


@dataclass(slots=True)
class _Queue:
    waiters: set[asyncio.Future[None]] = field(default_factory=set)
    # Bumped by every notify: a poll that read it before its lease query knows, when it
    # comes to wait, whether a task became ready meanwhile (the notify found no waiter).
    generation: int = 0
    last_poll: float | None = None
    # identity -> last poll time, least recent first
    pollers: OrderedDict[str, float] = field(default_factory=OrderedDict)


class TaskPolls:
    """Who waits for which queue, and who polled it when. ``poll``/``notify`` on the
    asyncio loop; ``stalled`` and ``view`` read from any thread (whole-value reads).

    ``named(queue)`` says whether a definition names the queue: only those are remembered
    (by default, every queue is)."""

    def __init__(self, clock: Clock, named: Callable[[str], bool] | None = None) -> None:
        self._clock = clock
        self._named = named or (lambda queue: True)
        self._queues: dict[str, _Queue] = {}
        self._aio: asyncio.AbstractEventLoop | None = None
        self._started = self.now()
        self.closed = False

    def now(self) -> float:
        """The engine clock's time, in seconds (what polls are recorded in)."""
        return self._clock.now().timestamp()

    def bind(self, aio: asyncio.AbstractEventLoop) -> None:
        self._aio = aio

    def close(self) -> None:
        """The server drains: waiting polls answer now, with what they have (asyncio loop)."""
        self.closed = True
        for entry in self._queues.values():
            for future in list(entry.waiters):
                if not future.done():
                    future.set_result(None)

    def waiting(self) -> int:
        return sum(len(entry.waiters) for entry in list(self._queues.values()))

    def _entry(self, queue: str) -> _Queue | None:
        """The queue's record: made for a queue a definition names, else only found."""
        entry = self._queues.get(queue)
        if entry is None and self._named(queue):
            entry = self._queues[queue] = _Queue()
        return entry

    def polled(self, queue: str, identity: str) -> None:
        entry = self._entry(queue)
        if entry is None:
            return  # no definition names it: nothing to remember
        now = self.now()
        entry.last_poll = now
        pollers = entry.pollers
        pollers[identity] = now
        pollers.move_to_end(identity)
        while len(pollers) > MAX_POLLERS:
            pollers.popitem(last=False)

    def generation(self, queue: str) -> int:
        """Read before looking for ready tasks; pass to ``wait`` after finding none."""
        entry = self._entry(queue)
        return entry.generation if entry is not None else 0

    async def wait(self, queue: str, within: float, since: int | None = None) -> None:
        """Until a task may have become ready on ``queue`` (since ``generation`` gave
        ``since``), or ``within`` seconds."""
        if self.closed:
            return
        entry = self._queues.get(queue)
        if entry is None:
            # Held only while someone waits on it, if no definition names it.
            entry = self._queues[queue] = _Queue()
        if since is not None and entry.generation != since:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry.waiters.add(future)
        try:
            await asyncio.wait_for(asyncio.shield(future), within)
        except TimeoutError:
            pass
        finally:
            entry.waiters.discard(future)
            if not entry.waiters and entry.last_poll is None and not self._named(queue):
                self._queues.pop(queue, None)

    def notify(self, queue: str) -> None:
        """A task is ready on ``queue`` (asyncio loop): wake its waiting polls."""
        entry = self._queues.get(queue)
        if entry is None:
            return
        entry.generation += 1
        for future in list(entry.waiters):
            if not future.done():
                future.set_result(None)

    def notify_soon(self, queue: str) -> None:
        """``notify`` from another thread."""
        aio = self._aio
        if aio is not None and not aio.is_closed():
            aio.call_soon_threadsafe(self.notify, queue)

    def ready_at(self, queue: str, delay: float) -> None:
        """A task becomes ready on ``queue`` in ``delay`` seconds (from any thread)."""
        aio = self._aio
        if aio is not None and not aio.is_closed():
            aio.call_soon_threadsafe(aio.call_later, max(0.0, delay), self.notify, queue)

    def stalled(self, counts: QueueCounts, now: float) -> bool:
        if counts.ready == 0:
            return False
        entry = self._queues.get(counts.queue)
        last = entry.last_poll if entry is not None else None
        return now - (last if last is not None else self._started) >= STALLED_AFTER

    def view(self, counts: QueueCounts | None, queue: str, now: float) -> QueueView:
        entry = self._queues.get(queue)
        pollers: tuple[str, ...] = ()
        last = None
        if entry is not None:
            last = entry.last_poll
            pollers = tuple(
                sorted(p for p, at in list(entry.pollers.items()) if now - at <= POLLERS_WINDOW)
            )
        stalled = counts is not None and self.stalled(counts, now)
        oldest = None
        if counts is not None and counts.oldest_ready is not None:
            oldest = max(0.0, now - counts.oldest_ready.timestamp())
        return QueueView(queue, counts, oldest, last, pollers, stalled)

    def queues(self) -> list[str]:
        """The queues remembered: those polled that a definition names."""
        return [name for name, entry in list(self._queues.items()) if entry.last_poll is not None]
