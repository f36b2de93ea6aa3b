"""The restart tests' ports stay out of the kernel's ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.ports import LOWEST_PORT, ephemeral_low, stable_port


def test_the_range_is_read_from_the_kernel_file(tmp_path: Path) -> None:
    range_file = tmp_path / "range"
    range_file.write_text("40000\t60999\n")
    assert ephemeral_low(range_file) == 40_000


def test_an_unreadable_range_is_linux_default(tmp_path: Path) -> None:
    assert ephemeral_low(tmp_path / "absent") == 32_768
    garbled = tmp_path / "garbled"
    garbled.write_text("forty thousand\n")
    assert ephemeral_low(garbled) == 32_768


def test_a_stable_port_is_free_and_below_the_range(tmp_path: Path) -> None:
    range_file = tmp_path / "range"
    range_file.write_text("40000 60999\n")
    for _ in range(20):
        port = stable_port(range_file)
        assert LOWEST_PORT <= port < 40_000
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free: a server can take it


def test_no_room_below_the_range_takes_any_free_port(tmp_path: Path) -> None:
    range_file = tmp_path / "range"
    range_file.write_text(f"{LOWEST_PORT + 10} 60999\n")
    port = stable_port(range_file)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
