"""StartWorkflow with a start delay, in process on SQLite: the instance exists at once,
its first step runs on the durable timer machinery; cancelled before it starts, its
timer goes with it; signal-with-start does not start it early unless asked."""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest

from statewrightd import errors
from statewrightd.app.wiring import Application
from statewrightd.config import ServerConfig
from statewrightd.engine import fsm
from statewrightd.engine.answers import Outcome, Rejection
from statewrightd.engine.commands import (
    CancelCommand,
    ResumeCommand,
    SignalWithStartCommand,
    StartCommand,
)
from statewrightd.store.records import InstanceRecord

REPO = Path(__file__).resolve().parents[3]
TALLY = REPO / "tests" / "e2e" / "definitions" / "tally.yaml"
LATER = timedelta(hours=1)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Application]:
    definitions = tmp_path / "definitions"
    definitions.mkdir()
    shutil.copy(TALLY, definitions / "tally.yaml")
    config = ServerConfig(
        database_url=f"sqlite:///{tmp_path / 'delay.db'}", definitions_dir=definitions
    )
    application = Application(config)
    await application.open()
    yield application
    await application.close()


async def start(app: Application, workflow_id: str, delay: timedelta) -> Outcome:
    loaded = await app.reads.definition("tally", None)
    command = StartCommand(workflow_id=workflow_id, loaded=loaded, input={"limit": 9}, delay=delay)
    return await app.workflows.step(command, 5)


async def sws(app: Application, workflow_id: str, tick: str, *, start_now: bool) -> Outcome:
    loaded = await app.reads.definition("tally", None)
    command = SignalWithStartCommand(
        workflow_id=workflow_id,
        loaded=loaded,
        event="tick",
        payload={"id": tick},
        start_now=start_now,
    )
    return await app.workflows.signal_with_start(command, start_new=False, budget=5)


async def until_started(app: Application, workflow_id: str) -> InstanceRecord:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        record = app.parts.repo.load(workflow_id)
        if record.revision > 1:
            return record
        await asyncio.sleep(0.05)
    raise AssertionError(f"{workflow_id} never started")


async def test_the_instance_waits_then_its_first_step_runs_on_the_timer(
    app: Application,
) -> None:
    outcome = await start(app, "d", timedelta(milliseconds=200))
    record = outcome.record
    # The answer is revision 1: created, not started.
    assert (record.revision, record.status, record.state) == (1, "WAITING", "open")
    assert record.error is not None and record.error["reason"] == "START_DELAYED"
    (timer,) = outcome.timers
    assert timer.transition == fsm.START_TRANSITION and timer.after.startswith("start_delay")
    started = await until_started(app, "d")
    assert (started.revision, started.status, started.error) == (2, "RUNNING", None)
    assert started.context["limit"] == 9
    assert app.parts.repo.armed_timers(["d"]).get("d", []) == []
    history = app.parts.repo.history_after("d", 0, 10)
    assert [h.revision for h in history] == [1, 2]
    assert history[1].actor == "statewright:timer"


async def test_a_delayed_instance_is_cancelled_with_its_timer(app: Application) -> None:
    await start(app, "c", LATER)
    with pytest.raises(errors.FailedPrecondition) as early:
        await app.workflows.step(ResumeCommand(workflow_id="c", event="tick"), 5)
    assert early.value.reason == "START_DELAYED"
    cancelled = await app.workflows.step(CancelCommand(workflow_id="c", reason="no"), 5)
    assert cancelled.record.status == "CANCELLED"
    assert app.parts.repo.armed_timers(["c"]).get("c", []) == []


async def test_signal_with_start_does_not_start_it_early_unless_asked(
    app: Application,
) -> None:
    await start(app, "s", LATER)
    refused = await sws(app, "s", "early", start_now=False)
    assert not refused.accepted and refused.rejection is Rejection.NOT_RUNNING
    assert refused.record.revision == 1
    now = await sws(app, "s", "now", start_now=True)
    assert now.accepted and now.record.revision == 2 and now.record.status == "RUNNING"
    assert now.record.context["seen"] == ["now"]
    assert app.parts.repo.armed_timers(["s"]).get("s", []) == []
