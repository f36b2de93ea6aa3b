"""Workflow execution on the EventLoop thread: admission, session cache, saves, recovery.

Every method here runs on the EventLoop thread (``submit`` is posted there by the
application). Storage work leaves the thread (loads and re-checks on the I/O pool, saves
through the group-commit writer) and its result is posted back as a new callable, so the
thread itself never blocks.

Decisions that write are verified by the store's compare-and-swap. Decisions that do not
write (a refusal, a signal whose guards are all false) are confirmed against a fresh load
whenever they were made on a cached snapshot, because another replica may have moved the
instance on since it was cached.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from statewrightd import errors
from statewrightd.definitions.model import TASK_COMPLETED, Definition
from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import TERMINAL, TaskStatus
from statewrightd.engine import fsm
from statewrightd.engine.admission import AdmissionRegistry, AdmissionState, Recovery, Segment
from statewrightd.engine.answers import Outcome, Replay, Reply, Result
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import (
    CancelCommand,
    Command,
    CompleteTaskCommand,
    ResumeCommand,
    SignalCommand,
    StartCommand,
    TaskGiveUpCommand,
    TimerCommand,
    expected_revision,
)
from statewrightd.engine.event_loop import EventLoop, Phase
from statewrightd.engine.idempotency import request_record
from statewrightd.engine.model import Snapshot, StepResult, TimerPlan, TransitionTaken
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.engine.snapshots import (
    history_record,
    instance_record,
    settled_from,
    snapshot_of,
)
from statewrightd.store.records import (
    NO_TASKS,
    NO_TIMERS,
    Create,
    HistoryRecord,
    InstanceRecord,
    Operation,
    Purged,
    RequestRecord,
    Save,
    TaskChange,
    TaskFinish,
    TaskRecord,
    TimerChange,
    TimerRecord,
)
from statewrightd.store.repository import Repository
from statewrightd.store.writer import GroupCommitWriter

_log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 8
MAX_PENDING_SIGNALS = 1024
_QUEUED = (SignalCommand, CompleteTaskCommand, TaskGiveUpCommand)
RECENT_TRANSITIONS = 20
RECHECK_FIRST_DELAY = 0.2
RECHECK_MAX_DELAY = 30.0


@dataclass(slots=True, eq=False)
class Job:
    """A command being executed, and what the runtime keeps beside it."""

    command: Command
    reply: Reply
    observed: object | None = None  # what the observer noted where the command was built
    attempts: int = 0  # conflict retries so far
    fresh: bool = False  # the session was loaded from the store by this job
    token: int = 0  # the admission segment this job holds, once admitted

    @property
    def workflow_id(self) -> str:
        return self.command.workflow_id


@dataclass(slots=True)
class Session:
    """A cached live instance."""

    loaded: Loaded
    snapshot: Snapshot
    record: InstanceRecord
    # The latest transitions, each with who caused its step.
    recent: deque[tuple[TransitionTaken, str]] = field(
        default_factory=lambda: deque(maxlen=RECENT_TRANSITIONS)
    )
    timers: tuple[TimerRecord, ...] = ()  # armed in the current state, in due order
    task: TaskRecord | None = None  # the open task of the task state it is in, as scheduled


@dataclass(frozen=True, slots=True)
class _SaveInFlight:
    job: Job
    token: int
    op: Operation
    result: StepResult
    loaded: Loaded
    timers: tuple[TimerRecord, ...]  # armed after the step, once it commits
    task: TaskRecord | None  # the instance's open task after the step


@dataclass(frozen=True, slots=True)
class WorkflowInfo:
    """The runtime's view of one instance, for GetWorkflowDiagnostics."""

    workflow_id: str
    admission: AdmissionState | None
    cached: bool
    revision: int
    recent: tuple[tuple[TransitionTaken, str], ...]  # with the actor of each one's step
    recovery: Recovery | None
    timers: tuple[TimerRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class RuntimeCounts:
    admissions: dict[AdmissionState, int]
    cached_sessions: int
    recoveries_resolved: int


# Called on the EventLoop thread after every committed step, with its answer and its
# event. Listeners must be quick and must not block.
StepListener = Callable[[Outcome, HistoryRecord], None]


class WorkflowRuntime:
    """Owns admission, the session cache and step execution. EventLoop thread only."""

    def __init__(
        self,
        *,
        loop: EventLoop,
        repo: Repository,
        writer: GroupCommitWriter,
        registry: DefinitionRegistry,
        io: Executor,
        observer: StepObserver | None = None,
        clock: Clock | None = None,
        cache_size: int = 50_000,
        retention: float = math.inf,
        max_context_bytes: int = 256 * 1024,
    ) -> None:
        """``retention``: seconds a finished instance is kept (math.inf: for ever) unless
        its definition says otherwise; the step that finishes it records when it expires."""
        self._loop = loop
        self._retention = retention
        self._clock = clock or Clock()
        self._repo = repo
        self._writer = writer
        self._registry = registry
        self._io = io
        self._observer: StepObserver = observer or Unobserved()
        self._cache: OrderedDict[str, Session] = OrderedDict()
        self._cache_size = cache_size
        self._max_context_bytes = max_context_bytes
        self._admission = AdmissionRegistry()
        self._inflight_requests: dict[str, list[Job]] = {}
        self._recoveries_resolved = 0
        self.listeners: list[StepListener] = []
        # Told of every committed step's newly armed timers (the timer scheduler wakes for
        # one due before it would have looked again).
        self.on_armed: Callable[[tuple[TimerRecord, ...]], None] | None = None
        # Told of every committed step's newly scheduled task (waiting polls wake for it).
        self.on_scheduled: Callable[[TaskRecord], None] | None = None
        self._writes: list[
            tuple[_SaveInFlight, Callable[[InstanceRecord | errors.StoreError], None]]
        ] = []
        loop.at_batch_end(self._submit_writes)

    # -- entry -----------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        self._contained(job, self._submit, job)

    def _contained(self, job: Job, fn: Callable[..., None], *args: Any) -> None:
        """Run one stage of ``job``'s step; whatever it raises, the job is answered.

        Every stage runs on this thread as a callable of its own (admission, the loaded
        instance, the save's outcome), and the EventLoop only logs what escapes a callable.
        A stage that raised would otherwise leave its segment live, holding the instance
        until restart, and its caller waiting until its deadline.
        """
        try:
            fn(*args)
        except Exception as exc:
            _log.exception(
                "workflow %s: %s step failed unexpectedly",
                job.workflow_id,
                job.command.kind,
                extra={"workflow_id": job.workflow_id},
            )
            # The store is the truth: whatever the stage left in the cache is dropped.
            self._cache.pop(job.workflow_id, None)
            self._finish(job, job.token, errors.Internal.wrapping(exc))

    def _submit(self, job: Job) -> None:
        command = job.command
        if self._loop.phase is not Phase.RUNNING:
            self._refuse_shutting_down(job)
            return
        if command.request is not None:
            parked = self._inflight_requests.get(command.request.request_id)
            if parked is not None:
                # The same request is being executed: answer both from its outcome.
                parked.append(job)
                return
        segment = self._admission.get(job.workflow_id)
        if segment is not None:
            self._refuse_busy(job, segment)
            return
        segment = self._admission.admit(job.workflow_id)
        job.token = segment.token
        if command.request is not None:
            self._inflight_requests[command.request.request_id] = []
        if isinstance(command, StartCommand):
            self._start(job, command, segment)
            return
        session = self._cached(job.workflow_id)
        if session is None:
            self._load(job, segment)
        else:
            self._execute(job, segment, session)

    def _refuse_shutting_down(self, job: Job) -> None:
        session = self._cache.get(job.workflow_id)
        if isinstance(job.command, SignalCommand) and session is not None:
            self._answer(
                job,
                Outcome(session.record, session.loaded, accepted=False, rejection="SHUTTING_DOWN"),
            )
            return
        self._answer(job, errors.Unavailable("the server is shutting down", reason="SHUTTING_DOWN"))

    def _refuse_busy(self, job: Job, segment: Segment) -> None:
        meta = {"workflow_id": job.workflow_id}
        is_signal = isinstance(job.command, SignalCommand)
        if segment.state is AdmissionState.RECOVERY_REQUIRED:
            recovery = segment.recovery
            session = recovery.session if recovery is not None else None
            if is_signal and session is not None:
                outcome = Outcome(
                    session.record, session.loaded, accepted=False, rejection="RECOVERY_REQUIRED"
                )
                self._answer(job, outcome)
                return
            self._answer(
                job,
                errors.FailedPrecondition(
                    f"workflow {job.workflow_id} awaits recovery of a save whose outcome is "
                    "unknown; retry later",
                    reason="RECOVERY_REQUIRED",
                    metadata=meta,
                ),
            )
            return
        # Events wait their turn (a signal, a task's result or its giving up): they are not
        # decisions against a revision the caller saw, as a resume or a cancel is.
        if isinstance(job.command, _QUEUED) and len(segment.pending) < MAX_PENDING_SIGNALS:
            segment.pending.append(job)
            return
        if is_signal:
            session = self._cache.get(job.workflow_id)
            if session is not None:
                outcome = Outcome(
                    session.record, session.loaded, accepted=False, rejection="PERSISTING"
                )
                self._answer(job, outcome)
                return
        self._answer(
            job,
            errors.Aborted(
                f"workflow {job.workflow_id} is executing another request; retry",
                reason="WORKFLOW_BUSY",
                metadata=meta,
            ),
        )

    # -- loading ---------------------------------------------------------------------------

    def _cached(self, workflow_id: str) -> Session | None:
        session = self._cache.get(workflow_id)
        if session is not None:
            self._cache.move_to_end(workflow_id)
        return session

    def _remember(self, session: Session) -> None:
        workflow_id = session.record.workflow_id
        self._cache[workflow_id] = session
        self._cache.move_to_end(workflow_id)
        while len(self._cache) > self._cache_size:
            oldest, _ = next(iter(self._cache.items()))
            if self._admission.get(oldest) is not None:
                self._cache.move_to_end(oldest)  # never evict a live segment's session
                break
            del self._cache[oldest]

    def _load(self, job: Job, segment: Segment) -> None:
        segment.state = AdmissionState.ADMITTING
        token = segment.token
        repo, registry, workflow_id = self._repo, self._registry, job.workflow_id

        def load() -> tuple[InstanceRecord, Loaded, tuple[TimerRecord, ...], TaskRecord | None]:
            record = settled_from(repo, repo.load(workflow_id))
            loaded = registry.get(record.definition, record.version)
            timers: tuple[TimerRecord, ...] = ()
            if loaded.definition.timed_from:
                timers = tuple(repo.armed_timers([workflow_id]).get(workflow_id, ()))
            task = None
            if in_task_state(loaded, record):
                task = repo.open_tasks([workflow_id]).get(workflow_id)
            return record, loaded, timers, task

        self._offload(
            load, lambda result: self._contained(job, self._on_loaded, job, token, result)
        )

    def fire(self, command: Command, reply: Reply) -> None:
        """Run a step the server itself starts: a due timer, a task that gave up (the
        schedulers' entry, on this thread)."""
        self.submit(Job(command, reply, observed=self._observer.requested()))

    def offload(self, fn: Callable[[], Any], then: Callable[[Any], None]) -> None:
        """Run blocking ``fn`` on the I/O pool; ``then`` gets its result on this thread
        (an exception comes as a StatewrightError)."""
        self._offload(fn, then)

    def _offload(self, fn: Callable[[], Any], then: Callable[[Any], None]) -> None:
        """Run blocking ``fn`` on the I/O pool; ``then`` gets its result on this thread."""
        loop = self._loop

        def run() -> None:
            try:
                result: Any = fn()
            except errors.StatewrightError as exc:
                result = exc
            except Exception as exc:
                _log.exception("storage call failed")
                result = errors.StorageUnavailable(f"storage call failed: {exc}")
            try:
                loop.post(lambda: then(result))
            except errors.Unavailable:
                _log.warning("event loop stopped before a storage result was delivered")

        self._io.submit(run)

    def _on_loaded(self, job: Job, token: int, result: Any) -> None:
        if not self._admission.owns(job.workflow_id, token):
            return
        if isinstance(result, errors.StatewrightError):
            if isinstance(result, errors.RecordNotFound):
                result = _workflow_not_found(job.workflow_id)
            self._finish(job, token, result)
            return
        record, loaded, timers, task = result
        session = Session(loaded, snapshot_of(record), record, timers=timers, task=task)
        self._remember(session)
        job.fresh = True
        segment = self._admission.get(job.workflow_id)
        assert segment is not None
        if isinstance(job.command, StartCommand):
            # if_exists=RETURN_EXISTING found the id taken: answer with what is stored.
            outcome = Outcome(record, loaded, created=False, timers=timers, task=task)
            self._finish(job, token, outcome)
            return
        self._execute(job, segment, session)

    # -- execution -------------------------------------------------------------------------

    def _start(self, job: Job, command: StartCommand, segment: Segment) -> None:
        session = self._cached(job.workflow_id)
        if session is not None:
            if command.return_existing:
                # The answer is the instance as stored: another replica may have stepped it
                # since this one cached it.
                self._load(job, segment)
            else:
                self._finish(job, segment.token, _already_exists(job.workflow_id))
            return
        segment.state = AdmissionState.EXECUTING
        try:
            result = fsm.start(command.loaded.definition, job.workflow_id, command.input)
            size = _context_size(result)
            if size > self._max_context_bytes:
                raise errors.InvalidArgument(
                    f"the first step would make the context {size:,} bytes, over the limit of "
                    f"{self._max_context_bytes:,}; nothing was created",
                    reason="CONTEXT_TOO_LARGE",
                    metadata={"limit": self._max_context_bytes, "size": size},
                )
        except errors.StatewrightError as exc:
            self._finish(job, segment.token, exc)
            return
        now = self._clock.now()
        record = instance_record(
            result.snapshot, now, now, self._expire_time(command.loaded, result, now)
        )
        change, armed = timer_change(result.timers, record, now)
        tasks, task = task_change(result, record, now)
        op = Create(
            record,
            history_record(result, None, now, record, armed, actor=command.actor),
            self._request_record(job, record),
            change,
            tasks,
        )
        self._persist(job, segment, op, result, command.loaded, armed, task)

    def _step(self, command: Command, definition: Definition, snapshot: Snapshot) -> StepResult:
        """The FSM's step for ``command``: the one place that dispatches on its kind."""
        if isinstance(command, ResumeCommand):
            return fsm.resume(definition, snapshot, command.event, command.input)
        if isinstance(command, SignalCommand):
            return fsm.signal(definition, snapshot, command.event, command.payload)
        if isinstance(command, CancelCommand):
            return fsm.cancel(definition, snapshot, command.reason)
        if isinstance(command, TimerCommand):
            return fsm.timer(definition, snapshot, command.transition)
        if isinstance(command, CompleteTaskCommand):
            return fsm.complete_task(definition, snapshot, command.state, command.result)
        if isinstance(command, TaskGiveUpCommand):
            return fsm.task_gave_up(definition, snapshot, command.state, command.failure)
        raise AssertionError(f"no step for {type(command).__name__}")

    def _execute(self, job: Job, segment: Segment, session: Session) -> None:
        segment.state = AdmissionState.EXECUTING
        command = job.command
        snapshot = session.snapshot
        expected = expected_revision(command)
        if expected and expected != snapshot.revision:
            if not job.fresh:
                self._load(job, segment)
                return
            self._finish(job, segment.token, _revision_mismatch(job, expected, snapshot.revision))
            return
        behind = isinstance(command, TimerCommand) and command.revision > snapshot.revision
        if behind and not job.fresh:
            # Armed by a step this replica has not seen: its cached snapshot is behind.
            self._load(job, segment)
            return
        try:
            result = self._step(command, session.loaded.definition, snapshot)
        except errors.StatewrightError as exc:
            if not job.fresh:
                self._load(job, segment)  # confirm the refusal against the store
                return
            if isinstance(command, TimerCommand):
                # The instance left the state that armed it: the row, if any is left, goes.
                self._consume(job, segment, session, command, exc)
                return
            if isinstance(command, SignalCommand) and exc.reason == "NOT_RUNNING":
                outcome = Outcome(
                    session.record, session.loaded, accepted=False, rejection="NOT_RUNNING"
                )
                self._finish(job, segment.token, outcome)
                return
            self._finish(job, segment.token, exc)
            return
        if result.changed and result.snapshot.context is not snapshot.context:
            size = _context_size(result)
            if size > self._max_context_bytes:
                definition = session.loaded.definition
                result = fsm.context_too_large(definition, snapshot, size, self._max_context_bytes)
        if not result.changed:
            if not job.fresh:
                self._load(job, segment)  # guards were false on a cached snapshot: confirm
                return
            if isinstance(command, TimerCommand):
                self._consume(job, segment, session, command, None)  # its guard is false
                return
            outcome = Outcome(
                session.record, session.loaded, timers=session.timers, task=session.task
            )
            self._finish(job, segment.token, outcome)
            return
        now = self._clock.now()
        record = instance_record(
            result.snapshot,
            session.record.create_time,
            now,
            self._expire_time(session.loaded, result, now),
        )
        asked = command.event if isinstance(command, ResumeCommand | SignalCommand) else ""
        event = result.transitions[0].event if result.transitions else (asked or None)
        if isinstance(command, CompleteTaskCommand):
            event = TASK_COMPLETED  # what history and watchers show for the result's step
        fired = command.timer_id if isinstance(command, TimerCommand) else None
        change, armed = timer_change(result.timers, record, now, fired)
        if not result.timers.disarm and not armed:
            armed = session.timers  # the step stayed in its state: its timers stay armed
        tasks, task = task_change(result, record, now, _task_finish(command, result))
        if task is None and not tasks.cancel and tasks.finish is None:
            task = session.task  # the step did not touch the task: it stays open
        op = Save(
            record,
            snapshot.revision,
            history_record(
                result, event, now, record, armed if change.arm else (), actor=command.actor
            ),
            self._request_record(job, record),
            change,
            tasks,
        )
        self._persist(job, segment, op, result, session.loaded, armed, task)

    def _consume(
        self,
        job: Job,
        segment: Segment,
        session: Session,
        command: TimerCommand,
        stale: errors.StatewrightError | None,
    ) -> None:
        """A timer that does not fire (guard false, or stale) is deleted, and nothing else
        changes: no revision, no history."""
        repo, token = self._repo, segment.token
        session.timers = tuple(t for t in session.timers if t.timer_id != command.timer_id)
        answer: Result = stale if stale is not None else Outcome(session.record, session.loaded)

        def consumed(result: Any) -> None:
            self._finish(
                job, token, result if isinstance(result, errors.StatewrightError) else answer
            )

        self._offload(
            lambda: repo.delete_timer(command.workflow_id, command.timer_id),
            lambda result: self._contained(job, consumed, result),
        )

    def _expire_time(self, loaded: Loaded, result: StepResult, now: datetime) -> datetime | None:
        """When an instance this step finishes may be removed; None while it lives."""
        if result.snapshot.status not in TERMINAL:
            return None
        own = loaded.definition.retention
        seconds = self._retention if own is None else own
        return None if math.isinf(seconds) else now + timedelta(seconds=seconds)

    @staticmethod
    def _request_record(job: Job, record: InstanceRecord) -> RequestRecord | None:
        key = job.command.request
        return None if key is None else request_record(key, record, record.update_time)

    def _persist(  # noqa: PLR0917 - one step's parts, passed on to its save
        self,
        job: Job,
        segment: Segment,
        op: Operation,
        result: StepResult,
        loaded: Loaded,
        timers: tuple[TimerRecord, ...],
        task: TaskRecord | None,
    ) -> None:
        segment.state = AdmissionState.PERSISTING
        token = segment.token
        loop = self._loop
        in_flight = _SaveInFlight(job, token, op, result, loaded, timers, task)

        def saved(outcome: InstanceRecord | errors.StoreError) -> None:
            if loop.in_loop():  # the writer posts a batch's outcomes here in one hand-off
                self._contained(job, self._on_saved, in_flight, outcome)
                return
            try:
                loop.post(lambda: self._contained(job, self._on_saved, in_flight, outcome))
            except errors.Unavailable:
                _log.warning("event loop stopped before a save outcome was delivered")

        # Submitted at the end of the EventLoop's batch, all together (_submit_writes).
        self._writes.append((in_flight, saved))

    def _submit_writes(self) -> None:
        if not self._writes:
            return
        writes, self._writes = self._writes, []
        refusals: list[errors.StatewrightError | None]
        try:
            refusals = list(self._writer.submit_many([(w.op, saved) for w, saved in writes]))
        except Exception as exc:
            _log.exception("handing %d saves to the writer failed", len(writes))
            # Which of them the writer took is unknown: the store decides what is cached.
            for save, _ in writes:
                self._cache.pop(save.job.workflow_id, None)
            refusals = [errors.Internal.wrapping(exc) for _ in writes]
        for (save, _), refusal in zip(writes, refusals, strict=True):
            if refusal is not None:
                self._finish(save.job, save.token, refusal)

    def _on_saved(self, save: _SaveInFlight, outcome: InstanceRecord | errors.StoreError) -> None:
        job, token, op, result, loaded = save.job, save.token, save.op, save.result, save.loaded
        command = job.command
        if not self._admission.owns(job.workflow_id, token):
            return
        if isinstance(outcome, InstanceRecord):
            timers, task = save.timers, save.task
            if result.snapshot.status in TERMINAL:
                # Nothing can step a finished instance again: caching it would only grow
                # the long-lived heap the garbage collector keeps scanning. Reads and
                # refusals of later steps go to the store.
                self._cache.pop(job.workflow_id, None)
            else:
                session = self._cache.get(job.workflow_id)
                if session is None or session.loaded is not loaded:
                    session = Session(loaded, result.snapshot, outcome, timers=timers, task=task)
                else:
                    session.snapshot, session.record = result.snapshot, outcome
                    session.timers, session.task = timers, task
                session.recent.extend((t, command.actor) for t in result.transitions)
                self._remember(session)
            answer = Outcome(
                outcome, loaded, result.transitions, saved=True, timers=timers, task=task
            )
            self._finish(job, token, answer)
            if op.timers.arm and self.on_armed is not None:
                self.on_armed(op.timers.arm)
            if op.tasks.schedule is not None and self.on_scheduled is not None:
                self.on_scheduled(op.tasks.schedule)
            for listener in self.listeners:
                try:
                    listener(answer, op.history)
                except Exception:
                    _log.exception("workflow %s: a step listener failed", job.workflow_id)
            return
        if isinstance(outcome, errors.OutcomeUnknown):
            self._enter_recovery(job, token, op, outcome)
            return
        self._cache.pop(job.workflow_id, None)
        if isinstance(outcome, errors.TimerGone | errors.TaskFenced):
            # Fired or consumed already, or the lease (or the task) is not current: the
            # answer is that error, and a reload would not change it.
            self._finish(job, token, outcome)
            return
        if isinstance(outcome, errors.RecordExists):
            if outcome.reason == "REQUEST_EXISTS" and command.request is not None:
                self._finish(job, token, Replay(command.request.request_id))
            elif isinstance(command, StartCommand) and command.return_existing:
                segment = self._admission.get(job.workflow_id)
                assert segment is not None
                self._load(job, segment)
            else:
                self._finish(job, token, _already_exists(job.workflow_id))
            return
        if isinstance(outcome, errors.Conflict):
            expected = expected_revision(command)
            if expected:
                actual = outcome.actual_revision or 0
                self._finish(job, token, _revision_mismatch(job, expected, actual))
                return
            if job.attempts < MAX_CONFLICT_RETRIES:
                # Another replica saved first: reload and apply this command to its result.
                job.attempts += 1
                job.fresh = False
                segment = self._admission.get(job.workflow_id)
                assert segment is not None
                self._load(job, segment)
                return
        failure: errors.StatewrightError = outcome
        if isinstance(outcome, errors.RecordNotFound):
            failure = _workflow_not_found(job.workflow_id)
        self._finish(job, token, failure)

    def _finish(self, job: Job, token: int, result: Result) -> None:
        # Release first: whatever answering does, the instance is free for the next step.
        segment = self._admission.release(job.workflow_id, token)
        self._answer(job, result)
        key = job.command.request
        # A retry that arrived while the original ran gets what the original got: the
        # original's answer if it failed, a replay of it if it succeeded.
        self._answer_duplicates(
            job,
            Replay(key.request_id) if key is not None and isinstance(result, Outcome) else result,
        )
        if segment is not None:
            # Re-submitting keeps arrival order: the first re-admits, the rest queue behind it.
            for pending in segment.pending:
                self.submit(pending)

    def _answer_duplicates(self, job: Job, result: Result) -> None:
        """Answer the retries of ``job``'s request id that arrived while it ran."""
        key = job.command.request
        if key is not None:
            for duplicate in self._inflight_requests.pop(key.request_id, []):
                self._answer(duplicate, result)

    def _answer(self, job: Job, result: Result) -> None:
        try:
            job.reply(result)
        except Exception:
            _log.exception("workflow %s: answering a step failed", job.workflow_id)
        try:
            self._observer.finished(job.command, job.attempts, job.observed, result)
        except Exception:
            _log.exception("workflow %s: observing a step failed", job.workflow_id)

    # -- recovery --------------------------------------------------------------------------

    def _enter_recovery(
        self, job: Job, token: int, op: Operation, error: errors.OutcomeUnknown
    ) -> None:
        segment = self._admission.get(job.workflow_id)
        assert segment is not None
        segment.state = AdmissionState.RECOVERY_REQUIRED
        segment.recovery = Recovery(op, since=time.time(), last_error=error)
        # Kept out of the cache (its revision is in doubt) but still shown to signals
        # refused with RECOVERY_REQUIRED, as the last state known for certain.
        segment.recovery.session = self._cache.get(job.workflow_id)
        if "backend_pid" in error.metadata:
            segment.recovery.last_error_pid = (int(error.metadata["backend_pid"]),)
        self._cache.pop(job.workflow_id, None)
        _log.warning(
            "workflow %s: save outcome unknown; recovery required",
            job.workflow_id,
            extra={"workflow_id": job.workflow_id},
        )
        # The caller is answered now rather than left waiting for the re-check.
        self._answer(job, error)
        self._answer_duplicates(job, error)
        pending, segment.pending = list(segment.pending), deque()
        for waiting in pending:
            self._refuse_busy(waiting, segment)
        self._schedule_recheck(job.workflow_id, token, RECHECK_FIRST_DELAY)

    def _schedule_recheck(self, workflow_id: str, token: int, delay: float) -> None:
        segment = self._admission.get(workflow_id)
        if segment is None or segment.token != token or segment.recovery is None:
            return
        segment.recovery.next_attempt = time.time() + delay
        self._loop.call_later(delay, lambda: self._guarded_recheck(workflow_id, token, delay))

    def _guarded_recheck(self, workflow_id: str, token: int, delay: float) -> None:
        # A re-check that raised must not end the recovery: the instance would stay
        # RECOVERY_REQUIRED for good. It is tried again later, as if the database had failed.
        try:
            self._recheck(workflow_id, token, delay)
        except Exception:
            _log.exception("workflow %s: recovery re-check failed", workflow_id)
            self._schedule_recheck(workflow_id, token, min(delay * 2, RECHECK_MAX_DELAY))

    def _recheck(self, workflow_id: str, token: int, delay: float) -> None:
        segment = self._admission.get(workflow_id)
        if segment is None or segment.token != token or segment.recovery is None:
            return
        recovery = segment.recovery
        recovery.attempts += 1
        repo = self._repo
        # The verdict is wrapped so that a verdict (returned) is never confused with the
        # re-check itself failing (raised), e.g. while the database is still unreachable.
        pid = recovery.last_error_pid
        self._offload(
            lambda: (repo.resolve_outcome([recovery.operation], backend_pids=pid)[0],),
            lambda result: self._on_rechecked_guarded(workflow_id, token, delay, result),
        )

    def _on_rechecked_guarded(
        self, workflow_id: str, token: int, delay: float, result: Any
    ) -> None:
        try:
            self._on_rechecked(workflow_id, token, delay, result)
        except Exception:
            _log.exception("workflow %s: recovery verdict failed", workflow_id)
            self._schedule_recheck(workflow_id, token, min(delay * 2, RECHECK_MAX_DELAY))

    def _on_rechecked(self, workflow_id: str, token: int, delay: float, result: Any) -> None:
        segment = self._admission.get(workflow_id)
        if segment is None or segment.token != token or segment.recovery is None:
            return
        verdict = result[0] if isinstance(result, tuple) else None
        if verdict is not None and not isinstance(verdict, errors.OutcomeUnknown):
            # Committed (a record), or known not to have committed (StorageUnavailable for
            # "pre-state", Conflict for "another step owns that revision"): resolved.
            self._recoveries_resolved += 1
            _log.info(
                "workflow %s: recovery resolved (%s) after %d re-checks",
                workflow_id,
                "committed" if isinstance(verdict, InstanceRecord) else "not committed",
                segment.recovery.attempts,
                extra={"workflow_id": workflow_id},
            )
            self._admission.release(workflow_id, token)
            return
        failure = verdict if verdict is not None else result
        if isinstance(failure, Exception):
            segment.recovery.last_error = failure
        self._schedule_recheck(workflow_id, token, min(delay * 2, RECHECK_MAX_DELAY))

    # -- removal ---------------------------------------------------------------------------

    def forget(self, workflow_ids: Iterable[str]) -> None:
        """Instances the store no longer has (purged, deleted): drop what is cached of them."""
        for workflow_id in workflow_ids:
            self._cache.pop(workflow_id, None)

    def remove(
        self, workflow_id: str, revision: int, reply: Callable[[Purged | Exception], None]
    ) -> None:
        """Remove finished instance ``workflow_id`` at ``revision`` (DeleteWorkflow).

        The removal holds the instance's admission segment, as a step would: no step of
        this replica runs on it meanwhile, and events that arrive wait, then find it gone.
        The store removes only a finished instance at that revision, whatever other
        replicas do."""
        if self._loop.phase is not Phase.RUNNING:
            reply(errors.Unavailable("the server is shutting down", reason="SHUTTING_DOWN"))
            return
        if self._admission.get(workflow_id) is not None:
            reply(
                errors.Aborted(
                    f"workflow {workflow_id} is executing another request; retry",
                    reason="WORKFLOW_BUSY",
                    metadata={"workflow_id": workflow_id},
                )
            )
            return
        segment = self._admission.admit(workflow_id)
        segment.state = AdmissionState.PERSISTING
        token, repo = segment.token, self._repo

        def removed(result: Any) -> None:
            released = self._admission.release(workflow_id, token)
            self._cache.pop(workflow_id, None)
            try:
                reply(result)
            except Exception:
                _log.exception("workflow %s: answering a removal failed", workflow_id)
            if released is not None:
                for pending in released.pending:
                    self.submit(pending)

        self._offload(lambda: repo.delete_workflow(workflow_id, revision), removed)

    # -- queries ---------------------------------------------------------------------------

    def info(self, workflow_id: str) -> WorkflowInfo:
        segment = self._admission.get(workflow_id)
        session = self._cache.get(workflow_id)
        cached = session is not None
        if session is None and segment is not None and segment.recovery is not None:
            session = segment.recovery.session  # the last state known for certain
        return WorkflowInfo(
            workflow_id=workflow_id,
            admission=segment.state if segment else None,
            cached=cached,
            revision=session.snapshot.revision if session else 0,
            recent=tuple(session.recent) if session else (),
            recovery=segment.recovery if segment else None,
            timers=session.timers if session else (),
        )

    def counts(self) -> RuntimeCounts:
        return RuntimeCounts(
            admissions=dict(self._admission.counts()),
            cached_sessions=len(self._cache),
            recoveries_resolved=self._recoveries_resolved,
        )

    def live_segments(self) -> int:
        return len(self._admission)


def timer_change(
    plan: TimerPlan, record: InstanceRecord, now: datetime, fired: str | None = None
) -> tuple[TimerChange, tuple[TimerRecord, ...]]:
    """A step's timer plan as the store's work, and the timers it arms, in due order."""
    armed = tuple(
        sorted(
            (
                TimerRecord(
                    workflow_id=record.workflow_id,
                    timer_id=f"{record.revision}.{t.transition}",
                    revision=record.revision,
                    transition=t.transition,
                    target=t.target,
                    after=t.after,
                    due_time=t.at if t.at is not None else now + (t.delay or timedelta(0)),
                )
                for t in plan.arm
            ),
            key=lambda t: t.due_time,
        )
    )
    if not plan.disarm and not armed and fired is None:
        return NO_TIMERS, armed
    return TimerChange(disarm=plan.disarm, arm=armed, fired=fired), armed


def _context_size(result: StepResult) -> int:
    """The context a step leaves, in bytes of JSON as the store writes it."""
    return len(
        json.dumps(
            dict(result.snapshot.context), ensure_ascii=False, separators=(",", ":")
        ).encode()
    )


def in_task_state(loaded: Loaded, record: InstanceRecord) -> bool:
    state = loaded.definition.states.get(record.state)
    return state is not None and state.task is not None and record.status not in TERMINAL


def _task_finish(command: Command, result: StepResult) -> TaskFinish | None:
    """The task a completion or give-up step finishes, fenced as the command saw it."""
    if isinstance(command, CompleteTaskCommand):
        return TaskFinish(
            command.task_id, TaskStatus.COMPLETED, command.lease_token, None, leased=True
        )
    if isinstance(command, TaskGiveUpCommand):
        return TaskFinish(
            command.task_id,
            TaskStatus.TIMED_OUT if command.timed_out else TaskStatus.FAILED,
            command.lease_token,
            command.attempt,
            leased=command.leased,
            last_error={k: command.failure.get(k) for k in ("type", "message", "details")},
        )
    return None


def task_change(
    result: StepResult, record: InstanceRecord, now: datetime, finish: TaskFinish | None = None
) -> tuple[TaskChange, TaskRecord | None]:
    """A step's task plan as the store's work, and the task it schedules, if any."""
    plan = result.task
    scheduled = None
    if plan.schedule is not None:
        spec = plan.schedule.spec
        retry = spec.retry
        scheduled = TaskRecord(
            workflow_id=record.workflow_id,
            task_id=str(record.revision),
            revision=record.revision,
            state=plan.schedule.state,
            queue=spec.queue,
            input=dict(plan.schedule.input),
            status=TaskStatus.SCHEDULED,
            attempt=0,
            max_attempts=retry.max_attempts,
            lease_token=None,
            lease_expire_time=None,
            attempt_start_time=None,
            available_time=now,
            schedule_time=now,
            deadline=now + timedelta(seconds=spec.schedule_to_close),
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
        )
    if scheduled is None and not plan.cancel and finish is None:
        return NO_TASKS, None
    return TaskChange(schedule=scheduled, cancel=plan.cancel, finish=finish), scheduled


def _already_exists(workflow_id: str) -> errors.AlreadyExists:
    return errors.AlreadyExists(
        f"workflow {workflow_id} already exists",
        reason="WORKFLOW_ALREADY_EXISTS",
        metadata={"workflow_id": workflow_id},
    )


def _workflow_not_found(workflow_id: str) -> errors.NotFound:
    return errors.NotFound(
        f"workflow {workflow_id} not found",
        reason="WORKFLOW_NOT_FOUND",
        metadata={"workflow_id": workflow_id},
    )


def _revision_mismatch(job: Job, expected: int, actual: int) -> errors.Aborted:
    return errors.Aborted(
        f"workflow {job.workflow_id} is at revision {actual}, not {expected}",
        reason="REVISION_MISMATCH",
        metadata={
            "workflow_id": job.workflow_id,
            "expected_revision": expected,
            "actual_revision": actual,
        },
    )
