"""The cache of live instances the EventLoop thread steps: one session per instance."""

from __future__ import annotations

import json
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from statewrightd.config import CACHED_CONTEXT_BYTES
from statewrightd.definitions.registry import Loaded
from statewrightd.engine.model import Snapshot, TransitionTaken
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord

# How many of an instance's latest transitions a session remembers (diagnostics show them).
RECENT_TRANSITIONS = 20

# At most this many sessions, however small their contexts.
CACHED_SESSIONS = 50_000
# The live sessions one remember looks past for one to let go: it stays cheap when most of
# the cache is being stepped, and the next one goes on where it stopped.
LOOK_PAST = 64


def context_bytes(context: Mapping[str, object]) -> int:
    """A context's size in bytes of JSON, as the store writes it."""
    value = context if type(context) is dict else dict(context)
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


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
    # The snapshot's context in bytes of JSON (what the cache weighs it by); None: not
    # measured yet, and the cache measures it when it remembers the session.
    context_bytes: int | None = None


class SessionCache:
    """The most recently stepped sessions, up to ``size`` of them and ``budget`` bytes of
    their contexts' JSON; one whose instance has a live segment (``live``) is never
    evicted. EventLoop thread only."""

    def __init__(
        self, size: int, live: Callable[[str], bool], budget: int = CACHED_CONTEXT_BYTES
    ) -> None:
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._weights: dict[str, int] = {}  # each session's bytes as last counted
        self._size = size
        self._budget = budget
        self._bytes = 0
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
        """Cache ``session`` (or count it again: its snapshot may have changed), the
        least recently used let go while the cache is over either bound."""
        workflow_id = session.record.workflow_id
        weight = session.context_bytes
        if weight is None:
            weight = session.context_bytes = context_bytes(session.snapshot.context)
        self._bytes += weight - self._weights.get(workflow_id, 0)
        self._weights[workflow_id] = weight
        sessions = self._sessions
        sessions[workflow_id] = session
        sessions.move_to_end(workflow_id)
        passed = 0
        while (len(sessions) > self._size or self._bytes > self._budget) and passed < LOOK_PAST:
            oldest = next(iter(sessions))
            if self._live(oldest):
                sessions.move_to_end(oldest)  # never evict a live segment's session
                passed += 1
            else:
                self.drop(oldest)

    def drop(self, workflow_id: str) -> Session | None:
        """Forget one instance (the store is the truth for it now)."""
        self._bytes -= self._weights.pop(workflow_id, 0)
        return self._sessions.pop(workflow_id, None)

    def forget(self, workflow_ids: Iterable[str]) -> None:
        for workflow_id in workflow_ids:
            self.drop(workflow_id)

    @property
    def context_bytes(self) -> int:
        """The cached sessions' contexts, in bytes of JSON."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._sessions)
