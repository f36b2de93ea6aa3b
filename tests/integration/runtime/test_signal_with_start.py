"""Signal-with-start in process, without gRPC, on SQLite: the start and the event in one
save, an instance that exists signalled, a finished one refused or started anew, the id
created behind the runtime's back (another replica won the unique insert)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from statewrightd import errors
from statewrightd.app.wiring import Application
from statewrightd.config import ServerConfig
from statewrightd.definitions import load_definition_file
from statewrightd.engine import fsm
from statewrightd.engine.answers import Outcome
from statewrightd.engine.commands import RequestKey, SignalCommand, SignalWithStartCommand
from statewrightd.engine.snapshots import history_record, instance_record
from statewrightd.store.backends import open_repository
from statewrightd.store.records import Create
from statewrightd.store.repository import Repository

REPO = Path(__file__).resolve().parents[3]
TALLY = REPO / "tests" / "e2e" / "definitions" / "tally.yaml"
MAIL = REPO / "examples" / "definitions" / "mail-approval.yaml"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Application]:
    definitions = tmp_path / "definitions"
    definitions.mkdir()
    shutil.copy(TALLY, definitions / "tally.yaml")
    shutil.copy(MAIL, definitions)
    config = ServerConfig(
        database_url=f"sqlite:///{tmp_path / 'sws.db'}", definitions_dir=definitions
    )
    application = Application(config)
    await application.open()
    yield application
    await application.close()


@pytest.fixture
def replica(app: Application) -> Any:
    repo = open_repository(app.config.database_url, migrate=False)
    yield repo
    repo.close()


async def sws(
    app: Application,
    workflow_id: str,
    tick: str,
    *,
    event: str = "tick",
    definition: str = "tally",
    start_new: bool = False,
    request_id: str = "",
    **input: Any,
) -> Outcome:
    loaded = await app.reads.definition(definition, None)
    key = RequestKey(request_id, "SignalWithStartWorkflow", tick) if request_id else None
    command = SignalWithStartCommand(
        workflow_id=workflow_id,
        request=key,
        loaded=loaded,
        input=input,
        event=event,
        payload={"id": tick},
    )
    return await app.workflows.signal_with_start(command, start_new=start_new, budget=5)


async def test_an_absent_instance_is_created_with_the_event_applied_at_revision_1(
    app: Application,
) -> None:
    outcome = await sws(app, "a", "first", limit=5)
    assert outcome.accepted and outcome.saved
    record = outcome.record
    assert record.revision == 1
    assert record.context["seen"] == ["first"] and record.context["limit"] == 5
    assert [t.event for t in outcome.transitions] == ["tick"]
    (history,) = app.parts.repo.history_after("a", 0, 10)
    assert history.revision == 1 and history.event == "tick"
    assert history.context["seen"] == ["first"]


async def test_an_existing_instance_is_signalled(app: Application) -> None:
    await sws(app, "b", "one")
    outcome = await sws(app, "b", "two", limit=1)  # input is ignored when it exists
    assert outcome.accepted and outcome.record.revision == 2
    assert outcome.record.context["seen"] == ["one", "two"]
    assert outcome.record.context["limit"] == 1000000


async def test_an_instance_another_replica_created_is_signalled_not_created_twice(
    app: Application, replica: Repository
) -> None:
    # The runtime has never seen "c": its insert loses to the row already there.
    definition = load_definition_file(TALLY)
    result = fsm.signal_with_start(definition, "c", {}, "tick", {"id": "theirs"})
    now = datetime.now(UTC)
    record = instance_record(result.snapshot, now, now)
    replica.create(Create(record, history_record(result, "tick", now)))
    outcome = await sws(app, "c", "mine")
    assert outcome.accepted and outcome.record.revision == 2
    assert outcome.record.context["seen"] == ["theirs", "mine"]


async def test_callers_racing_on_one_id_make_one_instance_and_apply_every_event(
    app: Application,
) -> None:
    outcomes = await asyncio.gather(*(sws(app, "r", f"t{i}") for i in range(12)))
    assert all(o.accepted for o in outcomes)
    assert sorted(o.record.revision for o in outcomes) == list(range(1, 13))
    stored = app.parts.repo.load("r")
    assert sorted(stored.context["seen"]) == sorted(f"t{i}" for i in range(12))


async def test_a_finished_instance_is_refused_then_started_anew_with_start_new(
    app: Application,
) -> None:
    await sws(app, "f", "one")
    closed = await app.workflows.step(SignalCommand(workflow_id="f", event="close"), 5)
    assert closed.record.status == "COMPLETED"
    with pytest.raises(errors.FailedPrecondition) as refused:
        await sws(app, "f", "two")
    assert refused.value.reason == "ALREADY_TERMINAL"
    assert refused.value.metadata["status"] == "COMPLETED"
    assert app.parts.repo.load("f").revision == 2  # untouched
    anew = await sws(app, "f", "three", start_new=True)
    assert anew.accepted and anew.record.revision == 1
    assert anew.record.context["seen"] == ["three"]
    assert [h.revision for h in app.parts.repo.history_after("f", 0, 10)] == [1]


async def test_a_request_id_replays_the_original_answer(app: Application) -> None:
    first = await sws(app, "q", "one", request_id="rid-1")
    again = await sws(app, "q", "one", request_id="rid-1")
    assert again.record.revision == first.record.revision == 1
    assert again.saved
    assert app.parts.repo.load("q").context["seen"] == ["one"]
    with pytest.raises(errors.InvalidArgument) as reused:
        await sws(app, "q", "other", request_id="rid-1")
    assert reused.value.reason == "REQUEST_ID_REUSED"


async def test_a_first_step_that_does_not_rest_running_creates_nothing(
    app: Application,
) -> None:
    # mail-approval's first step rests WAITING: no signal can be delivered to it.
    with pytest.raises(errors.FailedPrecondition) as refused:
        await sws(app, "m", "x", event="approve", definition="mail-approval", topic="t")
    assert refused.value.reason == "SIGNAL_NOT_DELIVERABLE"
    with pytest.raises(errors.RecordNotFound):
        app.parts.repo.load("m")


async def test_an_unknown_event_creates_nothing(app: Application) -> None:
    with pytest.raises(errors.InvalidArgument) as refused:
        await sws(app, "u", "x", event="tock")
    assert refused.value.reason == "UNKNOWN_EVENT"
    with pytest.raises(errors.RecordNotFound):
        app.parts.repo.load("u")


async def test_an_instance_of_another_definition_is_refused(app: Application) -> None:
    await sws(app, "d", "one")
    with pytest.raises(errors.FailedPrecondition) as refused:
        await sws(app, "d", "x", event="approve", definition="mail-approval")
    assert refused.value.reason == "DEFINITION_DIFFERS"
    assert app.parts.repo.load("d").revision == 1
