"""A task queue nobody polls is logged once when it becomes stalled and once when it
recovers, not at every count, against a real server whose stall window is shortened to
seconds by a test hook (tests.support.quick_stall_window)."""

from __future__ import annotations

import time
from pathlib import Path

from statewright import Client

from statewrightd.server import TEST_HOOKS_ENV
from tests.support import quick_stall_window as hook
from tests.support.deployment import REPO, definitions_dir
from tests.support.server import ServerProcess, wait_until

STALLED = "task queue payments has 1 task(s) waiting and no poll"
RECOVERED = "task queue payments is no longer stalled"


def _count(server: ServerProcess, text: str) -> int:
    return sum(text in line for line in server.lines)


def test_a_stalled_queue_is_logged_once_and_its_recovery_once(tmp_path: Path) -> None:
    server = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'statewright.db'}",
        definitions=definitions_dir(tmp_path / "definitions", test_definitions=False),
        cwd=tmp_path,
        grace=2.0,
        extra_args=["--log-level", "INFO"],
        env={TEST_HOOKS_ENV: hook.MODULE, "PYTHONPATH": str(REPO)},
    )
    with server, Client(server.target) as client:
        order = client.start("order-fulfilment", {"items": ["book"], "price": 12.5}).workflow
        assert order.state == "charging"
        assert wait_until(lambda: _count(server, STALLED) == 1, 20), server.log()
        # Many counts later (every half second, stalled after two), still one line.
        time.sleep(hook.STALLED_AFTER * 3)
        assert _count(server, STALLED) == 1, server.log()
        assert _count(server, RECOVERED) == 0

        (task,) = client.poll_tasks("payments", max_tasks=1, wait=5.0, identity="e2e")
        assert wait_until(lambda: _count(server, RECOVERED) == 1, 20), server.log()
        client.complete_task(task.name, task.lease_token, {"id": "ch-1"})
        # The order moves on to shipping, whose queue nobody polls either: a new stall,
        # of another queue; payments stays recovered.
        assert wait_until(lambda: _count(server, "task queue shipping has 1") == 1, 20)
        time.sleep(hook.STALLED_AFTER * 2)
        assert _count(server, STALLED) == 1 and _count(server, RECOVERED) == 1, server.log()
        assert server.stop(timeout=15) == 0
    assert "Traceback" not in server.log()
