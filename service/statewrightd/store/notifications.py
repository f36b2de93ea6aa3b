"""Cross-replica hints that an instance has new revisions: PostgreSQL LISTEN/NOTIFY.

The writer sends one NOTIFY per batch transaction listing ``workflow_id:revision`` pairs
(split only when the payload would exceed PostgreSQL's limit). A listener thread on each
replica receives them, coalesces whatever arrived together, and hands the batch to a
callback. Hints can be spurious (a row whose CAS failed) and can be lost (a dropped
listener connection); watchers treat them as "go and read the history table", and a lost
hint only delays a watcher on another replica until the next one or its periodic check.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Container, Iterable, Iterator

import psycopg

from statewrightd.store import sql_postgres as q
from statewrightd.store.records import InstanceRecord

_log = logging.getLogger(__name__)

# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more.
MAX_PAYLOAD = 7900

Hint = tuple[str, int]
HintCallback = Callable[[list[Hint]], None]


def step_hints_payloads(targets: Iterable[InstanceRecord]) -> Iterator[str]:
    chunk: list[str] = []
    size = 0
    for target in targets:
        item = f"{target.workflow_id}:{target.revision}"
        if chunk and size + len(item) + 1 > MAX_PAYLOAD:
            yield ",".join(chunk)
            chunk, size = [], 0
        chunk.append(item)
        size += len(item) + 1
    if chunk:
        yield ",".join(chunk)


def parse_hints(payload: str) -> list[Hint]:
    hints = []
    for item in payload.split(","):
        workflow_id, sep, revision = item.rpartition(":")
        if sep and workflow_id and revision.isdigit():
            hints.append((workflow_id, int(revision)))
    return hints


class StepListener:
    """A daemon thread holding a LISTEN connection, reconnecting with backoff."""

    POLL_SECONDS = 0.5

    def __init__(
        self,
        url: str,
        callback: HintCallback,
        on_connected: Callable[[], None] | None = None,
        own_pids: Container[int] = (),
    ) -> None:
        self._own_pids = own_pids
        self._url = url
        self._callback = callback
        self._on_connected = on_connected
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="step-listener", daemon=True)
        self.connected = threading.Event()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(f"LISTEN {q.STEPS_CHANNEL}")
                    self.connected.set()
                    delay = 0.1
                    if self._on_connected is not None:
                        # Hints sent while no connection listened are lost: say so.
                        self._on_connected()
                    self._listen(conn)
            except psycopg.Error as exc:
                self.connected.clear()
                _log.warning("step listener lost its connection (%s); retrying", exc)
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)

    def _listen(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        while not self._stop.is_set():
            hints: list[Hint] = []
            arrived = list(conn.notifies(timeout=self.POLL_SECONDS, stop_after=1))
            if not arrived:
                continue
            # Coalesce whatever else has already arrived into the same delivery.
            arrived.extend(conn.notifies(timeout=0.001))
            for notify in arrived:
                if notify.pid not in self._own_pids:
                    hints.extend(parse_hints(notify.payload))
            if hints:
                self._callback(hints)
