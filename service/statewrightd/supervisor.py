"""``statewrightd serve --processes N``: N server processes on one port, one supervisor.

One Python process runs on one core at most (its interpreter lock), so a pod with several
cores runs several server processes. Each is a whole server (its own EventLoop, writer
and connection pool) listening on the same port with SO_REUSEPORT: the kernel hands each
new connection to one of them. Correctness needs nothing shared between them: every save
is a compare-and-swap in PostgreSQL, as between pods.

The supervisor is the pod's PID 1 and serves no RPC. It
- starts the processes (fresh interpreters, never forks of itself: gRPC state must not be
  forked), and fails the start, exit 2, if one cannot start, as one process would;
- restarts a process that exits on its own, with a growing delay while it keeps failing;
- tells every process the pod's health (statewrightd.pod), so a probe sees one answer;
- serves ``/metrics`` on ``--metrics-listen``: every process's metrics, each series with
  a ``process`` label, plus its own ``statewright_processes`` and restarts;
- on SIGTERM or SIGINT forwards SIGTERM to every process and exits 0 once all of them
  have drained and exited 0 (1 otherwise); a second signal is forwarded too, which ends
  the processes at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import socket
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from statewrightd import __version__, ports
from statewrightd.config import ServerConfig, parse_listen
from statewrightd.observability import logs
from statewrightd.pod import (
    WORKER_CONFIG_ENV,
    WORKER_ENV,
    PodVerdict,
    ProcessStatus,
    config_to_env,
    parse_status,
    read_lines,
)
from statewrightd.tuning import loop_factory

_log = logging.getLogger("statewrightd.supervisor")

CGROUP_ROOT = Path("/sys/fs/cgroup")
# A process that ran this long before it exited is restarted at once; one that exits
# sooner waits RESTART_DELAY, doubled per such exit in a row, up to RESTART_DELAY_MAX.
STABLE_SECONDS = 60.0
RESTART_DELAY = 0.5
RESTART_DELAY_MAX = 30.0
# After the grace period, how long the processes get to close their stores and exit.
EXIT_MARGIN = 15.0
SCRAPE_TIMEOUT = 2.0
# A port held at start is looked at again this often, for the grace period and this long.
PORT_WAIT_STEP = 0.25
PORT_WAIT_MARGIN = 2.0


def worker_command() -> list[str]:
    """How a server process is started (bench/patched_server.py replaces it)."""
    return [
        sys.executable,
        "-c",
        "import sys; from statewrightd.server import worker_main; sys.exit(worker_main())",
    ]


# -- how many -----------------------------------------------------------------------------


def cgroup_cpus(root: Path = CGROUP_ROOT, self_cgroup: Path = Path("/proc/self/cgroup")) -> float:
    """The CPU quota of this process's cgroup in cores (the tightest of its ancestors'),
    cgroup v2 or v1; ``math.inf`` when there is none or it cannot be read."""
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        lines = []
    limits: list[float] = []
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        relative = path.lstrip("/")
        if hierarchy == "0" and not controllers:
            limits += _v2_limits(root, relative)
        elif "cpu" in controllers.split(","):
            limits += _v1_limits(root / controllers, relative)
    return min(limits, default=math.inf)


def _ancestors(base: Path, relative: str) -> Iterator[Path]:
    # Inside a container the cgroup namespace makes its own cgroup the root; outside,
    # /proc/self/cgroup names the path from the hierarchy's root.
    directory = base / relative if relative else base
    while True:
        yield directory
        if directory == base or base not in directory.parents:
            return
        directory = directory.parent


def _v2_limits(root: Path, relative: str) -> list[float]:
    limits = []
    for directory in _ancestors(root, relative):
        with contextlib.suppress(OSError, ValueError):
            quota, _, period = (directory / "cpu.max").read_text().strip().partition(" ")
            if quota != "max" and float(period) > 0:
                limits.append(float(quota) / float(period))
    return limits


def _v1_limits(base: Path, relative: str) -> list[float]:
    limits = []
    for directory in _ancestors(base, relative):
        with contextlib.suppress(OSError, ValueError):
            quota = float((directory / "cpu.cfs_quota_us").read_text())
            period = float((directory / "cpu.cfs_period_us").read_text())
            if quota > 0 and period > 0:
                limits.append(quota / period)
    return limits


def default_processes(quota: float | None = None) -> int:
    """One process per core the container may use: its CPU quota rounded up (1.5 cores
    run 2 processes, which share the quota), at most the CPUs it may run on."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = cgroup_cpus() if quota is None else quota
    if math.isfinite(quota):
        cpus = min(cpus, math.ceil(quota - 1e-9))
    return max(1, cpus)


