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
from typing import ParamSpec, TypeVar

from statewrightd import errors
from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import TERMINAL
from statewrightd.engine import fsm
from statewrightd.engine.admission import AdmissionRegistry, AdmissionState, Recovery, Segment
from statewrightd.engine.answers import Outcome, Replay, Reply, Result
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import Command, StartCommand, StepCommand
from statewrightd.engine.event_loop import EventLoop, Phase
from statewrightd.engine.loading import Found, InstanceLoader
from statewrightd.engine.model import StepResult, TransitionTaken
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.engine.offload import Offload
from statewrightd.engine.recovery import Recoveries
from statewrightd.engine.sessions import RECENT_TRANSITIONS, Session, SessionCache
from statewrightd.engine.snapshots import snapshot_of
from statewrightd.engine.writes import Planned, StepWrites, context_size
from statewrightd.store.records import (
    HistoryRecord,
    InstanceRecord,
    Purged,
    TaskRecord,
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


Saved = Callable[[InstanceRecord | errors.StoreError], None]
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
        request_window: timedelta | None = None,
    ) -> None:
        """``retention``: seconds a finished instance is kept (math.inf: for ever) unless
        its definition says otherwise; the step that finishes it records when it expires.
        ``request_window``: how long a step's request record answers retries of its
        request id (None: for ever)."""
        self._loop = loop
        self._repo = repo
        self._writer = writer
        self._loader = InstanceLoader(repo, registry)
        self._offload = Offload(loop, io)
        self._observer: StepObserver = observer or Unobserved()
        self._admission = AdmissionRegistry()
        self._cache = SessionCache(cache_size, lambda wid: self._admission.get(wid) is not None)
        self._step_writes = StepWrites(clock or Clock(), retention, request_window)
        self._max_context_bytes = max_context_bytes
        self._recoveries = Recoveries(loop, self._admission, repo, self._offload)
        self._inflight_requests: dict[str, list[Job]] = {}
        self.listeners: list[StepListener] = []
        # Told of every committed step's newly armed timers (the timer scheduler wakes for
        # one due before it would have looked again).
        self.on_armed: Callable[[tuple[TimerRecord, ...]], None] | None = None
        # Told of every committed step's newly scheduled task (waiting polls wake for it).
        self.on_scheduled: Callable[[TaskRecord], None] | None = None
        self._saves: list[tuple[_SaveInFlight, Saved]] = []
        loop.at_batch_end(self._submit_saves)

    # -- entry -----------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        self._contained(job, self._admit, job)

    def fire(self, command: Command, reply: Reply) -> None:
        """Run a step the server itself starts: a due timer, a task that gave up (the
        schedulers' entry, on this thread)."""
        self.submit(Job(command, reply, observed=self._observer.requested()))

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
            error = errors.Unavailable("the server is shutting down", reason="SHUTTING_DOWN")
            self._refuse(job, self._cache.peek(job.workflow_id), error)
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
        session = self._cache.get(job.workflow_id)
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
        self._answer(job, answer if answer is not None else error)

    def _refuse_busy(self, job: Job, segment: Segment) -> None:
        meta = {"workflow_id": job.workflow_id}
        if segment.state is AdmissionState.RECOVERY_REQUIRED:
            recovery = segment.recovery
            error = errors.FailedPrecondition(
                f"workflow {job.workflow_id} awaits recovery of a save whose outcome is "
                "unknown; retry later",
                reason="RECOVERY_REQUIRED",
                metadata=meta,
            )
            self._refuse(job, recovery.session if recovery is not None else None, error)
            return
        if job.command.queues and len(segment.pending) < MAX_PENDING_SIGNALS:
            segment.pending.append(job)
            return
        busy = errors.Aborted(
            f"workflow {job.workflow_id} is executing another request; retry",
            reason="WORKFLOW_BUSY",
            metadata=meta,
        )
        self._refuse(job, self._cache.peek(job.workflow_id), busy, "PERSISTING")

    # -- loaded ----------------------------------------------------------------------------

    def _load(self, job: Job, segment: Segment, then: Loading) -> None:
        segment.state = AdmissionState.ADMITTING
        token, loader, workflow_id = segment.token, self._loader, job.workflow_id
        self._offload(
            lambda: loader.load(workflow_id),
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
        session = Session(
            result.loaded,
            snapshot_of(result.record),
            result.record,
            timers=result.timers,
            task=result.task,
        )
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
        if self._cache.get(job.workflow_id) is not None:
            if command.return_existing:
                # The answer is the instance as stored: another replica may have stepped it
                # since this one cached it.
                self._load(job, segment, self._on_existing)
            else:
                self._finish(job, segment.token, _already_exists(job.workflow_id))
            return
        segment.state = AdmissionState.EXECUTING
        try:
            result = command.first_step()
            size = context_size(result)
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
        planned = self._step_writes.create(command, result)
        taken = self._on_existing if command.return_existing else None
        self._persist(job, segment, planned, result, command.loaded, taken)

    def _execute(self, job: Job, segment: Segment, session: Session) -> None:
        segment.state = AdmissionState.EXECUTING
        command = job.command
        assert isinstance(command, StepCommand)
        snapshot = session.snapshot
        expected = command.expected()
        stale = (expected and expected != snapshot.revision) or command.behind(snapshot)
        if stale and not job.fresh:
            self._load(job, segment, self._on_loaded)  # the cached snapshot is behind
            return
        if expected and expected != snapshot.revision:
            self._finish(job, segment.token, _revision_mismatch(job, expected, snapshot.revision))
            return
        try:
            result = command.step(session.loaded.definition, snapshot)
        except errors.StatewrightError as exc:
            self._not_stepped(job, command, segment, session, exc)
            return
        if result.changed and result.snapshot.context is not snapshot.context:
            size = context_size(result)
            if size > self._max_context_bytes:
                definition = session.loaded.definition
                result = fsm.context_too_large(definition, snapshot, size, self._max_context_bytes)
        if not result.changed:
            self._not_stepped(job, command, segment, session, None)  # every guard was false
            return
        planned = self._step_writes.save(command, session, result)
        self._persist(job, segment, planned, result, session.loaded)

    def _not_stepped(
        self,
        job: Job,
        command: StepCommand,
        segment: Segment,
        session: Session,
        refused: errors.StatewrightError | None,
    ) -> None:
        """A command that does not step the instance: refused (``refused``), or accepted
        with no guard true. Decided on a cached snapshot, it is confirmed against the
        store first; the command may still leave something to remove (a timer)."""
        if not job.fresh:
            self._load(job, segment, self._on_loaded)
            return
        token, record, loaded = segment.token, session.record, session.loaded
        cleanup = command.unstepped(self._repo)
        answer: Result
        if refused is not None:
            refusal = command.refusal(record, loaded, refused.reason)
            answer = refusal if refusal is not None else refused
        elif cleanup is None:
            answer = Outcome(record, loaded, timers=session.timers, task=session.task)
        else:
            answer = Outcome(record, loaded)
        if cleanup is None:
            self._finish(job, token, answer)
            return
        fired = command.fired()
        session.timers = tuple(t for t in session.timers if t.timer_id != fired)

        def cleaned(result: object) -> None:
            self._finish(
                job, token, result if isinstance(result, errors.StatewrightError) else answer
            )

        self._offload(cleanup, lambda result: self._contained(job, cleaned, result))

    # -- persisted and saved ---------------------------------------------------------------

    def _persist(  # noqa: PLR0917 - one step's parts, passed on to its save
        self,
        job: Job,
        segment: Segment,
        planned: Planned,
        result: StepResult,
        loaded: Loaded,
        taken: Loading | None = None,
    ) -> None:
        segment.state = AdmissionState.PERSISTING
        loop = self._loop
        in_flight = _SaveInFlight(job, segment.token, planned, result, loaded, taken)

        def saved(outcome: InstanceRecord | errors.StoreError) -> None:
            if loop.in_loop():  # the writer posts a batch's outcomes here in one hand-off
                self._contained(job, self._on_saved, in_flight, outcome)
                return
            try:
                loop.post(lambda: self._contained(job, self._on_saved, in_flight, outcome))
            except errors.Unavailable:
                _log.warning("event loop stopped before a save outcome was delivered")

        # Submitted at the end of the EventLoop's batch, all together (_submit_saves).
        self._saves.append((in_flight, saved))

    def _submit_saves(self) -> None:
        if not self._saves:
            return
        saves, self._saves = self._saves, []
        refusals: list[errors.StatewrightError | None]
        try:
            refusals = list(self._writer.submit_many([(s.planned.op, saved) for s, saved in saves]))
        except Exception as exc:
            _log.exception("handing %d saves to the writer failed", len(saves))
            # Which of them the writer took is unknown: the store decides what is cached.
            for save, _ in saves:
                self._cache.drop(save.job.workflow_id)
            refusals = [errors.Internal.wrapping(exc) for _ in saves]
        for (save, _), refusal in zip(saves, refusals, strict=True):
            if refusal is not None:
                self._finish(save.job, save.token, refusal)

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
            session = self._cache.peek(job.workflow_id)
            if session is None or session.loaded is not loaded:
                session = Session(loaded, result.snapshot, record, timers=timers, task=task)
            else:
                session.snapshot, session.record = result.snapshot, record
                session.timers, session.task = timers, task
            session.recent.extend((t, job.command.actor) for t in result.transitions)
            self._cache.remember(session)
        answer = Outcome(record, loaded, result.transitions, saved=True, timers=timers, task=task)
        self._finish(job, save.token, answer)
        op = planned.op
        if op.timers.arm and self.on_armed is not None:
            self.on_armed(op.timers.arm)
        if op.tasks.schedule is not None and self.on_scheduled is not None:
            self.on_scheduled(op.tasks.schedule)
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
            if failure.reason == "REQUEST_EXISTS" and command.request is not None:
                self._finish(job, token, Replay(command.request.request_id))
            elif save.taken is not None:
                self._reload(job, save.taken)
            else:
                self._finish(job, token, _already_exists(job.workflow_id))
            return
        if isinstance(failure, errors.Conflict):
            expected = command.expected()
            if expected:
                actual = failure.actual_revision or 0
                self._finish(job, token, _revision_mismatch(job, expected, actual))
                return
            if job.attempts < MAX_CONFLICT_RETRIES:
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
        self._answer(job, error)
        self._answer_duplicates(job, error)
        segment = self._admission.get(job.workflow_id)
        assert segment is not None
        pending, segment.pending = list(segment.pending), deque()
        for waiting in pending:
            self._refuse_busy(waiting, segment)

    # -- answered --------------------------------------------------------------------------

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

    # -- removal ---------------------------------------------------------------------------

    def forget(self, workflow_ids: Iterable[str]) -> None:
        """Instances the store no longer has (purged, deleted): drop what is cached of them."""
        self._cache.forget(workflow_ids)

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

        def removed(result: Purged | errors.StatewrightError) -> None:
            released = self._admission.release(workflow_id, token)
            self._cache.drop(workflow_id)
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
        session = self._cache.peek(workflow_id)
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
            recoveries_resolved=self._recoveries.resolved,
        )

    def live_segments(self) -> int:
        return len(self._admission)


def _already_exists(workflow_id: str) -> errors.AlreadyExists:
    return errors.AlreadyExists(
        f"workflow {workflow_id} already exists",
        reason="WORKFLOW_ALREADY_EXISTS",
        metadata={"workflow_id": workflow_id},
    )


def _missing(workflow_id: str, error: errors.StatewrightError) -> errors.StatewrightError:
    """``error``, with the store's missing row said as the instance it is."""
    if not isinstance(error, errors.RecordNotFound):
        return error
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
