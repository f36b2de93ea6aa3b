"""The runtime in process, without gRPC: admission, stale caches, conflicts, recovery.

A second repository on the same SQLite file plays "another replica": it saves steps
behind the runtime's back, so the runtime's cached sessions go stale exactly as they do
when two servers share one database.
"""

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
from statewrightd.engine import runtime as runtime_module
from statewrightd.engine import writes as writes_module
from statewrightd.engine.admission import AdmissionState
from statewrightd.engine.answers import Outcome
from statewrightd.engine.commands import CancelCommand, ResumeCommand, SignalCommand, StartCommand
from statewrightd.engine.runtime import WorkflowInfo
from statewrightd.engine.snapshots import history_record, instance_record, snapshot_of
from statewrightd.store.backends import open_repository
from statewrightd.store.records import InstanceRecord, Save
from statewrightd.store.repository import Repository

REPO = Path(__file__).resolve().parents[3]
TALLY = REPO / "tests" / "e2e" / "definitions" / "tally.yaml"


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Application]:
    definitions = tmp_path / "definitions"
    definitions.mkdir()
    shutil.copy(TALLY, definitions / "tally.yaml")
    shutil.copy(REPO / "examples" / "definitions" / "mail-approval.yaml", definitions)
    config = ServerConfig(
        database_url=f"sqlite:///{tmp_path / 'runtime.db'}", definitions_dir=definitions
    )
    application = Application(config)
    await application.open()
    yield application
    await application.close()


@pytest.fixture
def replica(app: Application) -> Any:
    """Another writer on the same database, as a second server would be."""
    repo = open_repository(app.config.database_url, migrate=False)
    yield repo
    repo.close()


async def start(app: Application, workflow_id: str, definition: str = "tally") -> Outcome:
    loaded = await app.reads.definition(definition, None)
    result = await app.workflows.step(StartCommand(workflow_id=workflow_id, loaded=loaded), 5)
    assert isinstance(result, Outcome)
    return result


async def signal(app: Application, workflow_id: str, event: str, **payload: Any) -> Outcome:
    result = await app.workflows.step(
        SignalCommand(workflow_id=workflow_id, event=event, payload=payload), 5
    )
    assert isinstance(result, Outcome)
    return result


async def _info(app: Application, workflow_id: str) -> WorkflowInfo:
    runtime = app.parts.engine.runtime
    return await app.parts.handoff.call(lambda: runtime.info(workflow_id))


def save_behind_the_back(repo: Repository, workflow_id: str, event: str, **payload: Any) -> None:
    """Apply one signal the way another replica would: load, step, CAS save."""
    current = repo.load(workflow_id)
    definition = load_definition_file(TALLY)
    result = fsm.signal(definition, snapshot_of(current), event, payload)
    now = datetime.now(UTC)
    record = instance_record(result.snapshot, current.create_time, now)
    repo.save(Save(record, current.revision, history_record(result, event, now)))


async def test_a_stale_cache_loses_the_cas_race_then_reloads_and_reapplies(
    app: Application, replica: Repository
) -> None:
    await start(app, "w")
    await signal(app, "w", "tick", id="mine-1")  # cached at revision 2
    save_behind_the_back(replica, "w", "tick", id="theirs")  # revision 3 elsewhere
    outcome = await signal(app, "w", "tick", id="mine-2")
    assert outcome.accepted
    assert outcome.record.revision == 4
    assert outcome.record.context["seen"] == ["mine-1", "theirs", "mine-2"]
    history = app.parts.repo.history_after("w", 0, 10)
    assert [h.revision for h in history] == [1, 2, 3, 4]


async def test_an_expected_revision_against_a_stale_cache_is_checked_against_the_store(
    app: Application, replica: Repository
) -> None:
    await start(app, "m", definition="mail-approval")  # WAITING at revision 1, cached
    stored = replica.load("m")
    # Another replica cancels it: revision 2.
    definition = load_definition_file(REPO / "examples" / "definitions" / "mail-approval.yaml")
    result = fsm.cancel(definition, snapshot_of(stored), "elsewhere")
    now = datetime.now(UTC)
    replica.save(
        Save(
            instance_record(result.snapshot, stored.create_time, now),
            1,
            history_record(result, None, now),
        )
    )
    with pytest.raises(errors.Aborted) as caught:
        await app.workflows.step(
            ResumeCommand(workflow_id="m", event="approve", expected_revision=1), 5
        )
    assert caught.value.reason == "REVISION_MISMATCH"
    assert caught.value.metadata["actual_revision"] == "2"


