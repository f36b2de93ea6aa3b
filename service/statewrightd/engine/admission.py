"""The admission registry: at most one live execution segment per instance.

A segment is owned through a token. Every later step of the segment (loaded, executing,
persisting, released) presents the token, so a callback that arrives after its segment was
superseded (a stale owner) can neither advance nor release somebody else's segment.
Only the EventLoop thread touches this registry.
"""

from __future__ import annotations

import enum
import itertools
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any


class AdmissionState(enum.StrEnum):
    ADMITTING = "ADMITTING"
    EXECUTING = "EXECUTING"
    PERSISTING = "PERSISTING"
    RECOVERY_REQUIRED = "RECOVERY_REQUIRED"


@dataclass(slots=True)
class Recovery:
    """A save whose outcome is unknown, waiting for a background re-check."""

    operation: Any  # the store Operation whose commit outcome is unknown
    since: float  # wall-clock seconds
    last_error: Exception
    attempts: int = 0
    next_attempt: float = 0.0  # wall-clock seconds
    # The database server process that ran the lost COMMIT; re-checks wait for it to end.
    last_error_pid: tuple[int, ...] = ()
    session: Any = None  # the last session known for certain, for refusals meanwhile


@dataclass(slots=True)
class Segment:
    workflow_id: str
    token: int
    state: AdmissionState = AdmissionState.ADMITTING
    # Signals that arrived while the segment was live, run in arrival order after it ends.
    pending: deque[Any] = field(default_factory=deque)
    recovery: Recovery | None = None


class AdmissionRegistry:
    def __init__(self) -> None:
        self._segments: dict[str, Segment] = {}
        self._tokens = itertools.count(1)

    def get(self, workflow_id: str) -> Segment | None:
        return self._segments.get(workflow_id)

    def admit(self, workflow_id: str) -> Segment:
        if workflow_id in self._segments:
            raise AssertionError(f"segment for {workflow_id} is already live")
        segment = Segment(workflow_id, next(self._tokens))
        self._segments[workflow_id] = segment
        return segment

    def owns(self, workflow_id: str, token: int) -> bool:
        segment = self._segments.get(workflow_id)
        return segment is not None and segment.token == token

    def advance(self, workflow_id: str, token: int, state: AdmissionState) -> bool:
        segment = self._segments.get(workflow_id)
        if segment is None or segment.token != token:
            return False
        segment.state = state
        return True

    def release(self, workflow_id: str, token: int) -> Segment | None:
        """End the segment if ``token`` owns it; a stale owner releases nothing."""
        segment = self._segments.get(workflow_id)
        if segment is None or segment.token != token:
            return None
        del self._segments[workflow_id]
        return segment

    def counts(self) -> Counter[AdmissionState]:
        return Counter(segment.state for segment in self._segments.values())

    def __len__(self) -> int:
        return len(self._segments)
