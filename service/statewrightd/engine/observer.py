"""What the engine tells whoever observes it (traces, metrics, debug logs).

The engine defines the protocol and the composition root passes an implementation in, so
the engine depends on no telemetry library and a server without telemetry pays a method
call per step.
"""

from __future__ import annotations

from typing import Protocol

from statewrightd.domain import TraceContext
from statewrightd.engine.answers import Result
from statewrightd.engine.commands import Command


class Observation(Protocol):
    """What an observer noted of a step when its command was built."""

    @property
    def trace(self) -> TraceContext | None:
        """The step's own trace context (None: not traced): what a task it schedules keeps
        for the worker's span to join."""
        ...


class StepObserver(Protocol):
    def requested(self, command: Command) -> Observation | None:
        """Called where ``command`` is built, in its caller's task (whose trace context is
        the step's parent); what it returns comes back to ``finished``."""
        ...

    def finished(
        self, command: Command, attempts: int, observed: Observation | None, result: Result
    ) -> None:
        """Called on the EventLoop thread when a step is answered; must be quick."""
        ...

    def caller(self) -> TraceContext | None:
        """The trace context of the caller's span, in its task (None: not traced): what a
        call keeps for the steps it causes later (a schedule's starts) to be linked to."""
        ...

    def timer_fired(self, lag: float) -> None:
        """A timer fired ``lag`` seconds after it came due (EventLoop thread)."""
        ...

    def schedule_fired(self, outcome: str, count: int, lag: float | None) -> None:
        """``count`` fires of a schedule came to ``outcome`` (STARTED, SKIPPED, MISSED,
        BUFFERED, FAILED); ``lag``: how long after its due time a regular fire started
        (EventLoop thread)."""
        ...

    def task_leased(self, queue: str, waited: float) -> None:
        """An attempt of a task on ``queue`` was leased ``waited`` seconds after the task
        became ready (any thread)."""
        ...

    def task_attempt_ended(self, queue: str, outcome: str) -> None:
        """An attempt ended: ``completed``, ``failed``, ``timed_out`` or ``cancelled``."""
        ...

    def projection_failed(self, definition: str, field: str) -> None:
        """A search field's expression failed, or gave a value of another kind: the
        instance's value of it is null (EventLoop thread)."""
        ...


class Unobserved:
    """The observer of a runtime nobody watches."""

    def requested(self, command: Command) -> Observation | None:
        return None

    def finished(
        self, command: Command, attempts: int, observed: Observation | None, result: Result
    ) -> None:
        return None

    def caller(self) -> TraceContext | None:
        return None

    def timer_fired(self, lag: float) -> None:
        return None

    def schedule_fired(self, outcome: str, count: int, lag: float | None) -> None:
        return None

    def task_leased(self, queue: str, waited: float) -> None:
        return None

    def task_attempt_ended(self, queue: str, outcome: str) -> None:
        return None

    def projection_failed(self, definition: str, field: str) -> None:
        return None