def process_count(config: ServerConfig) -> tuple[int, str]:
    """How many server processes this configuration runs, and why."""
    if config.processes is not None:
        return config.processes, "--processes"
    if config.database_url.startswith("sqlite:"):
        return 1, "SQLite is served by one process"
    return default_processes(), "one per CPU of the container"


def run(config: ServerConfig, count: int, why: str) -> int:
    """Run ``count`` (> 1) server processes under this supervisor; the exit code."""
    logs.configure(config.log_level, config.log_format, "supervisor")
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(Supervisor(config, count, why).run())
    except OSError as exc:
        _log.error("statewrightd cannot start: %s", exc)
        return 2


# -- the supervisor -------------------------------------------------------------------------


@dataclass
class Child:
    index: int
    process: asyncio.subprocess.Process | None = None
    to_child: int = -1  # the supervisor's ends of the two pipes
    from_child: int = -1
    buffer: bytes = b""
    up: bool = False
    port: int = 0
    metrics_port: int | None = None
    status: ProcessStatus | None = None
    started: float = 0.0
    quick_exits: int = 0
    exits: list[int] = field(default_factory=list)


class Supervisor:
    def __init__(self, config: ServerConfig, count: int, why: str = "") -> None:
        self.config = config
        self.count = count
        self.why = why
        self.children = [Child(index) for index in range(count)]
        self.restarts = 0
        self.draining = False
        self._stop = asyncio.Event()
        self._changed = asyncio.Event()
        self._verdict: PodVerdict | None = None
        self._child_config = config
        self._reserved: list[socket.socket] = []
        self._reserved_listens: set[str] = set()
        self._locks = ports.PortLock()
        self._metrics: tuple[WSGIServer, threading.Thread] | None = None
        self._started = False
        self._watchers: set[asyncio.Task[None]] = set()

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        listen = await self._claim_port(self.config.listen, "--listen")
        http_listen = self.config.http_listen
        if http_listen is not None:
            http_listen = await self._claim_port(http_listen, "--http-listen")
        health_listen = self.config.health_listen
        if health_listen is not None:
            health_listen = await self._claim_port(health_listen, "--health-listen")
        self._child_config = replace(
            self.config,
            listen=listen,
            http_listen=http_listen,
            health_listen=health_listen,
            processes=1,
            # Each process's own endpoint, on loopback only: the supervisor's is the pod's.
            metrics_listen="127.0.0.1:0" if self.config.metrics_listen else None,
        )
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_signal)
        _log.info("starting %d server processes on %s (%s)", self.count, listen, self.why)
        for child in self.children:
            await self._spawn(child)
        if not await self._all_up():
            if self._stop.is_set():
                return await self._shutdown()
            _log.error("a server process could not start: stopping the others")
            await self._shutdown()
            return 2
        self._started = True
        if self.config.metrics_listen:
            self._serve_metrics(self.config.metrics_listen)
        _log.info("%d server processes up", self.count)
        # The pod's one "serving on" line (the processes say "listening on"): tests and
        # scripts read it to find the port when listening on port 0.
        _log.info("statewrightd %s serving on %s", __version__, listen)
        await self._stop.wait()
        return await self._shutdown()

    # -- processes --

    async def _claim_port(self, listen: str, flag: str) -> str:
        """The address every process listens on, this supervisor's alone: no other server
        may hold the port, nor claim it while this one runs (statewrightd.ports).

        A port still held is waited for, a grace period and a margin at most: the processes
        of a supervisor that was killed drain for that long before they let it go."""
        listen = self._reserve_port(listen)
        deadline = time.monotonic() + self.config.grace_seconds + PORT_WAIT_MARGIN
        waiting = False
        while True:
            try:
                self._locks.take(listen, flag)
                if listen not in self._reserved_listens:
                    ports.check_free(listen, flag)
                return listen
            except ports.PortTaken as exc:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise
                if not waiting:
                    _log.warning("%s; waiting up to %.0fs for it to be released", exc, left)
                    waiting = True
                await asyncio.sleep(min(PORT_WAIT_STEP, left))

    def _reserve_port(self, listen: str) -> str:
        """Port 0 becomes one free port that every process binds (and rebinds on restart):
        the supervisor holds it bound, never listening, so nothing else takes it."""
        host, port = parse_listen(listen)
        if port != 0:
            return listen
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, 0))
        self._reserved.append(sock)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        reserved = f"{shown}:{sock.getsockname()[1]}"
        self._reserved_listens.add(reserved)
        return reserved

    async def _spawn(self, child: Child) -> None:
        down_r, down_w = os.pipe()  # supervisor -> process
        up_r, up_w = os.pipe()  # process -> supervisor
        env = {
            **os.environ,
            WORKER_ENV: f"{child.index}:{down_r}:{up_w}",
            WORKER_CONFIG_ENV: config_to_env(self._child_config),
        }
        try:
            # A session of its own: a terminal's Ctrl-C reaches the supervisor only, which
            # forwards one SIGTERM (a second signal would end the process at once).
            child.process = await asyncio.create_subprocess_exec(
                *worker_command(), env=env, pass_fds=(down_r, up_w), start_new_session=True
            )
        finally:
            os.close(down_r)
            os.close(up_w)
        child.to_child, child.from_child = down_w, up_r
        _log.info("server process %d started: pid %d", child.index, child.process.pid)
        os.set_blocking(up_r, False)
        os.set_blocking(down_w, False)
        child.buffer, child.up, child.status, child.metrics_port = b"", False, None, None
        child.started = time.monotonic()
        asyncio.get_running_loop().add_reader(up_r, self._readable, child)
        task = asyncio.create_task(self._watch(child, child.process))
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    def _readable(self, child: Child) -> None:
        read = read_lines(child.from_child, child.buffer)
        if read is None:
            asyncio.get_running_loop().remove_reader(child.from_child)
            return
        lines, child.buffer = read
        for raw in lines:
            words = raw.decode("ascii", "replace").split()
            if words[:1] == ["up"] and len(words) == 2 and words[1].isdigit():
                child.up, child.port = True, int(words[1])
            elif words[:1] == ["metrics"] and len(words) == 2 and words[1].isdigit():
                child.metrics_port = int(words[1])
            elif words[:1] == ["status"]:
                child.status = parse_status(words[1:]) or child.status
        self._publish()

    async def _watch(self, child: Child, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        child.exits.append(code)
        loop = asyncio.get_running_loop()
        loop.remove_reader(child.from_child)
        for fd in (child.to_child, child.from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        child.up, child.status = False, None
        self._changed.set()
        self._publish()
        if self.draining or not self._started:
            return  # a failed first start is the start's to report (_all_up)
        lived = time.monotonic() - child.started
        child.quick_exits = 0 if lived >= STABLE_SECONDS else child.quick_exits + 1
        delay = 0.0 if not child.quick_exits else RESTART_DELAY * 2 ** (child.quick_exits - 1)
        delay = min(RESTART_DELAY_MAX, delay)
        _log.error(
            "server process %d (pid %d) exited with %d after %.0fs: restarting it in %.1fs",
            child.index,
            process.pid,
            code,
            lived,
            delay,
        )
        await asyncio.sleep(delay)
        if self.draining:
            return
        self.restarts += 1
        await self._spawn(child)

    async def _all_up(self) -> bool:
        children = self.children
        while True:
            if all(c.up for c in children):
                return True
            if any(c.process is not None and c.process.returncode is not None for c in children):
                return False
            if self._stop.is_set():
                return False
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), 0.2)

    def _publish(self) -> None:
        """The pod's health, from every process that serves, to every process."""
        self._changed.set()
        serving = [c for c in self.children if c.up and c.status is not None]
        verdict = PodVerdict(
            alive=all(c.status.alive for c in serving if c.status is not None),
            ready=bool(serving)
            and all(c.status.ready and not c.status.draining for c in serving if c.status),
        )
        if verdict == self._verdict:
            return
        self._verdict = verdict
        line = verdict.line().encode("ascii") + b"\n"
        for child in self.children:
            if child.process is not None and child.process.returncode is None:
                with contextlib.suppress(OSError):
                    os.write(child.to_child, line)

    # -- stopping --

    def _on_signal(self) -> None:
        if not self._stop.is_set():
            # The first SIGTERM to the processes comes from _shutdown.
            _log.info("draining: SIGTERM to every server process")
            self.draining = True
            self._stop.set()
            return
        _log.warning("second signal: the server processes exit without draining")
        for child in self.children:
            if child.process is not None and child.process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)

    async def _shutdown(self) -> int:
        self.draining = True
        # The exit code is the drain's: a process that had exited before it began (one
        # waiting for its restart) was already reported when it exited.
        running = [
            c.process
            for c in self.children
            if c.process is not None and c.process.returncode is None
        ]
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        limit = self.config.grace_seconds + EXIT_MARGIN
        try:
            await asyncio.wait_for(asyncio.gather(*(p.wait() for p in running)), limit)
        except TimeoutError:
            _log.error("server processes still running %.0fs after SIGTERM: killing them", limit)
            for process in running:
                if process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        process.kill()
            await asyncio.gather(*(p.wait() for p in running))
        for task in list(self._watchers):
            task.cancel()
        self._close_metrics()
        for sock in self._reserved:
            sock.close()
        self._locks.release()
        codes = [p.returncode for p in running]
        if any(code != 0 for code in codes):
            _log.error("stopped; server process exit codes %s", codes)
            return 1
        _log.info("every server process drained")
        _log.info("stopped")
        return 0

    # -- metrics --

    def _serve_metrics(self, listen: str) -> None:
        registry = CollectorRegistry(auto_describe=False)
        registry.register(_PodCollector(self))
        host, port = parse_listen(listen)
        server, thread = start_http_server(port, addr=host, registry=registry)
        self._metrics = (server, thread)
        _log.info("metrics on http://%s:%d/metrics", host, server.server_port)

    def _close_metrics(self) -> None:
        if self._metrics is not None:
            server, thread = self._metrics
            server.shutdown()
            server.server_close()
            thread.join(5)
            self._metrics = None


