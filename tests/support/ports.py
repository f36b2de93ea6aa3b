"""Ports for servers a test stops and starts again on the same address.

While such a server is down its port is free, and the kernel hands free ports of its
ephemeral range to whoever asks for any port (port 0): the client suites' fake servers,
which run beside these tests, could take it and answer in the restarted server's place.
A port below that range is handed out only to a program that names it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

LOWEST_PORT = 10_000  # below it: well-known services'
_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_low(range_file: Path = _RANGE) -> int:
    """The first port the kernel may hand out for port 0 (Linux's default if unreadable)."""
    try:
        low, _high = range_file.read_text().split()
        return int(low)
    except (OSError, ValueError):
        return 32_768


def stable_port(range_file: Path = _RANGE, tries: int = 200) -> int:
    """A free loopback port below the kernel's ephemeral range (any free port when the
    machine leaves no room below it)."""
    high = ephemeral_low(range_file)
    if high - LOWEST_PORT < 1_000:
        return _any_free_port()
    for _ in range(tries):
        port = random.randrange(LOWEST_PORT, high)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {LOWEST_PORT}-{high - 1} after {tries} tries")


def _any_free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