async def test_a_refusal_made_on_a_stale_cache_is_confirmed_against_the_store(
    app: Application, replica: Repository
) -> None:
    await start(app, "t")  # RUNNING in `open`, cached
    save_behind_the_back(replica, "t", "close")  # COMPLETED elsewhere
    outcome = await signal(app, "t", "tick", id="late")
    assert not outcome.accepted
    assert outcome.rejection == "NOT_RUNNING"
    assert outcome.record.status == "COMPLETED"
    assert outcome.record.revision == 2


async def test_guards_all_false_on_a_stale_cache_are_confirmed_before_accepting(
    app: Application, replica: Repository
) -> None:
    await start(app, "g")
    # The cached instance is still `open`; elsewhere it was closed, so a signal the cached
    # state would accept must not be reported as applied.
    save_behind_the_back(replica, "g", "close")
    outcome = await signal(app, "g", "close")
    assert not outcome.accepted
    assert outcome.record.revision == 2


async def test_signals_arriving_while_a_step_persists_queue_in_arrival_order(
    app: Application,
) -> None:
    await start(app, "q")
    ids = [f"s{i}" for i in range(40)]
    outcomes = await asyncio.gather(*(signal(app, "q", "tick", id=i) for i in ids))
    assert all(o.accepted for o in outcomes)
    final = app.parts.repo.load("q")
    assert final.context["seen"] == ids
    assert final.revision == 41


async def test_a_competing_resume_while_a_segment_is_live_is_busy(app: Application) -> None:
    await start(app, "b", definition="mail-approval")
    first = asyncio.ensure_future(
        app.workflows.step(ResumeCommand(workflow_id="b", event="approve"), 5)
    )
    await asyncio.sleep(0)  # the first is posted before the second
    with pytest.raises(errors.Aborted) as caught:
        await app.workflows.step(ResumeCommand(workflow_id="b", event="reject"), 5)
    assert caught.value.reason == "WORKFLOW_BUSY"
    assert isinstance(await first, Outcome)


