"""PostgreSQL leases a poll's tasks in one statement, committed on its own, when a bound of
their answer's size surely fits the poll's room: the bound must hold for any task, and the
claim must lease nothing the exact choice would not, on a queue with limits too."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from statewrightd.api.convert import task_pb
from statewrightd.api.task_requests import fitting
from statewrightd.domain import TaskStatus, TraceContext
from statewrightd.store import open_repository
from statewrightd.store.flow import QueueConfig
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.records import Create, InstanceRecord, TaskChange, TaskRecord
from statewrightd.store.sql_postgres import FITTING_BOUND
from tests.integration.store.test_tasks_contract import NOW, history, instance, task

ROOM = 4 * 1024 * 1024
# What the poll's answer adds around each task (a field tag and a length; the lease's
# fields are in the task's own size): api/task_requests.py's own reckoning, generously.
ENTRY = 16

# Values whose Struct is largest against their JSON text: one-digit numbers in lists,
# lists nested deep, many small keys; and text that the row's text escapes.
AWKWARD: list[dict[str, Any]] = [
    {"digits": [0] * 5_000},
    {"nested": [[0]] * 2_000},
    {"deep": json.loads("[" * 40 + "7" + "]" * 40)},
    {str(i): i % 10 for i in range(3_000)},
    {"empties": [[], {}, "", None, True] * 500},
    {"quoted": '"\\' * 1_000, "unicode": "é漢🙂" * 300},
]


@pytest.fixture
def repo(postgres_url: str) -> Iterator[PostgresRepository]:
    """PostgreSQL alone, on one connection (the store's contract runs on every backend)."""
    opened = open_repository(postgres_url, migrate=False, pool_size=1)
    assert isinstance(opened, PostgresRepository)
    yield opened
    opened.close()


def _schedule(
    repo: PostgresRepository, wid: str, queue: str = "payments", **fields: object
) -> None:
    rec = instance(wid)
    new = dataclasses.replace(task(rec, queue), **fields)  # type: ignore[arg-type]
    repo.create(Create(rec, history(rec), tasks=TaskChange(schedule=new)))


def _bounds(repo: PostgresRepository) -> dict[str, int]:
    with repo._reading() as conn:
        found = conn.execute(
            f"SELECT workflow_id, {FITTING_BOUND} FROM workflow_tasks"
            " WHERE status IN ('SCHEDULED', 'BACKOFF')"
        ).fetchall()
    return {wid: int(bound) for wid, bound in found}


def _never(ready: list[TaskRecord]) -> list[TaskRecord]:
    raise AssertionError("the claim read and chose, though the bound fitted")


@pytest.mark.parametrize("shape", range(len(AWKWARD)))
def test_the_bound_of_a_ready_task_holds_its_answer_whatever_it_carries(
    repo: PostgresRepository, shape: int
) -> None:
    wid = f"fit-bound-{shape}"
    value = AWKWARD[shape]
    trace = TraceContext("00-" + "a" * 32 + "-" + "b" * 16 + "-01", "k=" + "v" * 200)
    _schedule(repo, wid, input=value, concurrency_key="key-" * 20, trace=trace)
    # A retried attempt carries its heartbeat's details and its error too.
    (first,) = repo.lease_tasks("payments", NOW, 10, 30.0)
    token = first.lease_token or ""
    assert repo.heartbeat_task(wid, first.task_id, token, NOW, value) is not None
    error = {"type": "Awkward", "message": "m" * 500, "details": value}
    back = repo.retry_task(wid, first.task_id, token, now=NOW, available=NOW, error=error)
    assert back is not None and back.status is TaskStatus.BACKOFF
    bound = _bounds(repo)[wid]
    (leased,) = repo.lease_tasks("payments", NOW, 10, 30.0, _never, room=ROOM)
    assert (leased.workflow_id, leased.attempt) == (wid, 2)
    answer = task_pb(leased, with_lease=True).ByteSize() + ENTRY
    assert answer <= bound, f"the bound {bound} is below the answer's {answer} bytes"


def test_a_lease_that_fits_runs_alone_and_hands_its_connection_back_in_transactions(
    repo: PostgresRepository,
) -> None:
    for i in range(3):
        _schedule(repo, f"fit-alone-{i}")
    leased = repo.lease_tasks("payments", NOW, 2, 30.0, _never, room=ROOM)
    assert [t.workflow_id for t in leased] == ["fit-alone-0", "fit-alone-1"]
    assert [repo.get_task(t.workflow_id, t.task_id) for t in leased] == leased
    seen: list[list[str]] = []

    def none_of(ready: list[TaskRecord]) -> list[TaskRecord]:
        seen.append([t.workflow_id for t in ready])
        return []

    assert repo.lease_tasks("payments", NOW, 10, 30.0, none_of, room=1_000) == []
    assert seen == [["fit-alone-2"]], "a room no bound fits: read, and chosen exactly"
    left = repo.get_task("fit-alone-2", "1")
    assert (left.status, left.attempt, left.lease_token) == (TaskStatus.SCHEDULED, 0, None)
    assert repo.lease_tasks("empty", NOW, 10, 30.0, _never, room=ROOM) == []
    with repo._pooled(5.0) as conn:
        assert conn.autocommit is False
        conn.execute("SELECT 1")
        assert conn.info.transaction_status is psycopg.pq.TransactionStatus.INTRANS


def test_the_bound_leases_the_oldest_that_fit_and_leaves_the_rest_ready(
    repo: PostgresRepository,
) -> None:
    for i in range(3):
        _schedule(repo, f"fit-some-{i}", input={"blob": "x" * 10_000})
    bounds = _bounds(repo)
    room = bounds["fit-some-0"] + bounds["fit-some-1"] + 10
    leased = repo.lease_tasks("payments", NOW, 10, 30.0, fitting(room), room=room)
    assert [t.workflow_id for t in leased] == ["fit-some-0", "fit-some-1"]
    left = repo.get_task("fit-some-2", "1")
    assert (left.status, left.attempt) == (TaskStatus.SCHEDULED, 0)


def test_a_queue_with_limits_is_claimed_under_them_when_the_poll_says_its_room(
    repo: PostgresRepository,
) -> None:
    for i in range(4):
        _schedule(repo, f"fit-limited-{i}", queue="limited")
    assert repo.set_queue_config(QueueConfig("limited", max_leased=2), NOW) is not None
    chosen: list[int] = []

    def all_of(ready: list[TaskRecord]) -> list[TaskRecord]:
        chosen.append(len(ready))
        return ready

    leased = repo.lease_tasks("limited", NOW, 10, 30.0, all_of, room=ROOM)
    assert [t.workflow_id for t in leased] == ["fit-limited-0", "fit-limited-1"]
    assert chosen == [2], "chosen among what the limits let through"
    assert repo.lease_tasks("limited", NOW, 10, 30.0, all_of, room=ROOM) == []


def test_the_one_statement_reads_the_leased_tasks_instances_as_a_load_reads_them(
    repo: PostgresRepository,
) -> None:
    _schedule(repo, "fit-read-0")
    _schedule(repo, "fit-read-item", item_index=3)
    _schedule(repo, "fit-read-1")
    read: dict[str, InstanceRecord] = {}
    leased = repo.lease_tasks("payments", NOW, 10, 30.0, _never, room=ROOM, read=read)
    assert {t.workflow_id for t in leased} == {"fit-read-0", "fit-read-item", "fit-read-1"}
    # An item of a fan-out is not its instance's one task: its instance is not read.
    assert read == {w: repo.load(w) for w in ("fit-read-0", "fit-read-1")}
    # Nothing leased, nothing read; and the claim that reads and chooses reads none.
    assert repo.lease_tasks("payments", NOW, 10, 30.0, _never, room=ROOM, read=read) == []
    _schedule(repo, "fit-read-large", input={"blob": "x" * 10_000})
    chose = repo.lease_tasks("payments", NOW, 10, 30.0, lambda r: r, room=1_000, read=read)
    assert [t.workflow_id for t in chose] == ["fit-read-large"]
    assert sorted(read) == ["fit-read-0", "fit-read-1"]
