"""Losing the connection around COMMIT, with a real fault.

A small TCP proxy sits between the repository and PostgreSQL. It parses the frontend
protocol (untyped startup messages, then typed messages) and, once armed, cuts the
connection at the first COMMIT: either right after forwarding it (the server commits,
the client never hears back) or right before (the server never sees it and rolls back).
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import socket
import struct
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit, urlunsplit

import pytest

from statewrightd.errors import (
    Conflict,
    OutcomeUnknown,
    StorageUnavailable,
)
from statewrightd.store import (
    Create,
    HistoryRecord,
    InstanceRecord,
    Repository,
    Save,
    open_repository,
)
from statewrightd.store.postgres import PostgresRepository

_STARTUP_V3 = 196608  # protocol 3.0; other untyped codes are SSL/GSS/cancel requests


class Cut(enum.Enum):
    NONE = "none"
    AFTER_COMMIT = "after"
    BEFORE_COMMIT = "before"


def _is_commit(kind: bytes, payload: bytes) -> bool:
    if kind == b"Q":
        query = payload.split(b"\x00", 1)[0]
    elif kind == b"P":
        # Parse: statement name, NUL, query text, NUL, parameter types.
        parts = payload.split(b"\x00", 2)
        query = parts[1] if len(parts) > 1 else b""
    else:
        return False
    return query.strip().upper().rstrip(b";").strip() in (b"COMMIT", b"END")


class CommitCuttingProxy:
    """Forwards 127.0.0.1 traffic to PostgreSQL; can cut one connection at COMMIT."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._mode = Cut.NONE
        self.refuse_after_cut = False
        self.cuts = 0
        self._closing = threading.Event()
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._spawn(self._accept_loop)

    def arm(self, mode: Cut, *, refuse_after_cut: bool = False) -> None:
        with self._lock:
            self._mode = mode
            self.refuse_after_cut = refuse_after_cut

    def _spawn(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        thread.start()
        self._threads.append(thread)

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                refuse = self.refuse_after_cut and self.cuts > 0
            if refuse:
                # The database "went dark": accept and hang up at once.
                client.close()
                continue
            upstream = socket.create_connection(self._upstream, timeout=5)
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            state = {"cut": False}
            self._spawn(self._client_to_server, client, upstream, state)
            self._spawn(self._server_to_client, upstream, client, state)

    def _client_to_server(
        self, client: socket.socket, upstream: socket.socket, state: dict[str, bool]
    ) -> None:
        buffer = b""
        startup_done = False
        cut_at_sync = False
        try:
            while True:
                data = client.recv(65536)
                if not data:
                    break
                buffer += data
                while True:
                    if not startup_done:
                        if len(buffer) < 8:
                            break
                        (length,) = struct.unpack("!I", buffer[:4])
                        if len(buffer) < length:
                            break
                        (code,) = struct.unpack("!I", buffer[4:8])
                        startup_done = code == _STARTUP_V3
                        upstream.sendall(buffer[:length])
                        buffer = buffer[length:]
                        continue
                    if len(buffer) < 5:
                        break
                    kind = buffer[:1]
                    (length,) = struct.unpack("!I", buffer[1:5])
                    if len(buffer) < 1 + length:
                        break
                    message, buffer = buffer[: 1 + length], buffer[1 + length :]
                    if cut_at_sync:
                        upstream.sendall(message)
                        if kind == b"S":
                            return  # the extended-protocol COMMIT is complete: cut now
                        continue
                    if _is_commit(kind, message[5:]):
                        mode = self._take_cut(state)
                        if mode is Cut.BEFORE_COMMIT:
                            return  # never forwarded: the server sees only end-of-file
                        if mode is Cut.AFTER_COMMIT:
                            upstream.sendall(message)
                            if kind == b"Q":
                                return
                            cut_at_sync = True  # Parse/Bind/Execute/Sync: forward to Sync
                            continue
                    upstream.sendall(message)
        except OSError:
            pass
        finally:
            _hang_up(upstream)
            _hang_up(client)

    def _take_cut(self, state: dict[str, bool]) -> Cut:
        with self._lock:
            mode = self._mode
            if mode is not Cut.NONE:
                # From now on nothing the server says reaches this client, so the
                # COMMIT reply is lost even if the server answers before we hang up.
                state["cut"] = True
                self._mode = Cut.NONE
                self.cuts += 1
            return mode

    def _server_to_client(
        self, upstream: socket.socket, client: socket.socket, state: dict[str, bool]
    ) -> None:
        try:
            while True:
                data = upstream.recv(65536)
                if not data or state["cut"]:
                    break
                client.sendall(data)
        except OSError:
            pass
        finally:
            _hang_up(client)

    def close(self) -> None:
        self._closing.set()
        self._listener.close()
        for sock in self._sockets:
            _hang_up(sock)
        for thread in self._threads:
            thread.join(timeout=2)


def _hang_up(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[CommitCuttingProxy]:
    parts = urlsplit(postgres_url)
    assert parts.hostname == "127.0.0.1" and parts.port is not None
    p = CommitCuttingProxy(parts.hostname, parts.port)
    yield p
    p.close()


def _via(proxy: CommitCuttingProxy, url: str) -> str:
    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    netloc = f"{user}127.0.0.1:{proxy.port}"
    # Plain startup: no SSL or GSS negotiation in front of the messages we parse.
    return urlunsplit(parts._replace(netloc=netloc, query="sslmode=disable&gssencmode=disable"))


@pytest.fixture
def proxied(proxy: CommitCuttingProxy, postgres_url: str) -> Iterator[Repository]:
    repo = open_repository(_via(proxy, postgres_url), migrate=False, pool_size=2)
    yield repo
    repo.close()


@pytest.fixture
def direct(postgres_url: str) -> Iterator[Repository]:
    repo = open_repository(postgres_url, migrate=False, pool_size=2)
    yield repo
    repo.close()


T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _created(repo: Repository, wid: str) -> InstanceRecord:
    rec = InstanceRecord(wid, "def", 1, "start", "RUNNING", {"k": 0}, 1, None, T0, T0)
    return repo.create(Create(rec, _history(rec)))


def _history(rec: InstanceRecord) -> HistoryRecord:
    return HistoryRecord(
        rec.workflow_id,
        rec.revision,
        "go",
        [{"from": "start", "to": rec.state, "event": "go"}],
        rec.state,
        rec.status,
        rec.context,
        None,
        rec.update_time,
    )


def _step(rec: InstanceRecord, state: str = "next") -> Save:
    new = dataclasses.replace(
        rec,
        revision=rec.revision + 1,
        state=state,
        context={"k": rec.revision},
        update_time=rec.update_time + timedelta(seconds=1),
    )
    return Save(new, rec.revision, _history(new))


def test_cut_after_commit_is_reconciled_as_success(
    proxy: CommitCuttingProxy, proxied: Repository, direct: Repository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm(Cut.AFTER_COMMIT)
    op = _step(rec)
    assert proxied.save(op) == 2
    assert proxy.cuts == 1, "the fault was not injected"
    assert direct.load("w") == op.new
    assert [h.revision for h in direct.history_after("w", 0, 10)] == [1, 2]
    # The repository keeps working through the proxy after the fault.
    assert proxied.save(_step(op.new)) == 3


def test_cut_before_commit_is_a_known_failure(
    proxy: CommitCuttingProxy, proxied: Repository, direct: Repository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm(Cut.BEFORE_COMMIT)
    with pytest.raises(StorageUnavailable) as failure:
        proxied.save(_step(rec))
    assert not isinstance(failure.value, OutcomeUnknown)
    assert proxy.cuts == 1
    assert direct.load("w") == rec
    assert len(direct.history_after("w", 0, 10)) == 1
    # Nothing was written, so the same step can be retried.
    assert proxied.save(_step(rec)) == 2


def test_unreadable_outcome_is_unknown_until_resolved(
    proxy: CommitCuttingProxy, proxied: Repository, direct: Repository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm(Cut.AFTER_COMMIT, refuse_after_cut=True)
    op = _step(rec)
    with pytest.raises(OutcomeUnknown) as caught:
        proxied.save(op)
    # A later re-check (the runtime's background resolver) settles it, once the server
    # process that ran the lost COMMIT is gone.
    pids = [int(caught.value.metadata["backend_pid"])]
    assert direct.resolve_outcome([op], backend_pids=pids) == [op.new]


def test_batch_cut_after_commit_keeps_per_row_results(
    proxy: CommitCuttingProxy, proxied: Repository, direct: Repository
) -> None:
    a, b, c = (_created(proxied, w) for w in "abc")
    proxied.save(_step(c))
    proxy.arm(Cut.AFTER_COMMIT)
    ops = [_step(a), _step(b), _step(c)]
    results = proxied.apply_batch(ops)
    assert proxy.cuts == 1
    assert results[:2] == [ops[0].new, ops[1].new]
    assert isinstance(results[2], Conflict) and results[2].actual_revision == 2
    assert direct.load("a").revision == 2 and direct.load("b").revision == 2


def test_batch_cut_before_commit_fails_only_the_written_rows(
    proxy: CommitCuttingProxy, proxied: Repository, direct: Repository
) -> None:
    a, b = (_created(proxied, w) for w in "ab")
    proxied.save(_step(b))
    proxy.arm(Cut.BEFORE_COMMIT)
    results = proxied.apply_batch([_step(a), _step(b)])
    assert isinstance(results[0], StorageUnavailable)
    assert not isinstance(results[0], OutcomeUnknown)
    assert isinstance(results[1], Conflict)
    assert direct.load("a") == a


def test_resolve_outcome_classifies_each_operation(direct: Repository) -> None:
    rec = _created(direct, "w")
    never_sent = _step(rec, state="never")
    assert isinstance(direct.resolve_outcome([never_sent])[0], StorageUnavailable)
    winner = _step(rec, state="winner")
    direct.save(winner)
    # Someone else's step owns revision 2: ours cannot have committed.
    lost = direct.resolve_outcome([never_sent])[0]
    assert isinstance(lost, Conflict) and lost.actual_revision == 2
    assert direct.resolve_outcome([winner]) == [winner.new]
    # Far in the future with no witness row: nothing can be said.
    ahead = _step(dataclasses.replace(rec, revision=9))
    assert isinstance(direct.resolve_outcome([ahead])[0], OutcomeUnknown)


def test_unreachable_database_is_storage_unavailable() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    repo = PostgresRepository(
        f"postgresql://postgres@127.0.0.1:{port}/postgres", pool_timeout=1.0, connect_timeout=1
    )
    try:
        with pytest.raises(StorageUnavailable):
            repo.ping()
        with pytest.raises(StorageUnavailable):
            repo.load("w")
    finally:
        repo.close()


def test_proxy_detects_commit_in_both_protocols() -> None:
    assert _is_commit(b"Q", b"COMMIT\x00")
    assert _is_commit(b"P", b"\x00commit\x00\x00\x00")
    assert not _is_commit(b"Q", b"SELECT 'COMMIT'\x00")
    assert not _is_commit(b"D", b"COMMIT\x00")
