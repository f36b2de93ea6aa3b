"""A fault-injecting TCP proxy in front of PostgreSQL, for end-to-end tests.

The server under test connects to the proxy (127.0.0.1, a free port) instead of the
database. The proxy parses the frontend protocol (the untyped startup packet, then typed
messages) so it can act on exact protocol events:

- ``arm_cut``: at the next COMMIT of a transaction that wrote a workflow step (a statement
  inserting into ``workflow_history``) the connection is cut, either right after the
  COMMIT was forwarded (PostgreSQL commits, the client never hears the answer) or right
  before (PostgreSQL never sees it and rolls back). On Citus the step's shard function
  call is its own commit, and the cut comes at that call. Other transactions (pings, reads,
  definition loads) are never cut. With ``refuse``, new connections are then accepted
  and closed at once until ``heal``; with ``drop_open`` as well, every other open
  connection is cut at the same moment: the database has gone dark.
- ``arm_dark_after``: the next such statement runs and its answer reaches the client; then
  the database goes dark, as ``go_dark`` makes it: what the client does next finds it down.
- ``stall``: every client-to-server message is held (nothing reaches PostgreSQL) until
  ``resume``. ``stall_step_commits`` holds only the COMMITs of step-writing transactions,
  so saves hang in flight while reads keep working.

Statements are tracked per connection through Parse/Bind, so a step statement that the
driver has prepared (and then only binds by name) is still recognised.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from dataclasses import dataclass, field
from types import TracebackType
from urllib.parse import urlsplit, urlunsplit

_STARTUP_V3 = 196608  # protocol 3.0; other untyped codes are SSL/GSS/cancel requests
_READY_FOR_QUERY = b"Z\x00\x00\x00\x05"  # the end of a statement's answer
STEP_MARKER = b"INSERT INTO workflow_history"
# On Citus a step is a call of a shard function on a connection in autocommit: the call
# commits on its own, and carries its statements (the history insert among them) as
# parameters.
SHARD_CALL = b"statewright_shard_rows"
SHARD_STEP_MARKER = b"INSERT INTO %2$s"
# A task's retry: one statement that is no step, and commits as it runs.
RETRY_MARKER = b"SET status = 'BACKOFF'"


def _cstrings(payload: bytes, count: int) -> list[bytes]:
    return payload.split(b"\x00", count)[:count]


def _is_end_of_transaction(query: bytes) -> str:
    word = query.strip().rstrip(b";").strip().upper()
    if word in (b"COMMIT", b"END"):
        return "commit"
    if word in (b"ROLLBACK", b"ABORT"):
        return "rollback"
    return ""


def _is_begin(query: bytes) -> bool:
    word = query.strip().upper()
    return word.startswith((b"BEGIN", b"START TRANSACTION"))


@dataclass
class _Connection:
    """What the proxy knows about one client connection."""

    client: socket.socket
    upstream: socket.socket
    statements: dict[bytes, bool] = field(default_factory=dict)  # name -> writes a step
    shard_calls: set[bytes] = field(default_factory=set)  # names of shard function calls
    wrote_step: bool = False
    # Inside a transaction block (BEGIN sent, no COMMIT or ROLLBACK yet): a statement sent
    # outside one commits as it runs.
    in_block: bool = False
    cut: bool = False
    dark_after_answer: bool = False  # go dark once this connection's answer is relayed
    # Set when the server has closed its side: after a cut that forwarded the COMMIT, the
    # server has then run everything it was sent.
    upstream_done: threading.Event = field(default_factory=threading.Event)

    def drop(self) -> None:
        self.cut = True
        _hang_up(self.upstream)
        _hang_up(self.client)


class PgProxy:
    """Forwards 127.0.0.1 connections to PostgreSQL; injects faults on request."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self._upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._cut_armed = False
        self._marker = STEP_MARKER
        self._forward_commit = True
        self._refuse_after_cut = False
        self._drop_open_on_cut = False
        self._dark_after = False
        self._refusing = False
        self._flowing = threading.Event()
        self._flowing.set()
        self._commits_flowing = threading.Event()
        self._commits_flowing.set()
        self._closing = threading.Event()
        self.cuts = 0
        self.refused = 0
        self.held = 0  # messages that waited while stalled
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._connections: list[_Connection] = []
        self._spawn(self._accept_loop)

    @classmethod
    def for_url(cls, database_url: str) -> PgProxy:
        parts = urlsplit(database_url)
        assert parts.hostname == "127.0.0.1" and parts.port is not None, database_url
        return cls(parts.hostname, parts.port)

    def url_for(self, database_url: str) -> str:
        """``database_url`` rerouted through the proxy (plain startup: no SSL/GSS)."""
        parts = urlsplit(database_url)
        user = f"{parts.username}@" if parts.username else ""
        netloc = f"{user}127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc, query="sslmode=disable&gssencmode=disable"))

    # -- faults ------------------------------------------------------------------------------

    def arm_cut(
        self,
        *,
        forward_commit: bool = True,
        refuse: bool = False,
        drop_open: bool = False,
        marker: bytes = STEP_MARKER,
    ) -> None:
        """``marker``: the statement text that makes a transaction's COMMIT the one cut
        (a step's history insert unless told otherwise). A statement with the marker sent
        outside a transaction block commits as it runs: it is the one cut then, and
        ``forward_commit`` says whether it is forwarded first."""
        with self._lock:
            self._cut_armed = True
            self._marker = marker
            self._forward_commit = forward_commit
            self._refuse_after_cut = refuse
            self._drop_open_on_cut = drop_open
            self._dark_after = False

    def arm_dark_after(self, *, marker: bytes = STEP_MARKER) -> None:
        """The next statement that commits with ``marker`` (as ``arm_cut`` finds it) runs
        and is answered; then the database goes dark."""
        with self._lock:
            self._cut_armed = True
            self._marker = marker
            self._dark_after = True

    def heal(self) -> None:
        """Accept connections again, disarm any pending cut, and mark steps again."""
        with self._lock:
            self._cut_armed = False
            self._marker = STEP_MARKER
            self._dark_after = False
            self._refusing = False
            self._refuse_after_cut = False
            self._drop_open_on_cut = False

    def stall(self) -> None:
        self._flowing.clear()

    def go_dark(self) -> None:
        """As if the database stopped: open connections drop, new ones are refused."""
        with self._lock:
            self._refusing = True
            open_connections = list(self._connections)
        for conn in open_connections:
            conn.drop()

    def stall_step_commits(self) -> None:
        self._commits_flowing.clear()

    def resume(self) -> None:
        self._flowing.set()
        self._commits_flowing.set()

    def _wait(self, event: threading.Event) -> None:
        if not event.is_set():
            self.held += 1
            while not event.wait(0.1):
                if self._closing.is_set():
                    raise OSError("proxy closing")

    @property
    def refusing(self) -> bool:
        with self._lock:
            return self._refusing

    # -- plumbing ----------------------------------------------------------------------------

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
                refuse = self._refusing
                if refuse:
                    self.refused += 1
            if refuse:
                _hang_up(client)  # the database "went dark": accept and hang up at once
                continue
            try:
                upstream = socket.create_connection(self._upstream, timeout=5)
            except OSError:
                _hang_up(client)
                continue
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            conn = _Connection(client, upstream)
            with self._lock:
                self._connections.append(conn)
            self._spawn(self._client_to_server, client, upstream, conn)
            self._spawn(self._server_to_client, upstream, client, conn)

    def _forward(self, upstream: socket.socket, message: bytes) -> None:
        self._wait(self._flowing)
        upstream.sendall(message)

    def _take_cut(self, conn: _Connection) -> str:
        with self._lock:
            if not self._cut_armed:
                return ""
            self._cut_armed = False
            self.cuts += 1
            if self._dark_after:
                self._dark_after = False
                conn.dark_after_answer = True
                return ""  # forwarded, and answered
            # From now on nothing the server says reaches this client: the COMMIT reply
            # is lost even if the server answers before the hang-up.
            conn.cut = True
            if self._refuse_after_cut:
                self._refusing = True
            if self._drop_open_on_cut:
                for other in self._connections:
                    if other is not conn:
                        other.drop()
            return "after" if self._forward_commit else "before"

    def _client_to_server(
        self, client: socket.socket, upstream: socket.socket, conn: _Connection
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
                        self._forward(upstream, buffer[:length])
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
                        self._forward(upstream, message)
                        if kind == b"S":
                            # The extended-protocol COMMIT is complete: cut now.
                            return self._let_server_finish(conn)
                        continue
                    cut = ""
                    if self._observe(kind, message[5:], conn):
                        # A step's COMMIT: held while stalled, then perhaps cut.
                        self._wait(self._commits_flowing)
                        cut = self._take_cut(conn)
                    if cut == "before":
                        return  # never forwarded: the server sees only end-of-file
                    if cut == "after":
                        self._forward(upstream, message)
                        if kind == b"Q":
                            return self._let_server_finish(conn)
                        cut_at_sync = True  # Parse/Bind/Execute/Sync: forward up to Sync
                        continue
                    self._forward(upstream, message)
        except OSError:
            pass
        finally:
            _hang_up(upstream)
            _hang_up(client)

    def _observe(self, kind: bytes, payload: bytes, conn: _Connection) -> bool:
        """Track step-writing statements; True when this message commits a step."""
        query: bytes | None = None
        marked = False
        if kind == b"Q":
            query = _cstrings(payload, 1)[0]
            marked = self._marker in query
        elif kind == b"P":
            name, query = _cstrings(payload, 2)
            conn.statements[name] = self._marker in query
            if SHARD_CALL in query:
                conn.shard_calls.add(name)
            else:
                conn.shard_calls.discard(name)
        elif kind == b"B":
            _portal, statement = _cstrings(payload, 2)
            marked = bool(conn.statements.get(statement))
            if statement in conn.shard_calls and SHARD_STEP_MARKER in payload:
                return True  # a step's shard call: it commits as it runs
        if marked:
            if not conn.in_block:
                return True  # it commits as it runs: this is its COMMIT
            conn.wrote_step = True
        if query is None:
            return False
        if _is_begin(query):
            conn.in_block = True
            return False
        end = _is_end_of_transaction(query)
        if not end:
            return False
        conn.in_block = False
        wrote, conn.wrote_step = conn.wrote_step, False
        return end == "commit" and wrote

    @staticmethod
    def _let_server_finish(conn: _Connection) -> None:
        """End of input for the server, which then runs what it was sent (a pipeline's
        statements and its COMMIT, which a hang-up at once could cut short: the server
        may drop what it had not read yet) and closes; only then does the client learn."""
        with contextlib.suppress(OSError):
            conn.upstream.shutdown(socket.SHUT_WR)
        conn.upstream_done.wait(timeout=10)

    def _server_to_client(
        self, upstream: socket.socket, client: socket.socket, conn: _Connection
    ) -> None:
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if not conn.cut:
                    client.sendall(data)
                if conn.dark_after_answer and _READY_FOR_QUERY in data:
                    conn.dark_after_answer = False
                    self.go_dark()
        except OSError:
            pass
        finally:
            conn.upstream_done.set()
            _hang_up(client)

    def close(self) -> None:
        self._closing.set()
        self._flowing.set()
        self._commits_flowing.set()
        self._listener.close()
        for sock in self._sockets:
            _hang_up(sock)
        for thread in self._threads:
            thread.join(timeout=2)

    def __enter__(self) -> PgProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _hang_up(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
