"""Cross-replica hints through PostgreSQL LISTEN/NOTIFY: new revisions, new tasks.

The writer sends one NOTIFY per batch transaction listing ``workflow_id:revision`` pairs
(split only when the payload would exceed PostgreSQL's limit), and one listing the queues
of the tasks the batch scheduled, if any. A listener thread on each replica receives
them, coalesces whatever arrived together, and hands the batch to a callback. Hints can
be spurious (a row whose CAS failed) and can be lost (a dropped listener connection);
watchers and polls treat them as "go and read the table", and a lost hint only delays a
watcher or a poll on another replica until the next one or its periodic check.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import Generic, TypeVar

import psycopg

from statewrightd.store import sql_postgres as q
from statewrightd.store.records import InstanceRecord

_log = logging.getLogger(__name__)

# PostgreSQL refuses NOTIFY payloads of 8000 bytes or more.
MAX_PAYLOAD = 7900

Hint = tuple[str, int]
HintCallback = Callable[[list[Hint]], None]
H = TypeVar("H")


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


def task_queues_payload(queues: Iterable[str]) -> str:
    """Queue names are short (63 characters at most) and a batch has at most a few
    hundred saves, so one payload always fits."""
    return ",".join(sorted(set(queues)))[:MAX_PAYLOAD]


def parse_queues(payload: str) -> list[str]:
    return [q for q in payload.split(",") if q]


def parse_hints(payload: str) -> list[Hint]:
    hints = []
    for item in payload.split(","):
        workflow_id, sep, revision = item.rpartition(":")
        if sep and workflow_id and revision.isdigit():
            hints.append((workflow_id, int(revision)))
    return hints


@dataclass(eq=False)
class HintListener(Generic[H]):
    """A daemon thread holding a LISTEN connection on ``channel``, reconnecting with
    backoff, and handing each payload's hints (``parse``) to ``callback``.

    It listens only while ``wanted()`` says this replica has someone to tell (watchers,
    waiting polls): every replica NOTIFYs once per batch transaction, and at a few hundred
    transactions a second receiving them costs a listener a sizeable share of a core,
    which a replica without watchers would spend for nothing. Whenever listening
    (re)starts, ``on_connected`` runs, because hints sent while nobody listened are lost:
    watchers then re-read their history, so a step committed before LISTEN took effect is
    not missed either.
    """

    POLL_SECONDS = 0.5
    # How long a replica keeps listening after its last watcher left: watchers that come
    # and go quickly do not each pay for a LISTEN and a history re-read.
    LINGER_SECONDS = 10.0
    GATHER_SECONDS = 0.02

    url: str
    channel: str
    parse: Callable[[str], list[H]]
    callback: Callable[[list[H]], None]
    _: KW_ONLY
    on_connected: Callable[[], None] | None = None
    own_pids: Container[int] = ()
    wanted: Callable[[], bool] = lambda: True
    # Set while LISTEN is in effect.
    connected: threading.Event = field(init=False, default_factory=threading.Event)
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    _wake: threading.Event = field(init=False, default_factory=threading.Event)  # listen now
    _thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        name = f"{self.channel}-listener"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        """A first watcher (or poll) arrived: start listening now rather than at the next
        check."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        delay = 0.1
        while not self._stop.is_set():
            if not self._wait_until_wanted():
                return
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=5) as conn:
                    while self._wait_until_wanted():
                        conn.execute(f"LISTEN {self.channel}")
                        self.connected.set()
                        delay = 0.1
                        if self.on_connected is not None:
                            self.on_connected()
                        self._listen(conn)
                        conn.execute(f"UNLISTEN {self.channel}")
                        self.connected.clear()
                        # Notifications that arrived before UNLISTEN are of no use now.
                        for _ in conn.notifies(timeout=0):
                            pass
            except psycopg.Error as exc:
                self.connected.clear()
                _log.warning("%s listener lost its connection (%s); retrying", self.channel, exc)
                self._stop.wait(delay)
                delay = min(delay * 2, 5.0)

    def _wait_until_wanted(self) -> bool:
        """Block while no watcher needs hints; False once stopping."""
        while not self._stop.is_set():
            if self.wanted():
                return True
            self._wake.wait(self.POLL_SECONDS)
            self._wake.clear()
        return False

    def _listen(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        """Deliver hints until stopping or until nobody has watched for a while."""
        unwanted_since: float | None = None
        while not self._stop.is_set():
            if self.wanted():
                unwanted_since = None
            elif unwanted_since is None:
                unwanted_since = time.monotonic()
            elif time.monotonic() - unwanted_since > self.LINGER_SECONDS:
                return
            hints: list[H] = []
            arrived = list(conn.notifies(timeout=self.POLL_SECONDS, stop_after=1))
            if not arrived:
                continue
            # Every batch transaction of every replica, this one's included, NOTIFYs: read
            # them as they come and this thread wakes (and takes the interpreter lock) once
            # per batch, which cost a loaded server a sixth of its throughput as soon as
            # one watcher existed. Gathering for a moment first wakes it at most
            # 1/GATHER_SECONDS times a second, at the price of that much more delay for a
            # watcher of an instance that another replica steps.
            self._stop.wait(self.GATHER_SECONDS)
            arrived.extend(conn.notifies(timeout=0.001))
            for notify in arrived:
                if notify.pid not in self.own_pids:
                    hints.extend(self.parse(notify.payload))
            if hints:
                self.callback(hints)


def step_listener(
    url: str,
    callback: HintCallback,
    *,
    on_connected: Callable[[], None] | None = None,
    own_pids: Container[int] = (),
    wanted: Callable[[], bool] = lambda: True,
) -> HintListener[Hint]:
    """Hints of new revisions, for watchers."""
    return HintListener(
        url,
        q.STEPS_CHANNEL,
        parse_hints,
        callback,
        on_connected=on_connected,
        own_pids=own_pids,
        wanted=wanted,
    )


def task_listener(
    url: str,
    callback: Callable[[list[str]], None],
    *,
    own_pids: Container[int] = (),
    wanted: Callable[[], bool] = lambda: True,
) -> HintListener[str]:
    """Hints of newly scheduled tasks (their queues), for waiting polls."""
    return HintListener(
        url, q.TASKS_CHANNEL, parse_queues, callback, own_pids=own_pids, wanted=wanted
    )
