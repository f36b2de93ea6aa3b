"""Process lifecycle of ``statewrightd serve``: bind, report health, drain on a signal."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import ipaddress
import logging
import os
import signal
import time
from collections.abc import Callable

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health_pb2_grpc
from statewright.v1 import batch_service_pb2 as batch_pb
from statewright.v1 import schedule_service_pb2 as schedule_pb
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd import __version__, ports
from statewrightd.api.batch_items import BatchItems
from statewrightd.api.batch_servicer import BatchServicer
from statewrightd.api.door import Door
from statewrightd.api.registration import add_servicer
from statewrightd.api.schedule_servicer import ScheduleServicer
from statewrightd.api.servicer import WorkflowServicer
from statewrightd.api.task_servicer import TaskServicer
from statewrightd.app.batch_runner import BatchRunner
from statewrightd.app.schedule_files import ScheduleFiles
from statewrightd.app.wiring import Application
from statewrightd.config import ServerConfig
from statewrightd.console import Console
from statewrightd.definitions.registry import DefinitionsRefused, check_directory
from statewrightd.definitions.watch import DefinitionWatcher
from statewrightd.errors import StatewrightError
from statewrightd.health import Health
from statewrightd.observability import logs
from statewrightd.observability.setup import Observability
from statewrightd.pod import WORKER_CONFIG_ENV, PodHealth, SupervisorLink, config_from_env
from statewrightd.reflection import enable_reflection
from statewrightd.security.auth_config import load_auth_config
from statewrightd.security.authn import Authenticator
from statewrightd.security.interceptor import CallerLimits, CallGate
from statewrightd.security.tls import ReloadingCredentials, TlsFiles
from statewrightd.tuning import loop_factory, tune_interpreter

_log = logging.getLogger(__name__)

MAX_PENDING_CALLS = 50_000
HEALTH_INTERVAL = 1.0
# How often a dev server looks for changed schedules files (as for definition files).
SCHEDULE_FILES_POLL = 1.0
# A database check that has not answered within this is a failure. Readiness so turns
# NOT_SERVING at most HEALTH_INTERVAL + PING_TIMEOUT after the database stops answering.
PING_TIMEOUT = 2.0
# A drain stops the transport once no call is inside and none arrived for this long: long
# enough for calls sent before the drain began to reach the door (loopback or cluster
# round trips), short enough that a client retrying every fraction of a second does not
# keep the transport open for the whole grace period, inviting a retry to race its stop.
DRAIN_QUIET = 0.05
# The exit status of a shutdown whose EventLoop or writer did not finish (documented).
EXIT_UNCLEAN_SHUTDOWN = 3

WORKFLOW_SERVICE = pb.DESCRIPTOR.services_by_name["WorkflowService"]
SERVICE_FULL_NAME = WORKFLOW_SERVICE.full_name
TASK_SERVICE = task_pb.DESCRIPTOR.services_by_name["TaskService"]
SCHEDULE_SERVICE = schedule_pb.DESCRIPTOR.services_by_name["ScheduleService"]
BATCH_SERVICE = batch_pb.DESCRIPTOR.services_by_name["BatchService"]
# Names a module whose ``install(event_loop, asyncio_loop)`` a test wants run at start
# (fault injection that only a test asks for); unset everywhere else.
TEST_HOOKS_ENV = "STATEWRIGHT_TEST_HOOKS"


class Server:
    """One statewrightd process: the grpc.aio server and everything it serves."""

    def __init__(
        self,
        config: ServerConfig,
        observability: Observability | None = None,
        health: Health | None = None,
        *,
        share_port: bool = False,
    ) -> None:
        """``share_port``: this is one of a supervisor's processes, which share the ports
        (SO_REUSEPORT); a server on its own holds its ports alone (statewrightd.ports)."""
        self.config = config
        self._share_port = share_port
        self.health = health or Health()
        self.port: int | None = None
        self.observability = observability or Observability(config)
        probes = self.observability.probes
        self.app = Application(config, step_observer=probes, batch_observer=probes.batch)
        self.door = Door()
        self._monitors: list[asyncio.Task[None]] = []
        self._watcher: DefinitionWatcher | None = None
        self._ping: asyncio.Future[None] | None = None
        self._slow_logged = False  # the slow check logged once, until it answers again
        limits = config.limits
        # Read at construction, so that a bad file stops the server before anything binds.
        authenticator = None
        if config.auth_config is not None:
            authenticator = Authenticator(load_auth_config(config.auth_config))
            authenticator.preload()
        self.gate = CallGate(
            self.app,
            authenticator,
            CallerLimits(
                limits.rate, limits.burst, limits.watches_per_caller, limits.watches_total
            ),
        )
        self._tls = (
            ReloadingCredentials(TlsFiles(config.tls_cert, config.tls_key, config.tls_client_ca))
            if config.tls_cert is not None and config.tls_key is not None
            else None
        )
        self.health_port: int | None = None
        self._health_grpc: grpc.aio.Server | None = None
        # One servicer per service: the gRPC server and the HTTP API call the same handlers.
        self._servicers: dict[ServiceDescriptor, object] = {
            WORKFLOW_SERVICE: WorkflowServicer(self.app, self.door),
            TASK_SERVICE: TaskServicer(self.app, self.door),
            SCHEDULE_SERVICE: ScheduleServicer(self.app, self.door),
            BATCH_SERVICE: BatchServicer(self.app, self.door),
        }
        self._batch_runner: BatchRunner | None = None
        # The web console: the same application, door and call gate as the gRPC API.
        self.console = (
            Console(self.app, self.gate, self.door, config, self._servicers)
            if config.http_listen is not None
            else None
        )
        self.http_port: int | None = None
        self._grpc = grpc.aio.server(
            interceptors=[*self.observability.interceptors(), self.gate],
            options=[
                ("grpc.so_reuseport", 1 if share_port else 0),
                # grpc core stops taking new calls past 3,000 pending ones by default, and
                # open WatchWorkflow streams count: without this a server stalls new
                # streams (any RPC) at about 3,000 watchers.
                ("grpc.server.max_pending_requests", MAX_PENDING_CALLS),
                ("grpc.server.max_pending_requests_hard_limit", MAX_PENDING_CALLS),
                ("grpc.max_receive_message_length", limits.request_bytes),
            ],
        )

    async def start(self) -> int:
        await self.app.open()
        try:
            return await self._start_serving()
        except BaseException:
            # A refused start (a port in use) closes what it opened, so that no thread of
            # the application works on after the asyncio loop is gone.
            await self._close_after_failed_start()
            raise

    async def _close_after_failed_start(self) -> None:
        with contextlib.suppress(Exception):
            await self._grpc.stop(0)
        if self._health_grpc is not None:
            with contextlib.suppress(Exception):
                await self._health_grpc.stop(0)
        if self.console is not None:
            with contextlib.suppress(Exception):
                await self.console.close()
        with contextlib.suppress(Exception):
            await self.app.close()
        with contextlib.suppress(Exception):
            self.observability.stop()

    async def _start_serving(self) -> int:
        tune_interpreter()
        door = self.door
        self.observability.start(self.app.diagnostics, lambda: door.malformed)
        _install_test_hooks(self.app, asyncio.get_running_loop())
        for service, servicer in self._servicers.items():
            add_servicer(self._grpc, service, servicer)
        health_pb2_grpc.add_HealthServicer_to_server(self.health.servicer, self._grpc)
        if self.config.reflection:
            enable_reflection(
                self._grpc,
                (
                    SERVICE_FULL_NAME,
                    TASK_SERVICE.full_name,
                    SCHEDULE_SERVICE.full_name,
                    BATCH_SERVICE.full_name,
                    "grpc.health.v1.Health",
                ),
            )
        await self.health.starting()
        self.port = self._bind()
        if self.config.health_listen is not None:
            # Probes (the kubelet's gRPC probe) speak neither TLS nor tokens.
            health_listen = self.config.health_listen
            probes = grpc.aio.server(options=[("grpc.so_reuseport", 1 if self._share_port else 0)])
            self._health_grpc = probes
            health_pb2_grpc.add_HealthServicer_to_server(self.health.servicer, probes)
            self.health_port = _add_port(lambda: probes.add_insecure_port(health_listen))
            if not self.health_port:
                if not self._share_port:
                    raise ports.taken(health_listen, "--health-listen")
                raise OSError(f"could not bind {health_listen}")
            await probes.start()
            host = health_listen.rpartition(":")[0]
            _log.info("health checks (plaintext) on %s:%d", host, self.health_port)
        await self._grpc.start()
        if self.console is not None:
            self.http_port = await self.console.start(share_port=self._share_port)
        host = self.config.listen.rpartition(":")[0]
        if isinstance(self.health, PodHealth):
            # One of several: the supervisor says "serving on" once all of them listen.
            _log.info("server process listening on %s:%d", host, self.port)
        else:
            # Tests and scripts read this line to find the port when listening on port 0.
            _log.info("statewrightd %s serving on %s:%d", __version__, host, self.port)
        await self.health.ready(True)
        directory = self.config.definitions_dir
        if self.config.dev_mode and directory is not None:
            self._watcher = DefinitionWatcher(
                self.app.parts.registry, directory, self.app.definition_files
            )
            self._watcher.start()
        # Two monitors, so that a database check that hangs never delays liveness.
        self._monitors = [
            asyncio.create_task(self._watch_readiness(), name="readiness-monitor"),
            asyncio.create_task(self._watch_liveness(), name="liveness-monitor"),
        ]
        self._start_batch_runner()
        files = self.app.schedule_files
        if self.config.dev_mode and files is not None:
            self._monitors.append(
                asyncio.create_task(self._watch_schedule_files(files), name="schedule-files")
            )
        return self.port

    def _start_batch_runner(self) -> None:
        """This replica's share of the batch operations: its items are applied by the
        WorkflowService handlers, as the single RPCs' calls are."""
        parts, batches = self.app.parts, self.app.batches
        items = BatchItems(self._servicers[WORKFLOW_SERVICE], self.app.reads)
        runner = BatchRunner(parts.repo, parts.storage, batches.clock, items)
        batches.started.append(runner.poke)
        runner.start()
        self._batch_runner = runner

    def _bind(self) -> int:
        listen = self.config.listen
        if not self._share_port:
            ports.check_free(listen, "--listen")
            if self.config.http_listen is not None:
                ports.check_free(self.config.http_listen, "--http-listen")
            if self.config.health_listen is not None:
                ports.check_free(self.config.health_listen, "--health-listen")
        if self._tls is not None:
            credentials = self._tls.credentials()
            port = _add_port(lambda: self._grpc.add_secure_port(listen, credentials))
            mode = "mTLS" if self.config.tls_client_ca is not None else "TLS"
            _log.info("serving %s (certificates re-read when their files change)", mode)
        else:
            port = _add_port(lambda: self._grpc.add_insecure_port(listen))
            host = listen.rpartition(":")[0].strip("[]")
            if not _loopback(host):
                _log.warning(
                    "serving plaintext on %s, which is not a loopback address: anyone on the "
                    "network can read the traffic; give --tls-cert and --tls-key",
                    listen,
                )
        if not port:
            if not self._share_port:
                raise ports.taken(listen, "--listen")
            raise OSError(f"could not bind {listen} (--listen HOST:PORT picks another address)")
        if self.config.auth_config is None and not _loopback(listen.rpartition(":")[0].strip("[]")):
            _log.warning("no --auth-config: every caller may do everything")
        return port

    async def _watch_readiness(self) -> None:
        """Readiness follows the database (reachable, and migrated)."""
        was_ready = True
        while True:
            await asyncio.sleep(HEALTH_INTERVAL)
            ready = await self._database_ready(log=was_ready)
            await self.health.ready(ready)
            if ready and not was_ready:
                _log.info("readiness: database reachable again")
            was_ready = ready

    async def _database_ready(self, *, log: bool) -> bool:
        # A check that outlives its timeout is left running, never cancelled (it is a
        # blocking call on a worker thread) and never doubled: while it hangs, e.g. on a
        # connection to an unresponsive database, each tick reports not ready at once
        # instead of tying up another thread.
        if self._ping is None or self._ping.done():
            self._ping = asyncio.ensure_future(self.app.ping())
            # A check still hanging at shutdown fails later, when nobody reads its result.
            self._ping.add_done_callback(_retrieve)
        ping = self._ping
        done, _ = await asyncio.wait({ping}, timeout=PING_TIMEOUT)
        if not done and self.app.storage_answered_within(PING_TIMEOUT):
            # Busy, not down: failing every call fast would turn a slow database (every
            # connection in use under load) into an outage.
            if not self._slow_logged:
                _log.warning("readiness: the database check is slow, but the database answers")
            self._slow_logged = True
            return log
        self._slow_logged = False
        if not done:
            if log:
                _log.warning("readiness: database check has not answered in %.1fs", PING_TIMEOUT)
            self.app.storage_verdict(f"the database has not answered for {PING_TIMEOUT:g}s")
            return False
        error = ping.exception()
        if error is not None:
            if log:
                _log.warning("readiness: database check failed: %s", error)
            self.app.storage_verdict(f"the database check failed: {error}")
            return False
        self.app.storage_verdict(None)
        return True

    async def _watch_schedule_files(self, files: ScheduleFiles) -> None:
        """dev: apply a schedules file again whenever it changes (as definitions reload)."""
        while True:
            await asyncio.sleep(SCHEDULE_FILES_POLL)
            try:
                await files.apply()
            except StatewrightError as exc:
                _log.warning("dev: schedules files not applied: %s", exc)

    async def _watch_liveness(self) -> None:
        """Liveness follows EventLoop progress: a dispatch or an idle wake-up."""
        limit = self.config.liveness_stall_seconds
        alive = True
        while True:
            await asyncio.sleep(HEALTH_INTERVAL / 4)
            stalled = time.monotonic() - self.app.parts.engine.loop.metrics().last_progress
            if (stalled < limit) != alive:
                alive = not alive
                if alive:
                    _log.info("liveness: the EventLoop is making progress again")
                else:
                    _log.error("liveness: the EventLoop made no progress for %.1fs", stalled)
                await self.health.alive(alive)

    async def drain(self) -> list[str]:
        """Readiness off, refuse new RPCs, give in-flight RPCs the grace period, stop.

        Returns what the shutdown could not finish (empty: a clean one)."""
        grace = self.config.grace_seconds
        began = time.monotonic()
        _log.info("draining: readiness NOT_SERVING, in-flight RPCs get %.1fs", grace)
        await self.health.draining()
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.stop)
        self.door.close()
        if self._batch_runner is not None:
            # Its items are steps: they finish, and their ends are recorded, before the
            # EventLoop drains.
            try:
                await asyncio.wait_for(self._batch_runner.stop(), grace)
            except TimeoutError:
                _log.warning("draining: the batch runner's items did not finish in %.1fs", grace)
        self.app.begin_drain()
        if self.console is not None:
            self.console.begin_drain()  # its event streams end, as watches do
        if not await self.door.drained(grace, DRAIN_QUIET):
            _log.warning("draining: %d RPCs still running after %.1fs", self.door.inside, grace)
        # What is left now is health watches and calls that arrived in the last moment.
        await self._grpc.stop(max(0.0, grace - (time.monotonic() - began)))
        if self._health_grpc is not None:
            await self._health_grpc.stop(0)
        if self.console is not None:
            await self.console.close()
        for monitor in self._monitors:
            monitor.cancel()
        # RPCs cut off by the grace period are the caller's to retry (nothing they were
        # not told about was lost); the loop or the writer left unfinished is not.
        unfinished = await self.app.close()
        self.observability.stop()
        if unfinished:
            _log.error(
                "stopped, but the shutdown was not clean: %s (exit status %d)",
                "; ".join(unfinished),
                EXIT_UNCLEAN_SHUTDOWN,
            )
        else:
            _log.info("stopped")
        return unfinished

    async def wait(self) -> None:
        await self._grpc.wait_for_termination()


