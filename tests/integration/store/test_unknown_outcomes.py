"""Losing the connection around COMMIT, with a real fault.

The shared protocol-aware proxy (tests/support/pgproxy.py) sits between the repository
and PostgreSQL and, once armed, cuts the connection at the next COMMIT of a transaction
that wrote a step: either right after forwarding it (the server commits, the client
never hears back) or right before (the server never sees it and rolls back). A step alone
in its group commit is one statement outside a transaction block, which commits as it
runs: the cut comes at that statement.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.domain import TaskStatus
from statewrightd.errors import (
    Conflict,
    OutcomeUnknown,
    StorageUnavailable,
)
from statewrightd.store import Repository, open_repository
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.records import InstanceRecord, TaskRecord
from tests.integration.store.test_tasks_contract import NOW, lease, scheduled
from tests.support.pgproxy import RETRY_MARKER, PgProxy, _cstrings, _is_end_of_transaction
from tests.support.store_records import created, step


@pytest.fixture
def proxy(postgres_url: str) -> Iterator[PgProxy]:
    with PgProxy.for_url(postgres_url) as p:
        yield p


@pytest.fixture
def proxied(proxy: PgProxy, postgres_url: str) -> Iterator[Repository]:
    repo = open_repository(proxy.url_for(postgres_url), migrate=False, pool_size=2)
    yield repo
    repo.close()


@pytest.fixture
def direct(postgres_url: str) -> Iterator[Repository]:
    repo = open_repository(postgres_url, migrate=False, pool_size=2)
    yield repo
    repo.close()


T0 = datetime(2026, 5, 1, tzinfo=UTC)


def _created(repo: Repository, wid: str) -> InstanceRecord:
    return created(repo, wid, T0)


def test_cut_after_commit_is_reconciled_as_success(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm_cut(forward_commit=True)
    op = step(rec)
    assert proxied.save(op) == 2
    assert proxy.cuts == 1, "the fault was not injected"
    assert direct.load("w") == op.new
    assert [h.revision for h in direct.history_after("w", 0, 10)] == [1, 2]
    # The repository keeps working through the proxy after the fault.
    assert proxied.save(step(op.new)) == 3


def test_cut_before_commit_is_a_known_failure(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm_cut(forward_commit=False)
    with pytest.raises(StorageUnavailable) as failure:
        proxied.save(step(rec))
    assert not isinstance(failure.value, OutcomeUnknown)
    assert proxy.cuts == 1
    assert direct.load("w") == rec
    assert len(direct.history_after("w", 0, 10)) == 1
    # Nothing was written, so the same step can be retried.
    assert proxied.save(step(rec)) == 2


def test_unreadable_outcome_is_unknown_until_resolved(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    rec = _created(proxied, "w")
    proxy.arm_cut(forward_commit=True, refuse=True)
    op = step(rec)
    with pytest.raises(OutcomeUnknown) as caught:
        proxied.save(op)
    # A later re-check (the runtime's background resolver) settles it, once the server
    # process that ran the lost COMMIT is gone.
    pids = [int(caught.value.metadata["backend_pid"])]
    assert direct.resolve_outcome([op], backend_pids=pids) == [op.new]


def test_batch_cut_after_commit_keeps_per_row_results(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    a, b, c = (_created(proxied, w) for w in "abc")
    proxied.save(step(c))
    proxy.arm_cut(forward_commit=True)
    ops = [step(a), step(b), step(c)]
    results = proxied.apply_batch(ops)
    assert proxy.cuts == 1
    assert results[:2] == [ops[0].new, ops[1].new]
    assert isinstance(results[2], Conflict) and results[2].actual_revision == 2
    assert direct.load("a").revision == 2 and direct.load("b").revision == 2


def test_batch_cut_before_commit_fails_only_the_written_rows(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    a, b = (_created(proxied, w) for w in "ab")
    proxied.save(step(b))
    proxy.arm_cut(forward_commit=False)
    results = proxied.apply_batch([step(a), step(b)])
    assert isinstance(results[0], StorageUnavailable)
    assert not isinstance(results[0], OutcomeUnknown)
    assert isinstance(results[1], Conflict)
    assert direct.load("a") == a


def test_resolve_outcome_classifies_each_operation(direct: Repository) -> None:
    rec = _created(direct, "w")
    never_sent = step(rec, state="never")
    assert isinstance(direct.resolve_outcome([never_sent])[0], StorageUnavailable)
    winner = step(rec, state="winner")
    direct.save(winner)
    # Someone else's step owns revision 2: ours cannot have committed.
    lost = direct.resolve_outcome([never_sent])[0]
    assert isinstance(lost, Conflict) and lost.actual_revision == 2
    assert direct.resolve_outcome([winner]) == [winner.new]
    # Far in the future with no witness row: nothing can be said.
    ahead = step(dataclasses.replace(rec, revision=9))
    assert isinstance(direct.resolve_outcome([ahead])[0], OutcomeUnknown)


def test_unreachable_database_is_storage_unavailable() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    repo = PostgresRepository(
        f"postgresql://postgres@127.0.0.1:{port}/postgres", pool_timeout=1.0, connect_timeout=1
    )
    try:
        with pytest.raises(StorageUnavailable):
            repo.ping()
        with pytest.raises(StorageUnavailable):
            repo.load("w")
    finally:
        repo.close()


def test_proxy_detects_commit_in_both_protocols() -> None:
    # A simple query carries its text; a Parse message carries a name, then the text.
    assert _is_end_of_transaction(_cstrings(b"COMMIT\x00", 1)[0]) == "commit"
    assert _is_end_of_transaction(_cstrings(b"\x00commit\x00\x00\x00", 2)[1]) == "commit"
    assert _is_end_of_transaction(b"SELECT 'COMMIT'") == ""


# A write of one statement that is no step (a task's retry, a heartbeat, a release, a
# claim) commits as it runs, outside a transaction block: an answer lost after it was sent
# must not read as "not done", and one lost before cannot be told apart (RETRY_MARKER).


def _leased_task(repo: Repository, wid: str) -> TaskRecord:
    scheduled(repo, wid)
    (leased,) = lease(repo)
    return leased


def _retry(repo: Repository, leased: TaskRecord) -> TaskRecord | None:
    error = {"type": "FLAKY", "message": "again", "details": {}}
    return repo.retry_task(
        leased.workflow_id,
        leased.task_id,
        leased.lease_token or "",
        now=NOW,
        available=NOW + timedelta(seconds=5),
        error=error,
        request_id="r-cut",
    )


def test_a_task_retry_whose_answer_is_lost_is_an_unknown_outcome(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    leased = _leased_task(proxied, "t-after")
    proxy.arm_cut(forward_commit=True, marker=RETRY_MARKER)
    with pytest.raises(OutcomeUnknown):
        _retry(proxied, leased)
    assert proxy.cuts == 1, "the fault was not injected"
    # It did commit: "unavailable" would have told the worker it had not.
    after = direct.get_task("t-after", leased.task_id)
    assert after is not None and after.status is TaskStatus.BACKOFF
    assert after.last_request_id == "r-cut"


def test_a_task_retry_cut_before_it_is_sent_is_unknown_too_and_can_be_sent_again(
    proxy: PgProxy, proxied: Repository, direct: Repository
) -> None:
    leased = _leased_task(proxied, "t-before")
    proxy.arm_cut(forward_commit=False, marker=RETRY_MARKER)
    # The caller cannot tell this cut from the one after the statement: both are unknown.
    with pytest.raises(OutcomeUnknown):
        _retry(proxied, leased)
    assert proxy.cuts == 1, "the fault was not injected"
    after = direct.get_task("t-before", leased.task_id)
    assert after is not None and after.status is TaskStatus.LEASED
    again = _retry(proxied, leased)
    assert again is not None and again.status is TaskStatus.BACKOFF


# A poll's lease commits as its block ends too, whether the claim leased the ready tasks
# in one statement or read them first and leased those the answer has room for; or as its
# one statement runs, when the poll says its room and the tasks surely fit it.
LEASE_MARKER = b"status = 'LEASED', attempt"
CLAIMS = ["chosen", "all", "fitting"]


def _poll(repo: Repository, claim: str) -> list[TaskRecord]:
    choose = None if claim == "all" else (lambda ready: ready)
    room = 4_000_000 if claim == "fitting" else None
    return repo.lease_tasks("payments", NOW, 10, 30.0, choose, room=room)


@pytest.mark.parametrize("claim", CLAIMS)
def test_a_poll_whose_lease_commit_answer_is_lost_is_an_unknown_outcome(
    proxy: PgProxy, proxied: Repository, direct: Repository, claim: str
) -> None:
    scheduled(direct, "p-after")
    proxy.arm_cut(forward_commit=True, marker=LEASE_MARKER)
    with pytest.raises(OutcomeUnknown):
        _poll(proxied, claim)
    assert proxy.cuts == 1, "the fault was not injected"
    # It did commit: the lease runs out unseen, and the reaper takes the task back then.
    after = direct.get_task("p-after", "1")
    assert (after.status, after.attempt) == (TaskStatus.LEASED, 1)
    assert _poll(proxied, claim) == [], "the lost lease still holds the task"
    expired = after.lease_expire_time
    assert expired is not None
    reaped = direct.claim_expired_tasks(expired, expired + timedelta(seconds=30), 10)
    assert [t.workflow_id for t in reaped] == ["p-after"]


@pytest.mark.parametrize("claim", CLAIMS)
def test_a_poll_cut_before_its_lease_commits_leaves_the_task_to_the_next_poll(
    proxy: PgProxy, proxied: Repository, direct: Repository, claim: str
) -> None:
    scheduled(direct, "p-before")
    proxy.arm_cut(forward_commit=False, marker=LEASE_MARKER)
    with pytest.raises(OutcomeUnknown):
        _poll(proxied, claim)
    assert proxy.cuts == 1, "the fault was not injected"
    after = direct.get_task("p-before", "1")
    assert (after.status, after.attempt, after.lease_token) == (TaskStatus.SCHEDULED, 0, None)
    (again,) = _poll(proxied, claim)
    assert (again.workflow_id, again.status, again.attempt) == ("p-before", TaskStatus.LEASED, 1)
