"""Flow control in the store, the same on every backend: a queue's limits, its keys'
limits, priorities with aging, round robin between keys, closed keys, token buckets."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from statewrightd.domain import TaskStatus
from statewrightd.store import Repository
from statewrightd.store.flow import AGING, QueueConfig
from statewrightd.store.records import Create, TaskChange, TaskRecord
from tests.integration.store.test_tasks_contract import NOW, history, instance, task

Q = "limited"


def put(
    repo: Repository,
    wid: str,
    *,
    key: str | None = None,
    priority: int = 3,
    available: datetime = NOW,
) -> TaskRecord:
    rec = instance(wid)
    new = dataclasses.replace(
        task(rec, Q, available=available), priority=priority, concurrency_key=key
    )
    repo.create(Create(rec, history(rec), tasks=TaskChange(schedule=new)))
    return new


def lease(repo: Repository, at: datetime = NOW, n: int = 10) -> list[TaskRecord]:
    return repo.lease_tasks(Q, at, n, 30.0)


def finish(repo: Repository, leased: TaskRecord, at: datetime = NOW) -> None:
    """Ends the attempt (back to BACKOFF, far in the future): the lease is free again."""
    back = repo.retry_task(
        leased.workflow_id,
        leased.task_id,
        leased.lease_token or "",
        now=at,
        available=at + timedelta(hours=1),
        error={"type": "X", "message": "", "details": {}},
    )
    assert back is not None and back.status is TaskStatus.BACKOFF


def configure(repo: Repository, **limits: float) -> QueueConfig | None:
    return repo.set_queue_config(QueueConfig(Q, **limits), NOW)  # type: ignore[arg-type]


def test_a_config_is_stored_read_and_removed(repo: Repository) -> None:
    assert repo.queue_configs(Q) == []
    stored = configure(repo, max_leased=5, rate=2.5, key_max_leased=1)
    assert stored is not None and (stored.max_leased, stored.rate) == (5, 2.5)
    (found,) = repo.queue_configs(Q)
    assert found.config.key_max_leased == 1 and found.config.bucket == 3
    assert found.tokens_at(NOW) == 3.0
    assert [s.config.queue for s in repo.queue_configs()] == [Q]
    assert configure(repo) is None, "no limit at all removes the config"
    assert repo.queue_configs() == []


def test_a_queue_never_has_more_than_max_leased_under_lease(repo: Repository) -> None:
    for i in range(6):
        put(repo, f"f-max-{i}")
    configure(repo, max_leased=2)
    first = lease(repo)
    assert [t.workflow_id for t in first] == ["f-max-0", "f-max-1"]
    assert lease(repo) == []
    finish(repo, first[0])
    assert [t.workflow_id for t in lease(repo)] == ["f-max-2"], "a slot frees as a task ends"
    configure(repo)
    assert len(lease(repo)) == 3, "without a config, every ready task goes"


def test_one_key_never_has_more_than_key_max_leased(repo: Repository) -> None:
    for i, key in enumerate("aabbc"):
        put(repo, f"f-key-{i}", key=key, available=NOW - timedelta(microseconds=10 - i))
    put(repo, "f-key-none")
    configure(repo, key_max_leased=1)
    leased = lease(repo)
    assert sorted(t.concurrency_key or "-" for t in leased) == ["-", "a", "b", "c"]
    assert lease(repo) == []
    finish(repo, next(t for t in leased if t.concurrency_key == "a"))
    assert [t.workflow_id for t in lease(repo)] == ["f-key-1"]


def test_keys_take_turns(repo: Repository) -> None:
    """Key a's tasks are all older, yet one poll after another serves a and b in turn."""
    for i in range(3):
        put(repo, f"f-rr-a{i}", key="a", available=NOW - timedelta(seconds=3 - i))
    for i in range(3):
        put(repo, f"f-rr-b{i}", key="b", available=NOW - timedelta(milliseconds=10 - i))
    configure(repo, max_leased=100)
    order = [lease(repo, NOW + timedelta(milliseconds=i), 1)[0].concurrency_key for i in range(6)]
    assert order == ["a", "b", "a", "b", "a", "b"]