async def serve(config: ServerConfig, link: SupervisorLink | None = None) -> int:
    """Serve until SIGTERM or SIGINT (or, under a supervisor, until it has gone), then drain."""
    health = PodHealth(link) if link is not None else None
    server = Server(config, health=health, share_port=link is not None)
    port = await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if link is not None and health is not None:
        endpoint = server.observability.endpoint
        if endpoint is not None:
            link.send(f"metrics {endpoint.port}")
        link.send(f"up {port}")

        def supervisor_lost() -> None:
            if not stop.is_set():
                _log.warning("the supervisor has gone: draining")
            health.supervisor_lost()
            stop.set()

        link.listen(loop, health.verdict, supervisor_lost)
    await stop.wait()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # A second signal during drain ends the process at once instead of waiting the grace.
        loop.add_signal_handler(sig, _exit_now)
    unfinished = await server.drain()
    with contextlib.suppress(NotImplementedError):
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return EXIT_UNCLEAN_SHUTDOWN if unfinished else 0


def _install_test_hooks(app: Application, aio: asyncio.AbstractEventLoop) -> None:
    name = os.environ.get(TEST_HOOKS_ENV, "").strip()
    if not name:
        return
    _log.warning(
        "%s=%s: installing test hooks (never set this in production)", TEST_HOOKS_ENV, name
    )
    importlib.import_module(name).install(app.parts.engine.loop, aio)


