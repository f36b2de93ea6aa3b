"""Process lifecycle of ``statewrightd serve``: bind, report health, drain on a signal."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time

import grpc
from grpc_health.v1 import health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd import __version__
from statewrightd.api.servicer import WorkflowServicer
from statewrightd.application import Application
from statewrightd.config import ServerConfig
from statewrightd.health import Health

_log = logging.getLogger(__name__)

HEALTH_INTERVAL = 1.0
# A loop that has neither dispatched nor idled for this long is stuck: restart the process.
LIVENESS_STALL_SECONDS = 10.0

SERVICE_FULL_NAME = pb.DESCRIPTOR.services_by_name["WorkflowService"].full_name


class Server:
    """One statewrightd process: the grpc.aio server and everything it serves."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.health = Health()
        self.port: int | None = None
        self.app = Application(config)
        self._monitor: asyncio.Task[None] | None = None
        self._grpc = grpc.aio.server(
            options=[
                ("grpc.so_reuseport", 1),
                ("grpc.max_receive_message_length", 4 * 1024 * 1024),
            ]
        )

    async def start(self) -> int:
        await self.app.open()
        pb_grpc.add_WorkflowServiceServicer_to_server(WorkflowServicer(self.app), self._grpc)
        health_pb2_grpc.add_HealthServicer_to_server(self.health.servicer, self._grpc)
        reflection.enable_server_reflection(
            (SERVICE_FULL_NAME, "grpc.health.v1.Health", reflection.SERVICE_NAME), self._grpc
        )
        await self.health.starting()
        self.port = self._grpc.add_insecure_port(self.config.listen)
        if not self.port:
            raise OSError(f"could not bind {self.config.listen}")
        await self._grpc.start()
        host = self.config.listen.rpartition(":")[0]
        # Tests and scripts read this line to find the port when listening on port 0.
        _log.info("statewrightd %s serving on %s:%d", __version__, host, self.port)
        await self.health.ready(True)
        self._monitor = asyncio.create_task(self._watch_health(), name="health-monitor")
        return self.port

    async def _watch_health(self) -> None:
        """Readiness follows the database; liveness follows EventLoop progress."""
        while True:
            await asyncio.sleep(HEALTH_INTERVAL)
            try:
                await asyncio.wait_for(self.app.ping(), HEALTH_INTERVAL * 2)
                ready = True
            except Exception as exc:
                ready = False
                _log.warning("readiness: database check failed: %s", exc)
            await self.health.ready(ready)
            stalled = time.monotonic() - self.app.loop.metrics().last_progress
            await self.health.alive(stalled < LIVENESS_STALL_SECONDS)

    async def drain(self) -> None:
        """Readiness off, refuse new RPCs, give in-flight RPCs the grace period, stop."""
        grace = self.config.grace_seconds
        _log.info("draining: readiness NOT_SERVING, in-flight RPCs get %.1fs", grace)
        await self.health.draining()
        self.app.begin_drain()
        await self._grpc.stop(grace)
        if self._monitor is not None:
            self._monitor.cancel()
        await self.app.close()
        _log.info("stopped")

    async def wait(self) -> None:
        await self._grpc.wait_for_termination()


async def serve(config: ServerConfig) -> int:
    server = Server(config)
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    for sig in (signal.SIGTERM, signal.SIGINT):
        # A second signal during drain ends the process at once instead of waiting the grace.
        loop.add_signal_handler(sig, _exit_now)
    await server.drain()
    with contextlib.suppress(NotImplementedError):
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    return 0


def _exit_now() -> None:
    _log.warning("second signal during drain: exiting without waiting for in-flight RPCs")
    raise SystemExit(1)


def run(config: ServerConfig) -> int:
    logging.basicConfig(
        level=config.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return asyncio.run(serve(config))
