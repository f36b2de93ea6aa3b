"""Readiness under a database that is slow to answer the check: busy is not down."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from statewrightd import server as server_module
from statewrightd.config import ServerConfig
from statewrightd.server import Server


class _App:
    """What the readiness check asks of the application: a check that never answers, and
    whether other calls were answered meanwhile."""

    def __init__(self, answering: bool) -> None:
        self.answering = answering
        self.verdicts: list[str | None] = []
        self.hung: asyncio.Future[None] | None = None

    async def ping(self) -> None:
        self.hung = asyncio.get_running_loop().create_future()
        await self.hung

    def storage_answered_within(self, seconds: float) -> bool:
        return self.answering

    def storage_verdict(self, down: str | None) -> None:
        self.verdicts.append(down)


async def _ready_after_a_slow_check(
    tmp_path: Path, *, answering: bool, was_ready: bool
) -> tuple[bool, _App]:
    config = ServerConfig(listen="127.0.0.1:0", database_url=f"sqlite:///{tmp_path / 'x.db'}")
    server = Server(config)
    app = _App(answering)
    server.app = app  # type: ignore[assignment]
    ready = await server._database_ready(log=was_ready)
    assert app.hung is not None
    app.hung.cancel()
    return ready, app


@pytest.fixture(autouse=True)
def _short_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "PING_TIMEOUT", 0.05)


def test_a_slow_check_while_the_database_answers_other_calls_keeps_the_server_ready(
    tmp_path: Path,
) -> None:
    ready, app = asyncio.run(_ready_after_a_slow_check(tmp_path, answering=True, was_ready=True))
    assert ready
    assert app.verdicts == []  # storage is not declared down: calls are still served


def test_a_slow_check_while_nothing_answers_declares_the_database_down(tmp_path: Path) -> None:
    ready, app = asyncio.run(_ready_after_a_slow_check(tmp_path, answering=False, was_ready=True))
    assert not ready
    assert len(app.verdicts) == 1 and app.verdicts[0] is not None
    assert "has not answered" in app.verdicts[0]


def test_a_slow_check_does_not_bring_a_down_database_back(tmp_path: Path) -> None:
    ready, app = asyncio.run(_ready_after_a_slow_check(tmp_path, answering=True, was_ready=False))
    assert not ready
    assert app.verdicts == []  # still down until a check answers
