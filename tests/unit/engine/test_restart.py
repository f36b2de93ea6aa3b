"""A restart (StartWorkflow with if_exists RESTART of a finished instance) is a start at
the next revision: from the entry point, the stored fields in the defaults' place and the
input over them through the reducers, one run more; a live instance is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from statewrightd import errors
from statewrightd.definitions import Definition, load_definition
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import Status
from statewrightd.engine import fsm, resume
from statewrightd.engine.commands import RestartCommand, StartCommand
from statewrightd.engine.model import Snapshot
from statewrightd.engine.snapshots import history_record, instance_record, record_at
from statewrightd.reasons import Reason
from statewrightd.store.records import DefinitionRecord
from tests.support.restarts import RERUN

_T = datetime(2026, 1, 1, tzinfo=UTC)


def _rerun() -> Definition:
    return load_definition(RERUN)


def _finished(d: Definition) -> Snapshot:
    first = fsm.start(d, "w", {"customer": "ada", "amount": 5, "notes": "one"})
    done = resume(d, first.snapshot, "approve", {})
    assert done.status is Status.COMPLETED and done.snapshot.revision == 2
    return done.snapshot


def test_a_finished_instance_starts_again_from_the_entry_point() -> None:
    d = _rerun()
    result = fsm.restart(d, _finished(d), {"amount": 7, "notes": "two"})
    s = result.snapshot
    assert (s.revision, s.state, s.status) == (3, "waiting", Status.WAITING)
    # Stored fields take the defaults' place; the input goes through the reducers.
    assert dict(s.context) == {"customer": "ada", "amount": 7, "starts": 2, "notes": ["one", "two"]}
    assert [(t.from_state, t.to_state) for t in result.transitions] == [("begin", "waiting")]


def test_the_input_is_checked_as_a_start_checks_it() -> None:
    d = _rerun()
    with pytest.raises(errors.InvalidArgument) as bad:
        fsm.restart(d, _finished(d), {"amount": "seven"})
    assert bad.value.reason == Reason.INPUT_TYPE_MISMATCH


def test_a_live_instance_is_refused_already_exists() -> None:
    d = _rerun()
    live = fsm.start(d, "w", {}).snapshot
    with pytest.raises(errors.AlreadyExists) as refused:
        fsm.restart(d, live, {})
    assert refused.value.reason == Reason.WORKFLOW_ALREADY_EXISTS
    assert refused.value.metadata["status"] == "WAITING"


def test_a_delayed_restart_waits_at_the_next_revision() -> None:
    d = _rerun()
    result = fsm.restart(d, _finished(d), {}, recursion_limit=3, delay=timedelta(minutes=5))
    s = result.snapshot
    assert (s.revision, s.status, s.recursion_limit) == (3, Status.WAITING, 3)
    assert s.error is not None and s.error.reason == Reason.START_DELAYED
    assert len(result.timers.arm) == 1


def _command(version: int | None = None) -> RestartCommand:
    return RestartCommand(workflow_id="w", definition="rerun", version=version)


def test_the_command_runs_the_instances_own_definition_and_counts_the_run() -> None:
    d = _rerun()
    finished = _finished(d)
    assert _command().step(d, finished).snapshot.revision == 3
    assert _command(version=1).run_after(1) == 2
    for other in (RestartCommand(workflow_id="w", definition="tally"), _command(version=2)):
        with pytest.raises(errors.FailedPrecondition) as differs:
            other.step(d, finished)
        assert differs.value.reason == Reason.DEFINITION_DIFFERS


def test_only_a_restarting_start_becomes_a_restart_when_its_id_is_taken() -> None:
    record = DefinitionRecord("rerun", 1, RERUN, "digest", "rerun.yaml", _T)
    loaded = Loaded(_rerun(), record)
    assert StartCommand(workflow_id="w", loaded=loaded).on_existing() is None
    step = StartCommand(workflow_id="w", loaded=loaded, restart=True, input={"amount": 1})
    restart = step.on_existing()
    assert isinstance(restart, RestartCommand)
    assert (restart.definition, dict(restart.input)) == ("rerun", {"amount": 1})


def test_history_rows_keep_their_run() -> None:
    d = _rerun()
    result = fsm.restart(d, _finished(d), {})
    record = instance_record(result.snapshot, _T, _T, run=2)
    row = history_record(result, "restart", _T, record)
    assert (row.run, record_at(row, record).run) == (2, 2)
