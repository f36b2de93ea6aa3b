"""Deciding a step: what a command does to an instance, as a decision the runtime carries
out.

Pure but for the clock (the step's time): given the command and the instance as the
runtime holds it, the stepper says whether to load it afresh first, to answer now, to save
a step, or to answer after removing what a command that did not step leaves behind (a
timer). The runtime does the I/O each decision asks for; the FSM does the step itself,
through the command.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from statewrightd import errors
from statewrightd.engine import fsm
from statewrightd.engine.answers import Outcome, Result
from statewrightd.engine.commands import StartCommand, StepCommand
from statewrightd.engine.model import StepResult
from statewrightd.engine.observer import Observation
from statewrightd.engine.sessions import Session, context_bytes
from statewrightd.engine.writes import Planned, StepWrites
from statewrightd.reasons import Reason
from statewrightd.store.repository import Repository


@dataclass(frozen=True, slots=True)
class Reload:
    """The cached instance cannot decide this: load it from the store, then decide again."""


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer the caller now; nothing is saved."""

    result: Result


@dataclass(frozen=True, slots=True)
class Persist:
    """Save the step (its operation), then answer with what the save says."""

    planned: Planned
    result: StepResult
    # The context the step leaves, in bytes of JSON, when the step measured it (it does
    # for a new context); None: unchanged, or not measured.
    context_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class Cleanup:
    """Run ``cleanup`` (blocking) in the store, then answer ``answer`` (or its error)."""

    cleanup: Callable[[], object]
    answer: Result


Decision = Reload | Answer | Persist | Cleanup


class Stepper:
    def __init__(self, repo: Repository, writes: StepWrites, limits: fsm.StepLimits) -> None:
        """``limits``: what one step may use (its ``value_bytes`` bound the context)."""
        self._repo = repo
        self._writes = writes
        self._max_context_bytes = limits.value_bytes
        self._limits = limits

    def start(
        self, command: StartCommand, cached: bool, observed: Observation | None = None
    ) -> Decision:
        """The first step of a new instance; ``cached``: this replica holds the id;
        ``observed``: what the observer noted of the step (its trace context, kept with a
        task or a timer it plans)."""
        if cached:
            if command.return_existing:
                # The answer is the instance as stored: another replica may have stepped it
                # since this one cached it.
                return Reload()
            return Answer(already_exists(command.workflow_id))
        try:
            with fsm.limited(self._limits):
                result = command.first_step()
            size = context_bytes(result.snapshot.context)
            error = result.snapshot.error
            if error is not None and error.reason == Reason.CONTEXT_TOO_LARGE:
                size = int(error.metadata["size"])
            if size > self._max_context_bytes:
                raise errors.InvalidArgument(
                    f"the first step would make the context {size:,} bytes, over the limit of "
                    f"{self._max_context_bytes:,}; nothing was created",
                    reason=Reason.CONTEXT_TOO_LARGE,
                    metadata={"limit": self._max_context_bytes, "size": size},
                )
        except errors.StatewrightError as exc:
            return Answer(exc)
        return Persist(self._writes.create(command, result, observed), result, size)

    def step(
        self,
        command: StepCommand,
        session: Session,
        fresh: bool,
        observed: Observation | None = None,
    ) -> Decision:
        """A step of the instance ``session`` holds; ``fresh``: it was just loaded."""
        snapshot = session.snapshot
        expected = command.expected()
        mismatch = bool(expected) and expected != snapshot.revision
        if (mismatch or command.behind(snapshot)) and not fresh:
            return Reload()  # the cached snapshot is behind
        if mismatch:
            return Answer(revision_mismatch(command.workflow_id, expected, snapshot.revision))
        try:
            with fsm.limited(self._limits):
                result = command.step(session.loaded.definition, snapshot)
        except errors.StatewrightError as exc:
            return self._not_stepped(command, session, fresh, exc)
        size = None
        if result.changed and result.snapshot.context is not snapshot.context:
            size = context_bytes(result.snapshot.context)
            if size > self._max_context_bytes:
                definition = session.loaded.definition
                result = fsm.context_too_large(definition, snapshot, size, self._max_context_bytes)
                size = None  # the context stays as it was
        if not result.changed:
            return self._not_stepped(command, session, fresh, None)  # every guard was false
        planned = self._writes.save(command, session, result, observed)
        return Persist(planned, result, size)

    def _not_stepped(
        self,
        command: StepCommand,
        session: Session,
        fresh: bool,
        refused: errors.StatewrightError | None,
    ) -> Decision:
        """A command that does not step the instance: refused (``refused``), or accepted
        with no guard true. Decided on a cached snapshot, it is confirmed against the
        store first; the command may still leave something to remove (a timer)."""
        if not fresh:
            return Reload()
        record, loaded = session.record, session.loaded
        # A paused instance keeps what it has armed (a due timer fires after the unpause).
        held = refused is not None and refused.reason == Reason.WORKFLOW_PAUSED
        cleanup = None if held else command.unstepped(self._repo)
        if refused is not None:
            refusal = command.refusal(record, loaded, refused.reason)
            answer: Result = refusal if refusal is not None else refused
        elif cleanup is None:
            answer = Outcome(record, loaded, timers=session.timers, task=session.task)
        else:
            answer = Outcome(record, loaded)
        return Answer(answer) if cleanup is None else Cleanup(cleanup, answer)


def shutting_down() -> errors.Unavailable:
    return errors.Unavailable("the server is shutting down", reason=Reason.SHUTTING_DOWN)


def busy(workflow_id: str) -> errors.Aborted:
    return errors.Aborted(
        f"workflow {workflow_id} is executing another request; retry",
        reason=Reason.WORKFLOW_BUSY,
        metadata={"workflow_id": workflow_id},
    )


def recovery_required(workflow_id: str) -> errors.FailedPrecondition:
    return errors.FailedPrecondition(
        f"workflow {workflow_id} awaits recovery of a save whose outcome is unknown; retry later",
        reason=Reason.RECOVERY_REQUIRED,
        metadata={"workflow_id": workflow_id},
    )


def workflow_not_found(workflow_id: str) -> errors.NotFound:
    return errors.NotFound(
        f"workflow {workflow_id} not found",
        reason=Reason.WORKFLOW_NOT_FOUND,
        metadata={"workflow_id": workflow_id},
    )


def already_exists(workflow_id: str) -> errors.AlreadyExists:
    return errors.AlreadyExists(
        f"workflow {workflow_id} already exists",
        reason=Reason.WORKFLOW_ALREADY_EXISTS,
        metadata={"workflow_id": workflow_id},
    )


def revision_mismatch(workflow_id: str, expected: int, actual: int) -> errors.Aborted:
    return errors.Aborted(
        f"workflow {workflow_id} is at revision {actual}, not {expected}",
        reason=Reason.REVISION_MISMATCH,
        metadata={
            "workflow_id": workflow_id,
            "expected_revision": expected,
            "actual_revision": actual,
        },
    )
