"""The typed commands a step starts from, one class per kind of step, each with its rules.

A command says what was asked of one instance, as values the engine understands; a door
builds one from a request and the runtime executes it. It carries nothing of the
transport and nothing of its own execution (attempts, admission, the caller's reply): the
runtime keeps that beside it.

What differs from one kind of step to another lives on its class, so that the runtime
asks rather than checks kinds, and a new kind of step is a class of its own:

- admitted: whether it waits its turn behind a step in progress (``queues``);
- loaded: the revision its caller saw (``expected``), and whether a cached snapshot is
  provably behind it (``behind``);
- stepped: the FSM's step for it (``step``), and what a step that does not apply still
  leaves to remove from the store (``unstepped``);
- saved: the event history names (``history_event``), what history records it took
  (``taken``), the timer it fires (``fired``), the task it finishes (``finishes``);
- answered: a refusal its caller gets as an answer rather than an error (``refusal``);
- observed: what its step's span says of it (``described``) and the spans it follows
  from (``links``: the step that scheduled a task, the worker's span, the step that
  armed a timer, the call that set a schedule up, a child's parent step).

``StartCommand`` creates an instance; every other command is a ``StepCommand``, which
steps one that exists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, ClassVar

from statewrightd.definitions.model import TASK_COMPLETED, TASK_FAILED, Definition
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import TaskStatus, TraceContext
from statewrightd.engine import fsm, migration
from statewrightd.engine.answers import Outcome, Rejection
from statewrightd.engine.loading import Found
from statewrightd.engine.model import Snapshot, StepResult
from statewrightd.errors import FailedPrecondition
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord, TaskFinish, TaskRecord, TimerRecord
from statewrightd.store.repository import Repository

_REJECTIONS = {r.value: r for r in Rejection}

# What a step's span is linked to: why (``scheduled by``, ``worker``, ``armed by``,
# ``schedule``, ``parent``), and that span.
Links = tuple[tuple[str, TraceContext], ...]
ARMED_BY = "armed by"  # a timer's step: the step that armed the timer
SCHEDULE = "schedule"  # a schedule's start: the call that created or last changed it
PARENT = "parent"  # a child's start: the parent's step that entered its workflow: state


@dataclass(frozen=True, slots=True)
class RequestKey:
    """An idempotency key and what identifies the request it was first used with."""

    request_id: str
    method: str
    fingerprint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Command:
    """One step asked of one instance. ``request`` makes it idempotent."""

    kind: ClassVar[str]
    # An event that waits its turn behind a step in progress, rather than being refused
    # WORKFLOW_BUSY: it is no decision against a revision its caller saw.
    queues: ClassVar[bool] = False
    workflow_id: str
    request: RequestKey | None = None
    # Who asked: the caller's principal, or the server itself for the steps it starts.
    actor: str = "anonymous"

    def expected(self) -> int:
        """The revision the caller expects the instance at; 0 when it does not care."""
        return 0

    def taken(self) -> dict[str, Any] | None:
        """What the step took, as its history row records it; None: nothing."""
        return None

    def known(self) -> Found | None:
        """The instance as its caller read it moments ago, stepped instead of loading it
        when no session of it is cached or the one cached is older (if it is stale, the
        save's compare-and-swap refuses it, and it is loaded then); None: nothing."""
        return None

    def refusal(self, record: InstanceRecord, loaded: Loaded, reason: str) -> Outcome | None:
        """The answer to a refusal for ``reason`` (the instance as last known for
        certain), when this kind answers refusals rather than raising them; None: raise."""
        return None

    def described(self) -> dict[str, str | int]:
        """What this kind of step says of itself to whoever observes it: the event it
        delivers, the task it finishes (names without the observer's prefix)."""
        return {}

    def links(self) -> Links:
        """The spans this step follows from without being their child."""
        return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class StartCommand(Command):
    """Create the instance and run its first step. ``return_existing``: an id that is
    taken answers with the stored instance instead of ALREADY_EXISTS; ``restart``: an id
    taken by a finished instance starts a new run of it (``on_existing``)."""

    kind: ClassVar[str] = "start"
    loaded: Loaded
    input: Mapping[str, Any] = field(default_factory=dict)
    return_existing: bool = False
    restart: bool = False
    # The first step runs this long after the start, on a durable timer (None: at once).
    delay: timedelta | None = None
    # The start's own bound on each step's transitions, kept with the instance (None: the
    # definition's); checked against the definition's at the door.
    recursion_limit: int | None = None
    # The version the request named (None: the latest, which ``loaded`` holds); a restart
    # runs the instance's own version and refuses another named one.
    version: int | None = None

    # The spans the start follows from when the server makes it: the call that created
    # or changed its schedule, the step of the parent that entered its ``workflow:`` state.
    follows: Links = ()

    def links(self) -> Links:
        return self.follows

    def first_step(self) -> StepResult:
        defn, limit = self.loaded.definition, self.recursion_limit
        if self.delay:
            return fsm.scheduled(defn, self.workflow_id, self.input, self.delay, limit)
        return fsm.start(defn, self.workflow_id, self.input, limit)

    def taken(self) -> dict[str, Any] | None:
        return dict(self.input)

    def history_event(self) -> str | None:
        """The event history and watchers show for the first step (none: a start)."""
        return None

    def on_existing(self) -> StepCommand | None:
        """The step this start asks of the instance when its id is taken, decided on that
        instance like any step; None: the start answers itself (ALREADY_EXISTS, or the
        stored instance with ``return_existing``)."""
        if not self.restart:
            return None
        return RestartCommand(
            workflow_id=self.workflow_id,
            request=self.request,
            actor=self.actor,
            definition=self.loaded.definition.name,
            version=self.version,
            input=self.input,
            recursion_limit=self.recursion_limit,
            delay=self.delay,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalWithStartCommand(StartCommand):
    """Create the instance with ``event`` delivered in its first step (one save, revision
    1); an instance that exists gets the event as a ``SignalCommand`` (``as_signal``),
    the runtime deciding which once it knows, from its cache or from the store's unique
    insert, so that of callers racing on one id exactly one creates it."""

    kind: ClassVar[str] = "signal_with_start"
    # Behind a step in progress it waits, as a signal does: it is no decision against a
    # revision its caller saw.
    queues: ClassVar[bool] = True
    event: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    # An instance that exists but whose delayed start has not run yet is started now,
    # with the event; otherwise the event is answered as a signal to it (not running).
    start_now: bool = False

    def first_step(self) -> StepResult:
        return fsm.signal_with_start(
            self.loaded.definition,
            self.workflow_id,
            self.input,
            self.event,
            self.payload,
            recursion_limit=self.recursion_limit,
        )

    def taken(self) -> dict[str, Any] | None:
        return {"input": dict(self.input), "payload": dict(self.payload)}

    def history_event(self) -> str | None:
        return self.event

    def described(self) -> dict[str, str | int]:
        return {"event": self.event}

    def refusal(self, record: InstanceRecord, loaded: Loaded, reason: str) -> Outcome | None:
        # Refused before it could tell whether the instance exists (busy, shutting down,
        # in recovery), it answers as the signal of the instance that does.
        return self.as_signal().refusal(record, loaded, reason)

    def on_existing(self) -> StepCommand | None:
        return self.as_signal()

    def as_signal(self) -> SignalCommand:
        """The same request, as a signal of the instance that exists."""
        return SignalCommand(
            workflow_id=self.workflow_id,
            request=self.request,
            actor=self.actor,
            event=self.event,
            payload=self.payload,
            start_now=self.start_now,
            definition=self.loaded.definition.name,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class StepCommand(Command):
    """A step of an instance that exists."""

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        """The FSM's step for this command; raises the refusal when it does not apply."""
        raise NotImplementedError

    def behind(self, snapshot: Snapshot) -> bool:
        """Whether ``snapshot`` (a cached one) is provably older than what this command
        was decided on, so that only a fresh load can answer it."""
        return False

    def unstepped(self, repo: Repository) -> Callable[[], object] | None:
        """What a command that does not step the instance (refused, or no guard true)
        still does in the store, as a blocking call; None: nothing."""
        return None

    def stepped_with(self, loaded: Loaded) -> Loaded:
        """The definition version the instance runs after this step (a migration's
        target; any other step keeps ``loaded``)."""
        return loaded

    def history_event(self, result: StepResult) -> str | None:
        """The event history and watchers show for this command's step."""
        return result.transitions[0].event if result.transitions else None

    def fired(self) -> str | None:
        """The timer whose firing this step is (it saves only while that timer is armed)."""
        return None

    def finishes(self) -> TaskFinish | None:
        """The task this step finishes, fenced as the command saw it."""
        return None

    def run_after(self, run: int) -> int:
        """The run of the instance after this step, from the run it was in."""
        return run


@dataclass(frozen=True, slots=True, kw_only=True)
class RestartCommand(StepCommand):
    """Start a finished instance again: what a start with if_exists RESTART asks of the
    instance that has its id (``StartCommand.on_existing``). One saved step at the next
    revision begins a new run (fsm.restart), under compare-and-swap like any step; a live
    instance refuses it ALREADY_EXISTS. It runs the instance's own definition version."""

    kind: ClassVar[str] = "restart"
    definition: str
    version: int | None = None
    input: Mapping[str, Any] = field(default_factory=dict)
    recursion_limit: int | None = None
    delay: timedelta | None = None

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        if self.definition != snapshot.definition or self.version not in {None, snapshot.version}:
            named = self.definition + ("" if self.version is None else f" v{self.version}")
            raise FailedPrecondition(
                f"workflow {self.workflow_id} runs definition {snapshot.definition} "
                f"v{snapshot.version}, not {named}: a restart runs the instance's own version",
                reason=Reason.DEFINITION_DIFFERS,
                metadata={
                    "workflow_id": self.workflow_id,
                    "definition": snapshot.definition,
                    "version": snapshot.version,
                },
            )
        return fsm.restart(definition, snapshot, self.input, self.recursion_limit, self.delay)

    def taken(self) -> dict[str, Any] | None:
        return dict(self.input)

    def history_event(self, result: StepResult) -> str | None:
        return self.kind

    def run_after(self, run: int) -> int:
        return run + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ResumeCommand(StepCommand):
    """Resume a WAITING instance with an event (empty: the first one declared)."""

    kind: ClassVar[str] = "resume"
    event: str = ""
    input: Mapping[str, Any] = field(default_factory=dict)
    expected_revision: int = 0

    def expected(self) -> int:
        return self.expected_revision

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.resume(definition, snapshot, self.event, self.input)

    def described(self) -> dict[str, str | int]:
        return {"event": self.event} if self.event else {}

    def taken(self) -> dict[str, Any] | None:
        return dict(self.input)

    def history_event(self, result: StepResult) -> str | None:
        return result.transitions[0].event if result.transitions else (self.event or None)


@dataclass(frozen=True, slots=True, kw_only=True)
class SignalCommand(StepCommand):
    """Deliver an event to a RUNNING instance. Its refusals for the instance's own reasons
    (not running, persisting, recovery required, shutting down) are answers:
    ``accepted`` false, with the reason."""

    kind: ClassVar[str] = "signal"
    queues: ClassVar[bool] = True
    event: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    # Set by a signal-with-start only: an instance whose delayed start has not run yet is
    # started by this step, with the event; and the definition it named, which the
    # instance must run.
    start_now: bool = False
    definition: str | None = None

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        if self.definition is not None and self.definition != snapshot.definition:
            raise FailedPrecondition(
                f"workflow {self.workflow_id} runs definition {snapshot.definition}, "
                f"not {self.definition}",
                reason=Reason.DEFINITION_DIFFERS,
                metadata={"workflow_id": self.workflow_id, "definition": snapshot.definition},
            )
        if self.start_now and fsm.is_delayed(snapshot):
            return fsm.start_now_with_signal(definition, snapshot, self.event, self.payload)
        return fsm.signal(definition, snapshot, self.event, self.payload)

    def described(self) -> dict[str, str | int]:
        return {"event": self.event}

    def taken(self) -> dict[str, Any] | None:
        return dict(self.payload)

    def history_event(self, result: StepResult) -> str | None:
        return result.transitions[0].event if result.transitions else (self.event or None)

    def refusal(self, record: InstanceRecord, loaded: Loaded, reason: str) -> Outcome | None:
        rejection = _REJECTIONS.get(reason)
        if rejection is None:
            return None
        return Outcome(record, loaded, accepted=False, rejection=rejection)


@dataclass(frozen=True, slots=True, kw_only=True)
class CancelCommand(StepCommand):
    """Stop a live instance where it is."""

    kind: ClassVar[str] = "cancel"
    reason: str = ""
    expected_revision: int = 0

    def expected(self) -> int:
        return self.expected_revision

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.cancel(definition, snapshot, self.reason)

    def taken(self) -> dict[str, Any] | None:
        return {"reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class OperatorCommand(StepCommand):
    """A step an operator asks for with a reason (a retry, a pause, an unpause): history
    shows it by its kind and records the reason it took."""

    reason: str = ""
    expected_revision: int = 0

    def expected(self) -> int:
        return self.expected_revision

    def taken(self) -> dict[str, Any] | None:
        return {"reason": self.reason}

    def history_event(self, result: StepResult) -> str | None:
        return self.kind


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryCommand(OperatorCommand):
    """Put a FAILED instance back into the state it failed in (fsm.retry)."""

    kind: ClassVar[str] = "retry"

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.retry(definition, snapshot)


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetCommand(StepCommand):
    """Put an instance back at revision ``to_revision``, whose ``state`` and ``context``
    are read from history before it runs (fsm.reset; an empty state is refused)."""

    kind: ClassVar[str] = "reset"
    to_revision: int
    state: str = ""
    context: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    expected_revision: int = 0

    def expected(self) -> int:
        return self.expected_revision

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.reset(definition, snapshot, self.to_revision, self.state, self.context)

    def taken(self) -> dict[str, Any] | None:
        return {"reason": self.reason, "to_revision": self.to_revision}

    def history_event(self, result: StepResult) -> str | None:
        return self.kind


@dataclass(frozen=True, slots=True, kw_only=True)
class MigrateCommand(StepCommand):
    """Move a RUNNING or WAITING instance to ``target``, another version of its
    definition (engine.migration: checked against both versions, then fsm.migrate)."""

    kind: ClassVar[str] = "migrate"
    target: Loaded
    # The version the caller's instance ran when asked: a step of any other is refused (a
    # concurrent migration moved it), and history records it beside the target.
    from_version: int
    state_map: Mapping[str, str] = field(default_factory=dict)
    sets: Mapping[str, str] = field(default_factory=dict)
    reason: str = ""
    expected_revision: int = 0

    def expected(self) -> int:
        return self.expected_revision

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return self.planned(definition, snapshot)[1]

    def planned(
        self, definition: Definition, snapshot: Snapshot
    ) -> tuple[migration.MigrationPlan, StepResult]:
        """The checked plan and its step (a dry run answers both, saving nothing)."""
        if definition.version != self.from_version:
            raise migration.MigrationInvalid(
                snapshot.workflow_id,
                self.target.definition.version,
                [
                    migration.MigrationProblem(
                        "to_version",
                        f"the instance runs version "
                        f"{definition.version} now, not {self.from_version} as when asked",
                    )
                ],
            )
        target = self.target.definition
        return migration.migrate(definition, target, snapshot, self.state_map, self.sets)

    def stepped_with(self, loaded: Loaded) -> Loaded:
        return self.target

    def taken(self) -> dict[str, Any] | None:
        return {
            "reason": self.reason,
            "from_version": self.from_version,
            "to_version": self.target.definition.version,
            "state_map": dict(self.state_map),
            "set": dict(self.sets),
        }

    def history_event(self, result: StepResult) -> str | None:
        return self.kind


@dataclass(frozen=True, slots=True, kw_only=True)
class PauseCommand(OperatorCommand):
    """Pause a live instance (fsm.pause): nothing steps it until its unpause."""

    kind: ClassVar[str] = "pause"

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.pause(definition, snapshot, self.actor, self.reason)


@dataclass(frozen=True, slots=True, kw_only=True)
class UnpauseCommand(OperatorCommand):
    """Unpause a paused instance (fsm.unpause)."""

    kind: ClassVar[str] = "unpause"

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.unpause(definition, snapshot)


@dataclass(frozen=True, slots=True, kw_only=True)
class TimerCommand(StepCommand):
    """A claimed timer came due: fire ``transition`` if the instance still rests in the
    state whose entry (at ``revision``) armed timer ``timer_id``. A timer that does not
    fire (its guard false, or the instance moved on) is consumed."""

    kind: ClassVar[str] = "timer"
    timer_id: str
    transition: int
    revision: int
    due_time: datetime
    armed_by: TraceContext | None = None  # the trace context of the step that armed it

    @classmethod
    def of(cls, timer: TimerRecord, actor: str) -> TimerCommand:
        """The firing of armed ``timer``, claimed by ``actor``."""
        return cls(
            actor=actor,
            workflow_id=timer.workflow_id,
            timer_id=timer.timer_id,
            transition=timer.transition,
            revision=timer.revision,
            due_time=timer.due_time,
            armed_by=timer.trace,
        )

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        return fsm.timer(definition, snapshot, self.transition)

    def taken(self) -> dict[str, Any] | None:
        return {"timer_id": self.timer_id, "due_time": self.due_time.isoformat()}

    def behind(self, snapshot: Snapshot) -> bool:
        # Armed by a step this replica has not seen.
        return self.revision > snapshot.revision

    def unstepped(self, repo: Repository) -> Callable[[], object] | None:
        return lambda: repo.delete_timer(self.workflow_id, self.timer_id)

    def fired(self) -> str | None:
        return self.timer_id

    def described(self) -> dict[str, str | int]:
        return {"timer_id": self.timer_id}

    def links(self) -> Links:
        return () if self.armed_by is None else ((ARMED_BY, self.armed_by),)


@dataclass(frozen=True, slots=True, kw_only=True)
class CompleteTaskCommand(StepCommand):
    """A worker completed task ``task_id`` of task state ``state`` under ``lease_token``:
    apply ``result`` if that lease is still the current one."""

    kind: ClassVar[str] = "complete_task"
    queues: ClassVar[bool] = True
    task_id: str
    state: str
    lease_token: str
    result: Mapping[str, Any] = field(default_factory=dict)
    # An item of a fan-out: its index, and the revision of the step that entered its map.
    item: int | None = None
    revision: int = 0
    attempt: int = 0  # the attempt that completed it
    # The trace contexts of the step that scheduled the task and of the worker's span.
    scheduled_by: TraceContext | None = None
    worker: TraceContext | None = None
    # The task as last written (its update_time) when the server took it from its memory of
    # the lease instead of reading it: the save then requires the row unchanged since.
    seen: datetime | None = None
    # The instance as the lease found it (the leasing process remembers it with the lease).
    leased: Found | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        task: TaskRecord,
        token: str,
        result: Mapping[str, Any],
        *,
        actor: str,
        request: RequestKey | None,
        worker: TraceContext | None = None,
        remembered: bool = False,
        leased: Found | None = None,
    ) -> CompleteTaskCommand:
        """The completion of ``task`` by the worker holding lease ``token``; ``remembered``:
        ``task`` is the server's memory of the lease, not a read of it, and ``leased`` the
        instance as that lease found it."""
        return cls(
            **_of_task(task, actor, request),
            lease_token=token,
            result=result,
            attempt=task.attempt,
            worker=worker,
            seen=task.update_time if remembered else None,
            leased=leased,
        )

    def known(self) -> Found | None:
        return self.leased

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        if self.item is not None:
            return fsm.complete_item(
                definition,
                snapshot,
                self.state,
                revision=self.revision,
                item=self.item,
                result=self.result,
            )
        return fsm.complete_task(definition, snapshot, self.state, self.result)

    def behind(self, snapshot: Snapshot) -> bool:
        # Scheduled by a step this replica has not seen.
        return self.revision > snapshot.revision

    def taken(self) -> dict[str, Any] | None:
        if self.item is not None:
            # The item's result is kept on its task (the join reads it from there).
            return {"task_id": self.task_id, "item": self.item}
        return {"task_id": self.task_id, "result": dict(self.result)}

    def history_event(self, result: StepResult) -> str | None:
        return TASK_COMPLETED  # what history and watchers show for the result's step

    def described(self) -> dict[str, str | int]:
        return _task_described(self.task_id, self.attempt, self.item, TASK_COMPLETED)

    def links(self) -> Links:
        return _task_links(self.scheduled_by, self.worker)

    def finishes(self) -> TaskFinish | None:
        result = dict(self.result) if self.item is not None else None
        return TaskFinish(
            self.task_id,
            TaskStatus.COMPLETED,
            self.lease_token,
            None,
            leased=True,
            result=result,
            seen=self.seen,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskGiveUpCommand(StepCommand):
    """Task ``task_id`` of ``state`` gave up (``failure``: type, message, details,
    attempts): fire ``task_failed``, if the task is still as it was seen (``lease_token``,
    ``attempt``; ``leased``: it must still be leased)."""

    kind: ClassVar[str] = "task_gave_up"
    queues: ClassVar[bool] = True
    task_id: str
    state: str
    lease_token: str | None
    attempt: int
    leased: bool
    failure: Mapping[str, Any]
    timed_out: bool = False
    item: int | None = None  # as for CompleteTaskCommand
    revision: int = 0
    scheduled_by: TraceContext | None = None
    worker: TraceContext | None = None

    @classmethod
    def of(
        cls,
        task: TaskRecord,
        failure: Mapping[str, Any],
        *,
        actor: str,
        lease_token: str | None,
        leased: bool,
        request: RequestKey | None = None,
        timed_out: bool = False,
        worker: TraceContext | None = None,
    ) -> TaskGiveUpCommand:
        """``task`` gives up with ``failure``, fenced by ``lease_token`` at its attempt."""
        return cls(
            **_of_task(task, actor, request),
            lease_token=lease_token,
            attempt=task.attempt,
            leased=leased,
            failure=failure,
            timed_out=timed_out,
            worker=worker,
        )

    def behind(self, snapshot: Snapshot) -> bool:
        return self.revision > snapshot.revision  # as for CompleteTaskCommand

    def step(self, definition: Definition, snapshot: Snapshot) -> StepResult:
        if self.item is not None:
            return fsm.item_gave_up(
                definition,
                snapshot,
                self.state,
                revision=self.revision,
                item=self.item,
                failure=self.failure,
            )
        return fsm.task_gave_up(definition, snapshot, self.state, self.failure)

    def taken(self) -> dict[str, Any] | None:
        # The failure as the worker reported it; its details can be large and are kept
        # on the task (last_error), so history keeps what a reader scans for.
        failure = {k: self.failure[k] for k in ("type", "message") if k in self.failure}
        taken = {"task_id": self.task_id, "timed_out": self.timed_out, "failure": failure}
        return taken if self.item is None else {**taken, "item": self.item}

    def described(self) -> dict[str, str | int]:
        return _task_described(self.task_id, self.attempt, self.item, TASK_FAILED)

    def links(self) -> Links:
        return _task_links(self.scheduled_by, self.worker)

    def finishes(self) -> TaskFinish | None:
        return TaskFinish(
            self.task_id,
            TaskStatus.TIMED_OUT if self.timed_out else TaskStatus.FAILED,
            self.lease_token,
            self.attempt,
            leased=self.leased,
            last_error={k: self.failure.get(k) for k in ("type", "message", "details")},
        )


def _of_task(task: TaskRecord, actor: str, request: RequestKey | None) -> dict[str, Any]:
    """What a command about ``task`` says of its instance, its task and its caller."""
    return {
        "actor": actor,
        "workflow_id": task.workflow_id,
        "request": request,
        "task_id": task.task_id,
        "state": task.state,
        "item": task.item_index,
        "revision": task.revision,
        "scheduled_by": task.trace,
    }


def _task_described(
    task_id: str, attempt: int, item: int | None, event: str
) -> dict[str, str | int]:
    described: dict[str, str | int] = {"event": event, "task_id": task_id, "task.attempt": attempt}
    if item is not None:
        described["task.item_index"] = item
    return described


def _task_links(scheduled_by: TraceContext | None, worker: TraceContext | None) -> Links:
    links: Links = ()
    if scheduled_by is not None:
        links += (("scheduled by", scheduled_by),)
    if worker is not None:
        links += (("worker", worker),)
    return links