def test_higher_priorities_go_first_and_lower_ones_age(repo: Repository) -> None:
    for i in range(3):
        put(repo, f"f-p3-{i}", available=NOW - timedelta(seconds=1))
    put(repo, "f-p1", priority=1)
    put(repo, "f-p5-old", priority=5, available=NOW - timedelta(seconds=4 * AGING + 1))
    configure(repo, max_leased=100)
    leased = [t.workflow_id for t in lease(repo)]
    # The priority 5 task has waited 4 x AGING: it ranks 1 now, and it is older.
    assert leased == ["f-p5-old", "f-p1", "f-p3-0", "f-p3-1", "f-p3-2"]


def test_a_priority_1_task_jumps_a_backlog(repo: Repository) -> None:
    for i in range(8):
        put(repo, f"f-back-{i}", available=NOW - timedelta(milliseconds=10 - i))
    configure(repo, max_leased=100)
    assert [t.workflow_id for t in lease(repo, n=2)] == ["f-back-0", "f-back-1"]
    put(repo, "f-vip", priority=1)
    assert [t.workflow_id for t in lease(repo, n=1)] == ["f-vip"]


def test_a_closed_key_waits_and_others_flow(repo: Repository) -> None:
    put(repo, "f-closed-a", key="a", available=NOW - timedelta(seconds=1))
    put(repo, "f-closed-b", key="b")
    configure(repo, max_leased=10)
    repo.close_key(Q, "a", NOW + timedelta(seconds=2))
    repo.close_key(Q, "a", NOW + timedelta(seconds=1))  # an earlier time does not shorten it
    (closed,) = repo.closed_keys(Q, NOW)
    assert (closed.key, closed.closed_until) == ("a", NOW + timedelta(seconds=2))
    assert [t.workflow_id for t in lease(repo)] == ["f-closed-b"]
    assert lease(repo, NOW + timedelta(seconds=1.9)) == []
    assert [t.workflow_id for t in lease(repo, NOW + timedelta(seconds=2))] == ["f-closed-a"]
    assert repo.closed_keys(Q, NOW + timedelta(seconds=2)) == []


def test_a_rate_spends_tokens_that_refill(repo: Repository) -> None:
    for i in range(10):
        put(repo, f"f-rate-{i}", available=NOW - timedelta(seconds=1))
    configure(repo, rate=2.0, burst=3)
    assert len(lease(repo)) == 3, "a full bucket"
    assert lease(repo, NOW + timedelta(milliseconds=400)) == []
    assert len(lease(repo, NOW + timedelta(milliseconds=500))) == 1, "one token in 0.5 s"
    assert len(lease(repo, NOW + timedelta(seconds=2.5))) == 3, "never more than the burst"


def test_a_key_rate_spends_each_keys_tokens(repo: Repository) -> None:
    for i in range(3):
        put(repo, f"f-kr-a{i}", key="a", available=NOW - timedelta(seconds=1))
        put(repo, f"f-kr-b{i}", key="b", available=NOW - timedelta(seconds=1))
    configure(repo, key_rate=1.0)
    assert sorted(t.concurrency_key or "" for t in lease(repo)) == ["a", "b"]
    assert lease(repo, NOW + timedelta(milliseconds=900)) == []
    assert len(lease(repo, NOW + timedelta(seconds=1))) == 2


def test_key_counts_show_backlog_and_leases(repo: Repository) -> None:
    put(repo, "f-count-1", key="a")
    put(repo, "f-count-2", key="a")
    put(repo, "f-count-3")
    configure(repo, key_max_leased=1)
    lease(repo)
    counts = {(c.queue, c.key): (c.ready, c.leased) for c in repo.key_counts(NOW)}
    assert counts == {(Q, "a"): (1, 1)}
