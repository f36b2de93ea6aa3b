"""What a step answers its caller."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from statewrightd import errors
from statewrightd.definitions.registry import Loaded
from statewrightd.engine.model import TransitionTaken
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord


@dataclass(frozen=True, slots=True)
class Outcome:
    """The instance after a step, and what happened. A replayed answer (a retry of a
    request id already answered) has the same shape as the original one."""

    record: InstanceRecord
    loaded: Loaded
    transitions: tuple[TransitionTaken, ...] = ()
    created: bool = True
    accepted: bool = True
    rejection: str = ""  # SignalRejection name when accepted is False
    saved: bool = False  # this command's step was written (and its request id with it)
    timers: tuple[TimerRecord, ...] = ()  # armed in the instance's state after the step
    task: TaskRecord | None = None  # the instance's open task after the step


@dataclass(frozen=True, slots=True)
class Replay:
    """The request id was already answered: the stored answer is the caller's."""

    request_id: str


Result = Outcome | Replay | errors.StatewrightError
Reply = Callable[[Result], None]
