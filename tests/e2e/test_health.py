"""Health semantics a Kubernetes deployment relies on, against real server processes.

- ``readiness`` follows the database: NOT_SERVING within 5 seconds of PostgreSQL becoming
  unreachable, SERVING again once it answers; ``liveness`` is unaffected (restarting
  the process would not bring the database back).
- ``liveness`` follows the EventLoop: NOT_SERVING once it has made no progress for
  ``--liveness-stall`` seconds, SERVING again when it moves.
- On SIGTERM readiness goes NOT_SERVING first while liveness stays SERVING.

"Unreachable" comes in two kinds, both made by the fault proxy in front of PostgreSQL: a
black hole (every message held: nothing fails, calls just never return, so only a
bounded, non-stacking check notices) and a refused database (connections cut, new ones
refused: calls fail at once, and the pool has to reconnect afterwards).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from statewrightd import health as served
from statewrightd.server import TEST_HOOKS_ENV
from tests.support import stall as stall_hook
from tests.support.api import WAITING, Client, uid
from tests.support.databases import PostgresDatabases
from tests.support.deployment import REPO, definitions_dir, running_server
from tests.support.pgproxy import PgProxy
from tests.support.server import ServerProcess

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
# The promised bound on how long readiness takes to notice an unreachable database.
READINESS_DEADLINE = 5.0


class HealthWatch:
    """Follows one health service through a Watch stream, recording every status."""

    def __init__(self, target: str, service: str) -> None:
        self.service = service
        self._channel = grpc.insecure_channel(target)
        self._stub: Any = health_pb2_grpc.HealthStub(self._channel)  # untyped Watch
        self.seen: list[tuple[float, int]] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        try:
            request = health_pb2.HealthCheckRequest(service=self.service)
            for response in self._stub.Watch(request):
                with self._changed:
                    self.seen.append((time.monotonic(), response.status))
                    self._changed.notify_all()
        except grpc.RpcError:
            pass  # the server ended the stream (it stopped) or the channel closed

    def status(self) -> int | None:
        with self._changed:
            return self.seen[-1][1] if self.seen else None

    def wait_for(self, status: int, timeout: float) -> float | None:
        """Monotonic time at which ``status`` was reported, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                if self.seen and self.seen[-1][1] == status:
                    return self.seen[-1][0]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)

    def statuses(self) -> list[int]:
        with self._changed:
            return [status for _, status in self.seen]

    def close(self) -> None:
        self._channel.close()
        self._thread.join(5)


@pytest.fixture
def watches() -> Iterator[list[HealthWatch]]:
    opened: list[HealthWatch] = []
    yield opened
    for watch in opened:
        watch.close()


def _black_hole(proxy: PgProxy, client: Client) -> None:
    """Every message to PostgreSQL is held: calls hang instead of failing."""
    proxy.stall()


def _dark(proxy: PgProxy, client: Client) -> None:
    """Every connection is cut and new ones are refused: calls fail at once."""
    proxy.arm_cut(refuse=True, drop_open=True)
    # The cut fires at the next step's COMMIT; the step's own answer does not matter.
    with contextlib.suppress(grpc.RpcError):
        client.start("mail-approval", workflow_id=uid("cut"), timeout=10)
    assert proxy.refusing


def _restore(proxy: PgProxy) -> None:
    proxy.resume()
    proxy.heal()


@pytest.mark.parametrize("outage", [_black_hole, _dark], ids=["black-hole", "refused"])
def test_readiness_follows_an_unreachable_database_and_liveness_does_not(
    postgres_databases: PostgresDatabases,
    tmp_path: Path,
    watches: list[HealthWatch],
    outage: Callable[[PgProxy, Client], None],
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    with (
        PgProxy.for_url(url) as proxy,
        running_server(proxy.url_for(url), definitions, cwd=tmp_path) as server,
        Client(server.target) as client,
    ):
        readiness = HealthWatch(server.target, served.READINESS)
        liveness = HealthWatch(server.target, served.LIVENESS)
        watches += [readiness, liveness]
        assert readiness.wait_for(SERVING, 10) is not None, server.log()
        assert liveness.wait_for(SERVING, 10) is not None

        began = time.monotonic()
        try:
            outage(proxy, client)
            turned = readiness.wait_for(NOT_SERVING, READINESS_DEADLINE + 5)
            assert turned is not None, f"readiness stayed SERVING\n{server.log()}"
            assert turned - began <= READINESS_DEADLINE, f"took {turned - began:.1f}s"
            # It stays down while the database is away (several health ticks).
            time.sleep(2.5)
            assert readiness.status() == NOT_SERVING
        finally:
            _restore(proxy)
        assert readiness.wait_for(SERVING, 30) is not None, server.log()

        # Liveness never wavered, and the server serves again.
        assert liveness.statuses() == [SERVING], liveness.statuses()
        started = client.start("mail-approval", workflow_id=uid("after-outage"))
        assert started.workflow.status == WAITING


def test_liveness_follows_eventloop_progress(tmp_path: Path, watches: list[HealthWatch]) -> None:
    stall, limit = 5.0, 2.0
    server = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'statewright.db'}",
        cwd=tmp_path,
        grace=2.0,
        extra_args=["--liveness-stall", str(limit)],
        env={
            TEST_HOOKS_ENV: stall_hook.MODULE,
            stall_hook.STALL_ENV: str(stall),
            "PYTHONPATH": str(REPO),
        },
    )
    with server:
        liveness = HealthWatch(server.target, served.LIVENESS)
        readiness = HealthWatch(server.target, served.READINESS)
        watches += [liveness, readiness]
        assert liveness.wait_for(SERVING, 10) is not None
        assert readiness.wait_for(SERVING, 10) is not None
        # Idle is not stuck: an idle loop keeps proving progress.
        time.sleep(limit + 0.5)
        assert liveness.statuses() == [SERVING]

        server.signal(signal.SIGUSR1)  # the test-only hook: block the loop for `stall` s
        assert liveness.wait_for(NOT_SERVING, stall + 5) is not None, server.log()
        assert liveness.wait_for(SERVING, stall + 10) is not None, server.log()
        assert liveness.statuses() == [SERVING, NOT_SERVING, SERVING]
        # A stuck loop is for liveness to report; readiness (the database) was fine.
        assert NOT_SERVING not in readiness.statuses()
        assert server.stop(timeout=15) == 0
    assert "made no progress" in server.log()


def test_drain_turns_readiness_off_first_and_keeps_liveness(
    tmp_path: Path, watches: list[HealthWatch]
) -> None:
    server = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'statewright.db'}", cwd=tmp_path, grace=1.0
    )
    with server:
        follow = {s: HealthWatch(server.target, s) for s in served.SERVICES}
        watches += follow.values()
        for watch in follow.values():
            assert watch.wait_for(SERVING, 10) is not None, watch.service
        server.signal(signal.SIGTERM)
        for service in (served.READINESS, served.OVERALL, served.WORKFLOW_SERVICE):
            assert follow[service].wait_for(NOT_SERVING, 5) is not None, service
        assert server.wait(timeout=15) == 0
    assert follow[served.LIVENESS].statuses() == [SERVING]
    log = server.log()
    assert log.index("readiness NOT_SERVING") < log.index("stopped"), log
