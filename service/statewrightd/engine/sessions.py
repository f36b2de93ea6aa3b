"""The cache of live instances the EventLoop thread steps: one session per instance."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from statewrightd.definitions.registry import Loaded
from statewrightd.engine.model import Snapshot, TransitionTaken
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord

# How many of an instance's latest transitions a session remembers (diagnostics show them).
RECENT_TRANSITIONS = 20


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


class SessionCache:
    """The most recently stepped sessions, up to ``size``; one whose instance has a live
    segment (``live``) is never evicted. EventLoop thread only."""

    def __init__(self, size: int, live: Callable[[str], bool]) -> None:
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._size = size
        self._live = live

    def get(self, workflow_id: str) -> Session | None:
        """The session, now the most recently used."""
        session = self._sessions.get(workflow_id)
        if session is not None:
            self._sessions.move_to_end(workflow_id)
        return session

    def peek(self, workflow_id: str) -> Session | None:
        return self._sessions.get(workflow_id)

    def revision(self, workflow_id: str) -> int | None:
        """The revision cached of ``workflow_id``, if any. The one read made from other
        threads: a dict lookup and an attribute, each atomic, so it sees a session as it
        was a moment ago; fit to decide what to read ahead, never what to step."""
        session = self._sessions.get(workflow_id)
        return None if session is None else session.snapshot.revision

    def remember(self, session: Session) -> None:
        workflow_id = session.record.workflow_id
        self._sessions[workflow_id] = session
        self._sessions.move_to_end(workflow_id)
        while len(self._sessions) > self._size:
            oldest = next(iter(self._sessions))
            if self._live(oldest):
                self._sessions.move_to_end(oldest)  # never evict a live segment's session
                break
            del self._sessions[oldest]

    def drop(self, workflow_id: str) -> Session | None:
        """Forget one instance (the store is the truth for it now)."""
        return self._sessions.pop(workflow_id, None)

    def forget(self, workflow_ids: Iterable[str]) -> None:
        for workflow_id in workflow_ids:
            self._sessions.pop(workflow_id, None)

    def __len__(self) -> int:
        return len(self._sessions)
