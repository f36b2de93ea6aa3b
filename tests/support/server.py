"""Runs a real ``statewrightd serve`` process on a free port for end-to-end tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import grpc

_SERVING = re.compile(r"serving on (\S+):(\d+)")
STATEWRIGHTD = [sys.executable, "-m", "statewrightd.cli"]


class ServerProcess:
    """A server subprocess whose log is collected and whose port is read from its log."""

    def __init__(
        self,
        *,
        database_url: str,
        definitions: Path | None = None,
        grace: float = 5.0,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.args = [
            *STATEWRIGHTD,
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--database",
            database_url,
            "--grace",
            str(grace),
            *(["--definitions", str(definitions)] if definitions else []),
            # One server process unless a test asks for more: serve's default (one per
            # CPU) would make every test's outcome depend on the machine's cores.
            *([] if "--processes" in extra_args else ["--processes", "1"]),
            *extra_args,
        ]
        self.env = {**os.environ, **(env or {})}
        self.cwd = cwd
        self.port = 0
        self.lines: list[str] = []
        self._proc: subprocess.Popen[str] | None = None
        self._ready = threading.Event()

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def proc(self) -> subprocess.Popen[str]:
        assert self._proc is not None, "server not started"
        return self._proc

    def start(self, timeout: float = 30.0) -> ServerProcess:
        self._proc = subprocess.Popen(
            self.args,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=self.env,
            cwd=self.cwd,
        )
        threading.Thread(target=self._pump, daemon=True).start()
        if not self._ready.wait(timeout) or not self.port:
            self.kill()
            raise RuntimeError("server did not start:\n" + self.log())
        return self

    def _pump(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line.rstrip("\n"))
            match = _SERVING.search(line)
            if match and not self.port:
                self.port = int(match.group(2))
                self._ready.set()
        self._ready.set()

    def log(self) -> str:
        return "\n".join(self.lines)

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(self.target)

    def signal(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)

    def stop(self, timeout: float = 30.0) -> int:
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                return self.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        return self.proc.returncode

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.kill()


def wait_until(predicate: object, timeout: float, interval: float = 0.05) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