class _PodCollector(Collector):
    """Every server process's metrics, each sample labelled with its process, read at
    scrape time from the process's own loopback endpoint."""

    def __init__(self, supervisor: Supervisor) -> None:
        self._supervisor = supervisor

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        failed = 0
        children = list(self._supervisor.children)
        for child in children:
            port = child.metrics_port
            if not child.up or port is None:
                continue
            try:
                url = f"http://127.0.0.1:{port}/metrics"
                with urllib.request.urlopen(url, timeout=SCRAPE_TIMEOUT) as response:
                    text = response.read().decode("utf-8")
            except OSError:
                failed += 1
                continue
            for family in text_string_to_metric_families(text):
                merged = families.get(family.name)
                if merged is None:
                    merged = Metric(family.name, family.documentation, family.type, family.unit)
                    families[family.name] = merged
                for sample in family.samples:
                    labels = {**sample.labels, "process": str(child.index)}
                    merged.samples.append(
                        Sample(sample.name, labels, sample.value, sample.timestamp, sample.exemplar)
                    )
        yield from families.values()
        yield GaugeMetricFamily(
            "statewright_processes",
            "Server processes of this pod that are serving.",
            value=sum(1 for c in children if c.up),
        )
        yield GaugeMetricFamily(
            "statewright_processes_configured",
            "Server processes this pod runs (--processes).",
            value=len(children),
        )
        yield CounterMetricFamily(
            "statewright_process_restarts",
            "Server processes the supervisor restarted after they exited on their own.",
            value=self._supervisor.restarts,
        )
        yield GaugeMetricFamily(
            "statewright_process_scrape_failures",
            "Server processes whose metrics this scrape could not read.",
            value=failed,
        )
