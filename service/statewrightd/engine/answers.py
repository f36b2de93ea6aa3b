"""What a step answers its caller."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from statewrightd import errors
from statewrightd.definitions.registry import Loaded
from statewrightd.engine.model import TransitionTaken
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord


class Rejection(enum.StrEnum):
    """Why a signal was not applied, when that is its answer (accepted false) rather than
    an error: the instance's own state explains it, and a retry later may be accepted."""

    NOT_RUNNING = Reason.NOT_RUNNING
    PERSISTING = "PERSISTING"  # the instance is busy, and too many events wait for it already
    RECOVERY_REQUIRED = Reason.RECOVERY_REQUIRED
    SHUTTING_DOWN = Reason.SHUTTING_DOWN
    WORKFLOW_PAUSED = Reason.WORKFLOW_PAUSED  # an operator paused it (PauseWorkflow)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The instance after a step, and what happened. A replayed answer (a retry of a
    request id already answered) has the same shape as the original one."""

    record: InstanceRecord
    loaded: Loaded
    transitions: tuple[TransitionTaken, ...] = ()
    created: bool = True
    accepted: bool = True
    rejection: Rejection | None = None  # when accepted is False
    saved: bool = False  # this command's step was written (and its request id with it)
    replayed: bool = False  # the answer of an earlier call with this request id
    timers: tuple[TimerRecord, ...] = ()  # armed in the instance's state after the step
    task: TaskRecord | None = None  # the instance's open task after the step


@dataclass(frozen=True, slots=True)
class Replay:
    """The request id was already answered: the stored answer is the caller's."""

    request_id: str


Result = Outcome | Replay | errors.StatewrightError
Reply = Callable[[Result], None]