def _add_port(add: Callable[[], int]) -> int:
    """The port bound, or 0 when it could not be (grpc raises for a port another program
    holds, and returns 0 for some other failures)."""
    try:
        return add()
    except RuntimeError:
        return 0


def _loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _retrieve(future: asyncio.Future[None]) -> None:
    # Marks the outcome as seen, so asyncio does not report it as never retrieved.
    if not future.cancelled():
        future.exception()


def _exit_now() -> None:
    _log.warning("second signal during drain: exiting without waiting for in-flight RPCs")
    raise SystemExit(1)


def run(config: ServerConfig, link: SupervisorLink | None = None) -> int:
    process = None if link is None else str(link.index)
    logs.configure(config.log_level, config.log_format, process)
    try:
        with asyncio.Runner(loop_factory=loop_factory()) as runner:
            return runner.run(serve(config, link))
    except DefinitionsRefused as exc:
        return _refused(exc)
    except (StatewrightError, OSError) as exc:
        # A refused start (conflicting definitions, an invalid file, a port in use, an
        # unreachable database at migration) is an operator's problem: one clear line.
        _log.error("statewrightd cannot start: %s", exc)
        return 2


def _refused(exc: DefinitionsRefused) -> int:
    # Every problem of every file, so that one start shows everything to fix.
    _log.error("statewrightd cannot start: %s", exc)
    for line in exc.lines:
        _log.error("%s", line)
    for line in exc.warnings:
        _log.warning("%s", line)
    return 2


def check_definitions(config: ServerConfig) -> int | None:
    """Before several server processes start: the exit code of a refused start when the
    definition files have errors (reported here, once), else None."""
    if config.definitions_dir is None:
        return None
    logs.configure(config.log_level, config.log_format, "supervisor")
    try:
        check_directory(config.definitions_dir)
    except DefinitionsRefused as exc:
        return _refused(exc)
    except OSError as exc:  # a directory that is not there, or cannot be read
        _log.error("statewrightd cannot start: %s", exc)
        return 2
    return None


def worker_main() -> int:
    """A server process started by the supervisor: its link and configuration from the
    environment (statewrightd.pod)."""
    link = SupervisorLink.from_env(os.environ)
    if link is None:
        raise SystemExit("worker_main: no supervisor link in the environment")
    config = config_from_env(os.environ[WORKER_CONFIG_ENV])
    try:
        return run(config, link)
    finally:
        link.close()