async def test_an_unknown_outcome_means_recovery_required_until_a_recheck_resolves_it(
    app: Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    await start(app, "r")
    writer = app.parts.engine.writer
    assert writer is not None
    real_submit = writer.submit_many
    seen_ops: list[Any] = []

    def lose_commit(items: list[tuple[Any, Any]]) -> list[errors.StoreError | None]:
        # The saves really commit, but their acknowledgements are lost.
        def losing(op: Any, callback: Any) -> Any:
            def committed(result: InstanceRecord | errors.StoreError) -> None:
                seen_ops.append(op)
                callback(errors.OutcomeUnknown("lost around COMMIT", metadata={"backend_pid": 1}))

            return committed

        return real_submit([(op, losing(op, callback)) for op, callback in items])

    monkeypatch.setattr(writer, "submit_many", lose_commit)
    checks: list[tuple[int, ...]] = []
    real_resolve = app.parts.repo.resolve_outcome

    def resolve(ops: Any, *, backend_pids: Any = ()) -> Any:
        checks.append(tuple(backend_pids))
        if len(checks) < 2:
            return [errors.OutcomeUnknown("still cannot tell")]
        return real_resolve(ops, backend_pids=())

    monkeypatch.setattr(app.parts.repo, "resolve_outcome", resolve)
    with pytest.raises(errors.OutcomeUnknown):
        await signal(app, "r", "tick", id="x")
    monkeypatch.setattr(writer, "submit_many", real_submit)

    info = await _info(app, "r")
    assert info.admission is AdmissionState.RECOVERY_REQUIRED
    rejected = await signal(app, "r", "tick", id="y")
    assert not rejected.accepted and rejected.rejection == "RECOVERY_REQUIRED"
    with pytest.raises(errors.FailedPrecondition) as caught:
        await app.workflows.step(CancelCommand(workflow_id="r"), 5)
    assert caught.value.reason == "RECOVERY_REQUIRED"

    for _ in range(100):  # re-checks back off from 0.2 s; bounded wait
        if (await _info(app, "r")).admission is None:
            break
        await asyncio.sleep(0.05)
    assert (await _info(app, "r")).admission is None
    assert checks[0] == (1,), "the re-check waits for the backend that ran the lost COMMIT"
    # Resolved as committed: the next step builds on revision 2.
    after = await signal(app, "r", "tick", id="z")
    assert after.record.revision == 3
    assert after.record.context["seen"] == ["x", "z"]


# -- a stage of a step that raises -------------------------------------------------------------
#
# Whatever a stage raises, the command is answered at once and its instance released: the
# next step of the same instance runs normally. Each case breaks one stage, once.


def _boom(*_: object, **__: object) -> Any:
    raise RuntimeError("injected fault")


def _break(target: object, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``target.name`` raise on its next call only."""
    original = getattr(target, name)

    def once(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(target, name, original)
        return _boom(*args, **kwargs)

    monkeypatch.setattr(target, name, once)


def _stage_admission(app: Application, mp: pytest.MonkeyPatch) -> None:
    _break(app.parts.engine.runtime._admission, "admit", mp)


def _stage_load(app: Application, mp: pytest.MonkeyPatch) -> None:
    app.parts.engine.runtime._cache.forget(["x"])  # the instance must be loaded from the store
    _break(runtime_module, "snapshot_of", mp)


def _stage_execute(app: Application, mp: pytest.MonkeyPatch) -> None:
    _break(fsm, "signal", mp)


def _stage_build_save(app: Application, mp: pytest.MonkeyPatch) -> None:
    _break(writes_module, "history_record", mp)


def _stage_hand_off(app: Application, mp: pytest.MonkeyPatch) -> None:
    assert app.parts.engine.writer is not None
    _break(app.parts.engine.writer, "submit_many", mp)


def _stage_storage(app: Application, mp: pytest.MonkeyPatch) -> None:
    _break(app.parts.repo, "apply_batch", mp)


def _stage_saved(app: Application, mp: pytest.MonkeyPatch) -> None:
    _break(app.parts.engine.runtime._cache, "remember", mp)


STAGES = {
    "admission": (_stage_admission, errors.Internal),
    "load": (_stage_load, errors.Internal),
    "execute": (_stage_execute, errors.Internal),
    "build-save": (_stage_build_save, errors.Internal),
    "hand-off": (_stage_hand_off, errors.Internal),
    "storage": (_stage_storage, errors.StoreError),
    "saved": (_stage_saved, errors.Internal),
}


@pytest.mark.parametrize("stage", sorted(STAGES))
async def test_a_stage_that_raises_answers_its_command_and_releases_the_instance(
    app: Application, monkeypatch: pytest.MonkeyPatch, stage: str
) -> None:
    await start(app, "x")
    await signal(app, "x", "tick", id="before")
    breaker, expected = STAGES[stage]
    breaker(app, monkeypatch)
    with pytest.raises(expected):
        await signal(app, "x", "tick", id="broken")  # answered within its 5 s budget
    assert await app.parts.handoff.call(app.parts.engine.runtime.live_segments) == 0
    after = await signal(app, "x", "tick", id="after")
    # A stage past the commit ("saved") broke after the step was durable: it stands.
    broken_saved = ["broken"] if stage == "saved" else []
    assert after.record.context["seen"] == ["before", *broken_saved, "after"]
    assert [h.revision for h in app.parts.repo.history_after("x", 0, 10)] == list(
        range(1, after.record.revision + 1)
    )


@pytest.mark.parametrize("where", ["answer", "listener"])
async def test_a_failure_after_the_answer_leaves_the_step_answered(
    app: Application, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    await start(app, "y")
    if where == "answer":
        _break(app.parts.engine.runtime._observer, "finished", monkeypatch)
    else:
        app.parts.engine.runtime.listeners.insert(0, _boom)
    outcome = await signal(app, "y", "tick", id="a")
    assert outcome.accepted and outcome.record.revision == 2
    assert (await signal(app, "y", "tick", id="b")).record.revision == 3
