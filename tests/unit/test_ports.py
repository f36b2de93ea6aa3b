"""Ports held alone: the check, the supervisor's lock, and finding who holds a port."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from statewrightd import ports


def _listening(reuse_port: bool = False) -> socket.socket:
    sock = socket.socket()
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@pytest.mark.parametrize("reuse_port", [False, True])
def test_a_port_something_listens_on_is_taken_and_its_holder_named(reuse_port: bool) -> None:
    with _listening(reuse_port) as held:
        port = held.getsockname()[1]
        for listen in (f"127.0.0.1:{port}", f"0.0.0.0:{port}"):
            with pytest.raises(ports.PortTaken) as taken:
                ports.check_free(listen, "--listen")
            message = str(taken.value)
            assert message.startswith(f"port {port} ({listen}) is already in use by pid ")
            assert f"pid {os.getpid()} (" in message and "--listen HOST:PORT" in message
    ports.check_free(f"127.0.0.1:{port}", "--listen")  # free again once closed


def test_port_zero_and_a_free_port_pass() -> None:
    ports.check_free("127.0.0.1:0", "--listen")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    ports.check_free(f"127.0.0.1:{port}", "--http-listen")


def test_a_second_supervisors_lock_on_the_same_port_is_refused() -> None:
    first, second = ports.PortLock(), ports.PortLock()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    first.take(f"127.0.0.1:{port}", "--listen")
    try:
        with pytest.raises(ports.PortTaken, match=f"port {port} "):
            second.take(f"127.0.0.1:{port}", "--listen")
    finally:
        first.release()
    second.take(f"127.0.0.1:{port}", "--listen")  # released with the first
    second.release()


def test_no_holder_is_named_when_none_can_be_found() -> None:
    assert ports.holder(1, proc=Path("/nonexistent-proc")) is None
