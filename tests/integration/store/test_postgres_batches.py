"""Which statements PostgreSQL takes for a group commit: a step alone, one statement
outside a transaction block; one per step below SET_BASED_FROM steps, the set-based ones
from there on (with or without request ids), and one per step again whenever a batch
steps one instance twice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from statewrightd.errors import Conflict
from statewrightd.store.postgres import SET_BASED_FROM, PostgresRepository
from statewrightd.store.records import Create, InstanceRecord, Operation, Save, TaskChange
from statewrightd.store.sql_postgres import STEPS_CHANNEL, TASKS_CHANNEL
from tests.integration.store.test_repository_contract import create_op, save_op
from tests.integration.store.test_tasks_contract import history, instance, task

LONE, PER_ROW, SET_BASED = "_lone", "_statement_per_row", "_statement_per_kind"


@pytest.fixture
def repo(postgres_url: str) -> Iterator[PostgresRepository]:
    repository = PostgresRepository(postgres_url, pool_size=2)
    yield repository
    repository.close()


@pytest.fixture
def taken(repo: PostgresRepository, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements each batch took, in order."""
    seen: list[str] = []
    for name in (LONE, PER_ROW, SET_BASED):
        original = getattr(PostgresRepository, name)

        def spy(self: PostgresRepository, *args: object, _n: str = name, _f: Any = original) -> Any:
            seen.append(_n)
            return _f(self, *args)

        monkeypatch.setattr(PostgresRepository, name, spy)
    return seen


def _saves(repo: PostgresRepository, prefix: str, count: int, requested: bool) -> list[Operation]:
    made = repo.apply_batch([create_op(f"{prefix}-{i}") for i in range(count)])
    return [
        save_op(r, request_id=f"{prefix}-rq-{i}" if requested else None)
        for i, r in enumerate(made)
        if isinstance(r, InstanceRecord)
    ]


@pytest.mark.parametrize("requested", [False, True], ids=["plain", "request-ids"])
def test_a_batch_takes_the_set_based_statements_from_set_based_from_steps(
    repo: PostgresRepository, taken: list[str], requested: bool
) -> None:
    small = _saves(repo, "small", SET_BASED_FROM - 1, requested)
    large = _saves(repo, "large", SET_BASED_FROM, requested)
    taken.clear()
    assert all(isinstance(r, InstanceRecord) for r in repo.apply_batch(small))
    assert all(isinstance(r, InstanceRecord) for r in repo.apply_batch(large))
    assert taken == [PER_ROW, SET_BASED]
    for op in small + large:
        assert isinstance(op, Save)
        assert repo.load(op.new.workflow_id).revision == 2
        if requested:
            assert op.request is not None
            assert repo.lookup_request(op.new.workflow_id, op.request.request_id) is not None


def test_a_batch_that_steps_one_instance_twice_takes_a_statement_per_step(
    repo: PostgresRepository, taken: list[str]
) -> None:
    saves = _saves(repo, "twice", SET_BASED_FROM, True)
    first = saves[0]
    assert isinstance(first, Save)
    again = save_op(first.new, request_id="twice-again")
    taken.clear()
    results = repo.apply_batch([*saves, again])
    assert all(isinstance(r, InstanceRecord) for r in results)
    assert taken == [PER_ROW]
    assert repo.load(first.new.workflow_id).revision == 3


def test_a_step_alone_is_one_statement_that_commits_and_notifies_as_it_runs(
    repo: PostgresRepository, taken: list[str], postgres_url: str
) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {STEPS_CHANNEL}")
        listener.execute(f"LISTEN {TASKS_CHANNEL}")
        rec = instance("alone")
        scheduling = Create(rec, history(rec), tasks=TaskChange(schedule=task(rec, "alone-q")))
        [created] = repo.apply_batch([scheduling])
        assert isinstance(created, InstanceRecord)
        step = save_op(created)
        assert repo.apply_batch([step]) == [step.new]
        # The same step again: its compare-and-swap fails, and says against what.
        [refused] = repo.apply_batch([step])
        assert isinstance(refused, Conflict) and refused.actual_revision == 2
        heard = [(n.channel, n.payload) for n in listener.notifies(timeout=2, stop_after=4)]
    # A step that readies a task keeps its transaction block (its pollers are woken once
    # for every task of a batch); the others are one statement each.
    assert taken == [PER_ROW, LONE, LONE]
    # Each notified once it committed: the steps, and the queue with a new task.
    assert (STEPS_CHANNEL, "alone:1") in heard and (STEPS_CHANNEL, "alone:2") in heard
    assert (TASKS_CHANNEL, "alone-q") in heard
    assert repo.load("alone").revision == 2
    assert [t.queue for t in repo.open_tasks(["alone"]).values()] == ["alone-q"]
    with repo._pooled(5.0) as conn:  # handed back in transactions
        assert conn.autocommit is False
