"""The workflow engine. ``fsm`` is the pure step function; the runtime builds on it."""

from statewrightd.domain import TERMINAL, Status
from statewrightd.engine.fsm import (
    accepted_events,
    cancel,
    resume,
    signal,
    start,
    validate_input,
)
from statewrightd.engine.model import Snapshot, StepError, StepResult, TransitionTaken
from statewrightd.reasons import Reason

__all__ = [
    "TERMINAL",
    "Reason",
    "Snapshot",
    "Status",
    "StepError",
    "StepResult",
    "TransitionTaken",
    "accepted_events",
    "cancel",
    "resume",
    "signal",
    "start",
    "validate_input",
]
