"""Workflow execution on the EventLoop thread: admission, session cache, saves, recovery.

Every method here runs on the EventLoop thread (``submit`` is posted there by the
application). Storage work leaves the thread (loads and re-checks on the I/O pool, saves
through the group-commit writer) and its result is posted back as a new callable, so the
thread itself never blocks.

A step goes through stages, each a callable of its own: admitted (one live segment per
instance), loaded (unless its session is cached), stepped (the FSM, through its
command), persisted (its operation handed to the writer), saved (the writer's verdict),
answered. What differs from one kind of command to another is asked of the command
(engine/commands.py), never checked here.

Decisions that write are verified by the store's compare-and-swap. Decisions that do not
write (a refusal, a signal whose guards are all false) are confirmed against a fresh load
whenever they were made on a cached snapshot, because another replica may have moved the
instance on since it was cached.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass
from datetime import timedelta
from typing import ParamSpec, TypeVar, cast

from statewrightd import errors
from statewrightd.config import CACHED_CONTEXT_BYTES
from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import TERMINAL
from statewrightd.engine.admission import AdmissionRegistry, AdmissionState, Recovery, Segment
from statewrightd.engine.answers import Outcome, Rejection, Replay, Reply, Result
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import (
    Command,
    StartCommand,
    StepCommand,
)
from statewrightd.engine.event_loop import EventLoop, Phase
from statewrightd.engine.fsm import DEFAULT_LIMITS, StepLimits
from statewrightd.engine.jobs import Job, Replies
from statewrightd.engine.loading import Found, InstanceLoader, weighed
from statewrightd.engine.model import StepResult, TransitionTaken
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.engine.offload import Offload
from statewrightd.engine.recovery import Recoveries
from statewrightd.engine.removal import Removal
from statewrightd.engine.saves import SaveQueue
from statewrightd.engine.sessions import (
    CACHED_SESSIONS,
    RECENT_TRANSITIONS,
    Session,
    SessionCache,
)
from statewrightd.engine.snapshots import snapshot_of
from statewrightd.engine.stepping import (
    Answer,
    Cleanup,
    Decision,
    Persist,
    Reload,
    Stepper,
    already_exists,
    busy,
    recovery_required,
    revision_mismatch,
    shutting_down,
    workflow_not_found,
)
from statewrightd.engine.writes import Planned, StepWrites
from statewrightd.reasons import Reason
from statewrightd.store.records import (
    HistoryRecord,
    InstanceRecord,
    Purged,
    TaskRecord,
    TaskRelease,
    TimerRecord,
)
from statewrightd.store.repository import Repository
from statewrightd.store.writer import GroupCommitWriter

_log = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

MAX_CONFLICT_RETRIES = 8
MAX_PENDING_SIGNALS = 1024

__all__ = ["RECENT_TRANSITIONS", "Job", "RuntimeCounts", "WorkflowInfo", "WorkflowRuntime"]


Loading = Callable[[Job, int, Found | errors.StatewrightError], None]


@dataclass(frozen=True, slots=True)
class _SaveInFlight:
    job: Job
    token: int
    planned: Planned
    result: StepResult
    loaded: Loaded
    # A start that found its id taken in the store: answered with the stored instance
    # (this continuation), or ALREADY_EXISTS (None).
    taken: Loading | None = None
    context_bytes: int | None = None  # the new context's, if the step measured it


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
    cached_context_bytes: int  # the cached sessions' contexts, as JSON


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
        cache_size: int = CACHED_SESSIONS,
        cache_bytes: int = CACHED_CONTEXT_BYTES,
        retention: float = math.inf,
        limits: StepLimits = DEFAULT_LIMITS,
        request_window: timedelta | None = None,
    ) -> None:
        """``retention``: seconds a finished instance is kept (math.inf: for ever) unless
        its definition says otherwise; the step that finishes it records when it expires.
        ``request_window``: how long a step's request record answers retries of its
        request id (None: for ever)."""
        self._loop = loop
        self._repo = repo
        self._loader = InstanceLoader(repo, registry)
        self._offload = Offload(loop, io)
        self._observer: StepObserver = observer or Unobserved()
        self._admission = AdmissionRegistry()
        self._cache = SessionCache(cache_size, self._live, cache_bytes)
        failed_projection = self._observer.projection_failed
        writes = StepWrites(clock or Clock(), retention, request_window, failed_projection)
        self._stepper = Stepper(repo, writes, limits)
        self._recoveries = Recoveries(loop, self._admission, repo, self._offload)
        self._replies = Replies(self._observer)
        self.listeners: list[StepListener] = []
        # Told of every committed step's newly armed timers (the timer scheduler wakes for
        # one due before it would have looked again).
        self.on_armed: Callable[[tuple[TimerRecord, ...]], None] | None = None
        # Told of every committed step's newly scheduled task (waiting polls wake for it).
        self.on_scheduled: Callable[[TaskRecord | TaskRelease], None] | None = None
        self._removal = Removal(
            loop=loop,
            admission=self._admission,
            cache=self._cache,
            repo=repo,
            offload=self._offload,
            resubmit=self.submit,
        )
        self._saves = SaveQueue(loop, writer, saved=self._saved, refused=self._refused_save)

    def _live(self, workflow_id: str) -> bool:
        return self._admission.get(workflow_id) is not None

    # -- entry -----------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        self._contained(job, self._admit, job)

    def fire(self, command: Command, reply: Reply) -> None:
        """Run a step the server itself starts: a due timer, a task that gave up (the
        schedulers' entry, on this thread)."""
        self.submit(Job(command, reply, observed=self._observer.requested(command)))

    def offload(
        self, fn: Callable[[], T], then: Callable[[T | errors.StatewrightError], None]
    ) -> None:
        """Run blocking ``fn`` on the I/O pool; ``then`` gets its result on this thread
        (an exception comes as a StatewrightError)."""
        self._offload(fn, then)

    def _contained(self, job: Job, fn: Callable[P, None], *args: P.args, **kw: P.kwargs) -> None:
        """Run one stage of ``job``'s step; whatever it raises, the job is answered.

        Every stage runs on this thread as a callable of its own (admission, the loaded
        instance, the save's outcome), and the EventLoop only logs what escapes a callable.
        A stage that raised would otherwise leave its segment live, holding the instance
        until restart, and its caller waiting until its deadline.
        """
        try:
            fn(*args, **kw)
        except Exception as exc:
            _log.exception(
                "workflow %s: %s step failed unexpectedly",
                job.workflow_id,
                job.command.kind,
                extra={"workflow_id": job.workflow_id},
            )
            # The store is the truth: whatever the stage left in the cache is dropped.
            self._cache.drop(job.workflow_id)
            self._finish(job, job.token, errors.Internal.wrapping(exc))

    # -- admitted --------------------------------------------------------------------------

    def _admit(self, job: Job) -> None:
        command = job.command
        if self._loop.phase is not Phase.RUNNING:
            self._refuse(job, self._cache.peek(job.workflow_id), shutting_down())
            return
        if self._replies.parked(job):
            return  # the same request is being executed: answer both from its outcome
        segment = self._admission.get(job.workflow_id)
        if segment is not None:
            self._refuse_busy(job, segment)
            return
        segment = self._admission.admit(job.workflow_id)
        job.token = segment.token
        self._replies.running(job)
        if isinstance(command, StartCommand):
            self._start(job, command, segment)
            return
        session = _newest(self._cache, command)
        if session is None:
            self._load(job, segment, self._on_loaded)
        else:
            self._execute(job, segment, session)

    def _refuse(
        self, job: Job, session: Session | None, error: errors.StatewrightError, why: str = ""
    ) -> None:
        """Answer a refusal: as the command's answer to it when it has one (with the
        instance as last known for certain), else as ``error``."""
        answer = None
        if session is not None:
            answer = job.command.refusal(session.record, session.loaded, why or error.reason)
        self._replies.answer(job, answer if answer is not None else error)

    def _refuse_busy(self, job: Job, segment: Segment) -> None:
        if segment.state is AdmissionState.RECOVERY_REQUIRED:
            recovery = segment.recovery
            session = recovery.session if recovery is not None else None
            self._refuse(job, session, recovery_required(job.workflow_id))
            return
        if job.command.queues and len(segment.pending) < MAX_PENDING_SIGNALS:
            segment.pending.append(job)
            return
        self._refuse(
            job, self._cache.peek(job.workflow_id), busy(job.workflow_id), Rejection.PERSISTING
        )

    # -- loaded ----------------------------------------------------------------------------

    def _load(self, job: Job, segment: Segment, then: Loading) -> None:
        segment.state = AdmissionState.ADMITTING
        token, loader, workflow_id = segment.token, self._loader, job.workflow_id
        self._offload(
            lambda: weighed(loader.load(workflow_id)),
            lambda result: self._contained(job, then, job, token, result),
        )

    def _session(
        self, job: Job, token: int, result: Found | errors.StatewrightError
    ) -> Session | None:
        """The session a load gave ``job`` (cached now), or None when it was answered."""
        if not self._admission.owns(job.workflow_id, token):
            return None
        if isinstance(result, errors.StatewrightError):
            self._finish(job, token, _missing(job.workflow_id, result))
            return None
        session = _session_of(result)
        self._cache.remember(session)
        job.fresh = True
        return session

    def _on_loaded(self, job: Job, token: int, result: Found | errors.StatewrightError) -> None:
        session = self._session(job, token, result)
        if session is not None:
            segment = self._admission.get(job.workflow_id)
            assert segment is not None
            self._execute(job, segment, session)

    def _on_existing(self, job: Job, token: int, result: Found | errors.StatewrightError) -> None:
        """A start found the id taken and answers with the instance as stored."""
        session = self._session(job, token, result)
        if session is not None:
            outcome = Outcome(
                session.record,
                session.loaded,
                created=False,
                timers=session.timers,
                task=session.task,
            )
            self._finish(job, token, outcome)

    # -- stepped ---------------------------------------------------------------------------

    def _start(self, job: Job, command: StartCommand, segment: Segment) -> None:
        segment.state = AdmissionState.EXECUTING
        session = self._cache.get(job.workflow_id)
        existing = command.on_existing()  # a signal-with-start's signal, a restart
        if existing is not None and session is not None:
            job.command = existing  # from here on, a step like any other
            self._execute(job, segment, session)
            return
        # Such a start leaves it to the store's unique insert to decide between callers
        # racing on the id (here or on another replica): the losers step the instance.
        taken = self._on_existing if command.return_existing else None
        if existing is not None:
            taken = self._on_existing_step
        decision = self._stepper.start(command, session is not None, job.observed)
        self._act(job, segment, decision, command.loaded, taken)

    def _on_existing_step(
        self, job: Job, token: int, result: Found | errors.StatewrightError
    ) -> None:
        """A start found its id taken in the store: it steps the instance (on_existing)."""
        job.command = cast(StepCommand, cast(StartCommand, job.command).on_existing())
        self._on_loaded(job, token, result)

    def _execute(self, job: Job, segment: Segment, session: Session) -> None:
        segment.state = AdmissionState.EXECUTING
        command = job.command
        assert isinstance(command, StepCommand)
        decision = self._stepper.step(command, session, job.fresh, job.observed)
        if isinstance(decision, Cleanup):
            fired = command.fired()
            session.timers = tuple(t for t in session.timers if t.timer_id != fired)
        self._act(job, segment, decision, command.stepped_with(session.loaded))

    def _act(
        self,
        job: Job,
        segment: Segment,
        decision: Decision,
        loaded: Loaded,
        taken: Loading | None = None,
    ) -> None:
        """Carry out what the stepper decided."""
        token = segment.token
        match decision:
            case Reload():
                self._load(job, segment, taken or self._on_loaded)
            case Answer(result):
                self._finish(job, token, result)
            case Persist():
                self._persist(job, segment, decision, loaded, taken)
            case Cleanup(cleanup, answer):

                def cleaned(result: object) -> None:
                    failed = result if isinstance(result, errors.StatewrightError) else None
                    self._finish(job, token, failed or answer)

                self._offload(cleanup, lambda result: self._contained(job, cleaned, result))

    def _persist(
        self,
        job: Job,
        segment: Segment,
        persist: Persist,
        loaded: Loaded,
        taken: Loading | None = None,
    ) -> None:
        """Hand the step's save to the writer (with the batch's other saves)."""
        segment.state = AdmissionState.PERSISTING
        planned, result = persist.planned, persist.result
        save = _SaveInFlight(
            job, segment.token, planned, result, loaded, taken, persist.context_bytes
        )
        self._saves.add(save, planned.op)

    # -- saved -----------------------------------------------------------------------------

    def _refused_save(
        self, save: _SaveInFlight, error: errors.StatewrightError, unknown: bool
    ) -> None:
        if unknown:
            # Whether the writer took it is unknown: the store decides what is cached.
            self._cache.drop(save.job.workflow_id)
        self._finish(save.job, save.token, error)

    def _saved(self, save: _SaveInFlight, verdict: InstanceRecord | errors.StoreError) -> None:
        self._contained(save.job, self._on_saved, save, verdict)

    def _on_saved(self, save: _SaveInFlight, outcome: InstanceRecord | errors.StoreError) -> None:
        job, token = save.job, save.token
        if not self._admission.owns(job.workflow_id, token):
            return
        if isinstance(outcome, InstanceRecord):
            self._committed(save, outcome)
        elif isinstance(outcome, errors.OutcomeUnknown):
            self._enter_recovery(job, token, save.planned, outcome)
        else:
            self._cache.drop(job.workflow_id)
            self._not_saved(save, outcome)

    def _committed(self, save: _SaveInFlight, record: InstanceRecord) -> None:
        job, result, loaded, planned = save.job, save.result, save.loaded, save.planned
        timers, task = planned.timers, planned.task
        if result.snapshot.status in TERMINAL:
            # Nothing can step a finished instance again: caching it would only grow the
            # long-lived heap the garbage collector keeps scanning. Reads and refusals of
            # later steps go to the store.
            self._cache.drop(job.workflow_id)
        else:
            self._cache.remember(_stepped(self._cache.peek(job.workflow_id), save, record))
        answer = Outcome(record, loaded, result.transitions, saved=True, timers=timers, task=task)
        self._finish(job, save.token, answer)
        op = planned.op
        if op.timers.arm and self.on_armed is not None:
            self.on_armed(op.timers.arm)
        if (ready := op.tasks.ready_queue()) is not None and self.on_scheduled is not None:
            self.on_scheduled(ready)
        for listener in self.listeners:
            try:
                listener(answer, op.history)
            except Exception:
                _log.exception("workflow %s: a step listener failed", job.workflow_id)

    def _not_saved(self, save: _SaveInFlight, failure: errors.StoreError) -> None:
        job, token = save.job, save.token
        command = job.command
        if isinstance(failure, errors.TimerGone | errors.TaskFenced):
            # Fired or consumed already, or the lease (or the task) is not current: the
            # answer is that error, and a reload would not change it.
            self._finish(job, token, failure)
            return
        if isinstance(failure, errors.RecordExists):
            if failure.reason == Reason.REQUEST_EXISTS and command.request is not None:
                self._finish(job, token, Replay(command.request.request_id))
            elif save.taken is not None:
                self._reload(job, save.taken)
            else:
                self._finish(job, token, already_exists(job.workflow_id))
            return
        if isinstance(failure, errors.Conflict):
            expected = command.expected()
            if expected:
                actual = failure.actual_revision or 0
                self._finish(job, token, revision_mismatch(job.workflow_id, expected, actual))
                return
            if job.attempts < MAX_CONFLICT_RETRIES and isinstance(command, StepCommand):
                # Another replica saved first: reload and apply this command to its result.
                job.attempts += 1
                job.fresh = False
                self._reload(job, self._on_loaded)
                return
        self._finish(job, token, _missing(job.workflow_id, failure))

    def _reload(self, job: Job, then: Loading) -> None:
        segment = self._admission.get(job.workflow_id)
        assert segment is not None
        self._load(job, segment, then)

    def _enter_recovery(
        self, job: Job, token: int, planned: Planned, error: errors.OutcomeUnknown
    ) -> None:
        # Kept out of the cache (its revision is in doubt) but still shown to signals
        # refused with RECOVERY_REQUIRED, as the last state known for certain.
        session = self._cache.drop(job.workflow_id)
        self._recoveries.begin(job.workflow_id, token, planned.op, error, session)
        # The caller is answered now rather than left waiting for the re-check.
        self._replies.answer(job, error)
        self._replies.retries(job, error)
        segment = self._admission.get(job.workflow_id)
        assert segment is not None
        pending, segment.pending = list(segment.pending), deque()
        for waiting in pending:
            self._refuse_busy(waiting, segment)

    # -- answered --------------------------------------------------------------------------

    def _finish(self, job: Job, token: int, result: Result) -> None:
        # Release first: whatever answering does, the instance is free for the next step.
        segment = self._admission.release(job.workflow_id, token)
        self._replies.finished(job, result)
        if segment is not None:
            # Re-submitting keeps arrival order: the first re-admits, the rest queue behind it.
            for pending in segment.pending:
                self.submit(pending)

    # -- removal ---------------------------------------------------------------------------

    def forget(self, workflow_ids: Iterable[str]) -> None:
        """Instances the store no longer has (purged, deleted): drop what is cached of them."""
        self._cache.forget(workflow_ids)

    def remove(
        self, workflow_id: str, revision: int, reply: Callable[[Purged | Exception], None]
    ) -> None:
        """Remove finished instance ``workflow_id`` at ``revision`` (DeleteWorkflow)."""
        self._removal.remove(workflow_id, revision, reply)

    # -- queries ---------------------------------------------------------------------------

    def info(self, workflow_id: str) -> WorkflowInfo:
        return _info(workflow_id, self._admission.get(workflow_id), self._cache.peek(workflow_id))

    def counts(self) -> RuntimeCounts:
        admissions, resolved = dict(self._admission.counts()), self._recoveries.resolved
        cache = self._cache
        return RuntimeCounts(admissions, len(cache), resolved, cache.context_bytes)

    def live_segments(self) -> int:
        return len(self._admission)

    def cached_revision(self, workflow_id: str) -> int | None:
        """What the cache holds of ``workflow_id`` (any thread: SessionCache.revision)."""
        return self._cache.revision(workflow_id)


def _newest(cache: SessionCache, command: Command) -> Session | None:
    """The session cached of ``command``'s instance, or the one made of what its caller
    read when that is newer (then cached instead)."""
    session = cache.get(command.workflow_id)
    known = command.known()
    if known is not None and (session is None or session.snapshot.revision < known.record.revision):
        session = _session_of(known)
        cache.remember(session)
    return session


def _stepped(session: Session | None, save: _SaveInFlight, record: InstanceRecord) -> Session:
    """The session of an instance ``save`` stepped: the one cached, brought up to date, or
    a new one when none is cached or it is of another definition version."""
    result, loaded, planned = save.result, save.loaded, save.planned
    size = save.context_bytes
    if size is None and session is not None:
        # An unchanged context weighs what it did.
        same = session.snapshot.context is result.snapshot.context
        size = session.context_bytes if same else None
    if session is None or session.loaded is not loaded:
        session = Session(loaded, result.snapshot, record, timers=planned.timers, task=planned.task)
    else:
        session.snapshot, session.record = result.snapshot, record
        session.timers, session.task = planned.timers, planned.task
    session.context_bytes = size
    session.recent.extend((t, save.job.command.actor) for t in result.transitions)
    return session


def _session_of(found: Found) -> Session:
    return Session(
        found.loaded,
        snapshot_of(found.record),
        found.record,
        timers=found.timers,
        task=found.task,
        context_bytes=found.context_bytes,
    )


def _info(workflow_id: str, segment: Segment | None, session: Session | None) -> WorkflowInfo:
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


def _missing(workflow_id: str, error: errors.StatewrightError) -> errors.StatewrightError:
    """``error``, with the store's missing row said as the instance it is."""
    return workflow_not_found(workflow_id) if isinstance(error, errors.RecordNotFound) else error
