"""A server process that is one of several in a pod (``serve --processes N``).

The supervisor (statewrightd.supervisor) starts each server process with two pipes: the
process reports its own health on one (``status``), where it serves (``up``) and where its
metrics are (``metrics``); on the other it hears the pod's verdict (``pod``). Every
process answers health checks with the pod's verdict, because a kubelet probe reaches
whichever process the kernel hands its connection to: a probe must see the same answer
from any of them.

- liveness: SERVING while every process's EventLoop makes progress. One stalled process
  fails the pod's probe, and the kubelet restarts the container, as it did with one.
- readiness: SERVING while every process that serves is ready (database reachable and
  migrated) and none drains. A process that the supervisor is restarting does not count:
  it has no socket on the port, so no connection reaches it.

Lines are short ASCII, one message each; a write of one line to a pipe is atomic.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from statewrightd.config import Limits, ServerConfig
from statewrightd.health import (
    LIVENESS,
    NOT_SERVING,
    OVERALL,
    READINESS,
    SERVING,
    WORKFLOW_SERVICE,
    Health,
)

_log = logging.getLogger(__name__)

# "INDEX:READ_FD:WRITE_FD": set by the supervisor for each server process it starts.
WORKER_ENV = "STATEWRIGHT_WORKER"
# The process's configuration as JSON (not flags: the database URL may hold a password,
# which a command line would show to every user of the machine).
WORKER_CONFIG_ENV = "STATEWRIGHT_WORKER_CONFIG"


@dataclass(frozen=True, slots=True)
class ProcessStatus:
    alive: bool
    ready: bool
    draining: bool

    def line(self) -> str:
        return _flags_line("status", self.alive, self.ready, self.draining)


@dataclass(frozen=True, slots=True)
class PodVerdict:
    alive: bool
    ready: bool

    def line(self) -> str:
        return _flags_line("pod", self.alive, self.ready)


def parse_status(words: list[str]) -> ProcessStatus | None:
    flags = _flags(words, 3)
    return None if flags is None else ProcessStatus(*flags)


def parse_verdict(words: list[str]) -> PodVerdict | None:
    flags = _flags(words, 2)
    return None if flags is None else PodVerdict(*flags)


def _flags_line(word: str, *flags: bool) -> str:
    return " ".join([word, *(str(int(flag)) for flag in flags)])


def _flags(words: list[str], count: int) -> list[bool] | None:
    """``count`` flags, each written 0 or 1; None when the words are not that."""
    if len(words) != count or any(w not in ("0", "1") for w in words):
        return None
    return [w == "1" for w in words]


# The fields holding paths, which JSON carries as strings.
_PATHS = ("definitions_dir", "tls_cert", "tls_key", "tls_client_ca", "auth_config")


def config_to_env(config: ServerConfig) -> str:
    values = asdict(config)
    for name in _PATHS:
        value = getattr(config, name)
        values[name] = str(value) if value is not None else None
    return json.dumps(values)


def config_from_env(text: str) -> ServerConfig:
    values = json.loads(text)
    for name in _PATHS:
        value = values.get(name)
        values[name] = Path(value) if value else None
    values["limits"] = Limits(**values["limits"])
    values["http_allowed_hosts"] = tuple(values.get("http_allowed_hosts", ()))
    return ServerConfig(**values)


class SupervisorLink:
    """The server process's end of the two pipes to its supervisor."""

    def __init__(self, index: int, read_fd: int, write_fd: int) -> None:
        self.index = index
        self._read_fd = read_fd
        self._write_fd = write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._buffer = b""
        self._lost = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SupervisorLink | None:
        value = env.get(WORKER_ENV, "")
        if not value:
            return None
        index, read_fd, write_fd = (int(part) for part in value.split(":"))
        return cls(index, read_fd, write_fd)

    def send(self, line: str) -> None:
        if self._lost:
            return
        try:
            os.write(self._write_fd, line.encode("ascii") + b"\n")
        except BlockingIOError:
            # The supervisor reads every line at once; a full pipe means it is stuck, and a
            # later status line replaces this one anyway.
            _log.warning("supervisor pipe full: dropped %r", line)
        except OSError as exc:
            if exc.errno != errno.EPIPE:
                raise
            self._lost = True

    def listen(
        self,
        loop: asyncio.AbstractEventLoop,
        on_verdict: Callable[[PodVerdict], None],
        on_lost: Callable[[], None],
    ) -> None:
        """Read the supervisor's lines on ``loop``; ``on_lost`` when it has gone (EOF)."""

        def readable() -> None:
            read = read_lines(self._read_fd, self._buffer)
            if read is None:
                loop.remove_reader(self._read_fd)
                self._lost = True
                on_lost()
                return
            lines, self._buffer = read
            for raw in lines:
                words = raw.decode("ascii", "replace").split()
                verdict = parse_verdict(words[1:]) if words[:1] == ["pod"] else None
                if verdict is not None:
                    on_verdict(verdict)

        loop.add_reader(self._read_fd, readable)

    def close(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        if loop is not None:
            loop.remove_reader(self._read_fd)
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class PodHealth(Health):
    """Reports this process's health to the supervisor and serves the pod's verdict."""

    def __init__(self, link: SupervisorLink) -> None:
        super().__init__()
        self._link = link
        self._alive = True
        self._ready = False
        self._pod: PodVerdict | None = None
        self._published: tuple[bool, bool] | None = None
        self._lock = asyncio.Lock()

    async def starting(self) -> None:
        await super().starting()
        self._report()

    async def ready(self, ready: bool) -> None:
        if self._draining:
            return
        self._ready = ready
        self._report()
        await self._publish()

    async def alive(self, alive: bool) -> None:
        self._alive = alive
        self._report()
        await self._publish()

    async def draining(self) -> None:
        await super().draining()
        self._report()
        await self._publish()

    def verdict(self, verdict: PodVerdict) -> None:
        """From the supervisor's pipe (a plain callback on the asyncio loop)."""
        self._pod = verdict
        task = asyncio.get_running_loop().create_task(self._publish())
        task.add_done_callback(_retrieve)

    def supervisor_lost(self) -> None:
        # On its own, the process's health is its own again.
        self._pod = None

    def _report(self) -> None:
        self._link.send(ProcessStatus(self._alive, self._ready, self._draining).line())

    async def _publish(self) -> None:
        pod = self._pod
        alive = self._alive and (pod is None or pod.alive)
        ready = self._ready and not self._draining and (pod is None or pod.ready)
        async with self._lock:
            if self._published == (alive, ready):
                return
            self._published = (alive, ready)
            await self.servicer.set(LIVENESS, SERVING if alive else NOT_SERVING)
            for service in (READINESS, OVERALL, WORKFLOW_SERVICE):
                await self.servicer.set(service, SERVING if ready else NOT_SERVING)


def _retrieve(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.error("publishing the pod's health failed", exc_info=task.exception())


def read_lines(fd: int, buffer: bytes) -> tuple[list[bytes], bytes] | None:
    """The whole lines a pipe has now, read after ``buffer`` (what is left of a line
    before): the lines and what is left now; no lines when nothing is ready; None when the
    other end has gone (EOF)."""
    try:
        chunk = os.read(fd, 4096)
    except BlockingIOError:
        return [], buffer
    except OSError:
        chunk = b""
    if not chunk:
        return None
    *lines, rest = (buffer + chunk).split(b"\n")
    return lines, rest
