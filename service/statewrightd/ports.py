"""Listening ports: only a supervisor's own server processes share one.

The listeners (gRPC, HTTP and health) set SO_REUSEPORT only under a supervisor (``--processes
N``), where every process serves the same database. A server on its own binds its ports
exclusively, so that a second server started on a port another one holds, with a database
of its own, fails at start instead of taking half of the connections: the kernel refuses
the bind, and this module says in one line which port and, when it can be found, which
process holds it (``holder``).

A supervisor checks its ports the same way before it starts anything (``check_free``), and
holds a lock per port for as long as it runs (``PortLock``: an abstract Unix socket, which
the kernel releases with the process), so that two supervisors started at the same moment
cannot both pass the check.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from pathlib import Path
from typing import Final

from statewrightd.config import parse_listen

PROC: Final = Path("/proc")
_LISTEN_STATE: Final = "0A"
_SCAN_LIMIT: Final = 100_000  # file descriptors looked at while looking for a holder
_COMMAND_SHOWN: Final = 80


class PortTaken(OSError):
    """A port this server would listen on is held by another process."""


def taken(listen: str, flag: str, proc: Path = PROC) -> PortTaken:
    """The error that says ``listen`` (given with ``flag``) is held, and by whom."""
    _, port = parse_listen(listen)
    who = holder(port, proc)
    by = f" by {who}" if who else " by another process"
    return PortTaken(
        f"port {port} ({listen}) is already in use{by}: only the server processes of one "
        f"'statewrightd serve --processes N' share a port; stop the other server, or give "
        f"this one another address with {flag} HOST:PORT",
    )


def check_free(listen: str, flag: str, proc: Path = PROC) -> None:
    """Raise PortTaken if anything listens already on an address ``listen`` stands for."""
    host, port = parse_listen(listen)
    if port == 0:
        return
    try:
        addresses = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return  # the bind itself reports an address that does not resolve
    for family, kind, protocol, _, address in addresses:
        with socket.socket(family, kind, protocol) as probe:
            # Connections of an earlier server lingering in TIME_WAIT hold nothing.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise taken(listen, flag, proc) from None
                # Anything else (an address not on this host) is the bind's to report.


class PortLock:
    """Held by a supervisor for each port it serves, for as long as it runs."""

    def __init__(self) -> None:
        self._held: dict[int, socket.socket] = {}

    def take(self, listen: str, flag: str) -> None:
        _, port = parse_listen(listen)
        if port in self._held:
            return
        lock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            lock.bind(f"\0statewrightd-port-{port}")
        except OSError as exc:
            lock.close()
            if exc.errno == errno.EADDRINUSE:
                raise taken(listen, flag) from None
            return  # no abstract sockets here (not Linux): the check alone stands
        self._held[port] = lock

    def release(self) -> None:
        for lock in self._held.values():
            lock.close()
        self._held.clear()


def holder(port: int, proc: Path = PROC) -> str | None:
    """``pid N (command line)`` of a process listening on TCP ``port``, if one is found
    (another user's processes, or another container's, cannot be seen)."""
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return None
    looked = 0
    with contextlib.suppress(OSError):
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                descriptors = list((entry / "fd").iterdir())
            except OSError:
                continue  # gone, or not ours to look into
            for fd in descriptors:
                looked += 1
                if looked > _SCAN_LIMIT:
                    return None
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in inodes:
                        return f"pid {entry.name} ({_command(entry)})"
    return None


def _listening_inodes(port: int, proc: Path) -> set[str]:
    """``socket:[inode]`` of every socket listening on ``port``, IPv4 and IPv6."""
    found: set[str] = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in (proc / "net" / table).read_text().splitlines()[1:]:
                fields = line.split()
                if len(fields) < 10 or fields[3] != _LISTEN_STATE:
                    continue
                if int(fields[1].rpartition(":")[2], 16) == port:
                    found.add(f"socket:[{fields[9]}]")
    return found


def _command(entry: Path) -> str:
    try:
        words = entry.joinpath("cmdline").read_bytes().split(b"\0")
    except OSError:
        return "?"
    text = " ".join(w.decode("utf-8", "replace") for w in words if w)
    return text if len(text) <= _COMMAND_SHOWN else text[: _COMMAND_SHOWN - 3] + "..."
