"""Schedules in the store, run identically against PostgreSQL, SQLite, Citus and memory:
whole documents written by compare-and-swap on a version, claimed like timers."""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.domain import Status
from statewrightd.errors import RecordExists
from statewrightd.store import Repository
from statewrightd.store.records import Save
from tests.support.store_records import created, history

T0 = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
LEASE = timedelta(seconds=5)


def test_a_schedule_is_created_once_read_listed_and_deleted(repo: Repository) -> None:
    made = repo.insert_schedule("b", {"spec": {"interval": 60}, "n": "é"}, T0, T0)
    assert (made.schedule_id, made.version, made.next_fire_time) == ("b", 1, T0)
    assert made.document == {"spec": {"interval": 60}, "n": "é"}
    with pytest.raises(RecordExists):
        repo.insert_schedule("b", {}, None, T0)
    repo.insert_schedule("a", {}, None, T0)
    repo.insert_schedule("c", {}, None, T0)
    assert [s.schedule_id for s in repo.list_schedules("", 2)] == ["a", "b"]
    assert [s.schedule_id for s in repo.list_schedules("b", 10)] == ["c"]
    assert repo.get_schedule("b") == made and repo.get_schedule("zz") is None
    assert repo.schedule_count() == 3
    assert repo.delete_schedule("b") and not repo.delete_schedule("b")
    assert repo.get_schedule("b") is None


def test_a_write_names_the_version_it_read(repo: Repository) -> None:
    repo.insert_schedule("s", {"k": 1}, T0, T0)
    later = T0 + timedelta(seconds=1)
    written = repo.put_schedule("s", 1, {"k": 2}, later, later)
    assert written is not None and (written.version, written.document) == (2, {"k": 2})
    assert written.next_fire_time == later and written.update_time == later
    assert repo.put_schedule("s", 1, {"k": 3}, None, later) is None  # version 2 now
    assert repo.put_schedule("gone", 1, {}, None, later) is None
    assert repo.get_schedule("s").document == {"k": 2}  # type: ignore[union-attr]


def test_due_schedules_are_claimed_once_until_the_claim_lapses_or_a_write_releases_it(
    repo: Repository,
) -> None:
    for i in range(6):
        repo.insert_schedule(f"s{i}", {}, T0 + timedelta(seconds=i), T0)
    repo.insert_schedule("never", {}, None, T0)
    now = T0 + timedelta(seconds=3)
    with ThreadPoolExecutor(4) as pool:
        rounds = list(pool.map(lambda _: repo.claim_schedules(now, now + LEASE, 10), range(4)))
    claimed = sorted(s.schedule_id for found in rounds for s in found)
    assert claimed == ["s0", "s1", "s2", "s3"]  # due by now, each by one claim only
    assert repo.next_schedule_due(now) == T0 + timedelta(seconds=4)
    assert repo.claim_schedules(now, now + LEASE, 10) == []
    # A write (the fire's record) releases the claim with it.
    repo.put_schedule("s0", 1, {}, T0, now)
    assert [s.schedule_id for s in repo.claim_schedules(now, now + LEASE, 10)] == ["s0"]
    # A claim that lapses lets another replica claim the schedule again.
    lapsed = now + LEASE
    again = sorted(s.schedule_id for s in repo.claim_schedules(lapsed, lapsed + LEASE, 10))
    assert again == ["s0", "s1", "s2", "s3", "s4", "s5"]


def test_a_claims_instances_are_read_in_one_call_by_id(repo: Repository) -> None:
    created(repo, "sched-a@1", T0)
    finished = created(repo, "sched-b@1", T0)
    done = dataclasses.replace(
        finished, revision=2, state="done", status=Status.COMPLETED, update_time=T0
    )
    repo.save(Save(done, 1, history(done)))
    found = repo.instance_statuses(["sched-a@1", "nobody", "sched-b@1", "sched-a@1", "é-x"])
    assert found == {"sched-a@1": Status.RUNNING, "sched-b@1": Status.COMPLETED}
    assert repo.instance_statuses([]) == {}
