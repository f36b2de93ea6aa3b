"""What a server process remembers of the leases it handed out."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from statewrightd.app.lease_memory import Lease, LeaseMemory
from statewrightd.store.records import TaskRecord
from tests.support.store_records import task_record

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def leased(wid: str, token: str = "t1", task_id: str = "1") -> TaskRecord:
    return task_record(
        wid, task_id, NOW, leased=token, lease_expire_time=NOW + timedelta(seconds=30)
    )


def test_a_lease_is_taken_once_and_only_with_its_token() -> None:
    memory = LeaseMemory()
    task = leased("w")
    memory.leased([task])
    assert memory.take("w", "1", "another") is None
    assert len(memory) == 1, "a late call with an old token leaves the lease remembered"
    assert memory.take("w", "1", "t1") == Lease(task)
    assert memory.take("w", "1", "t1") is None, "a completion ends the lease"


def test_a_heartbeat_through_this_process_replaces_what_it_remembers() -> None:
    memory = LeaseMemory()
    memory.leased([leased("w")])
    beaten = dataclasses.replace(
        leased("w"), heartbeat_details={"done": 2}, update_time=NOW + timedelta(seconds=1)
    )
    memory.renewed(beaten)
    memory.renewed(leased("unknown"))  # a lease handed out elsewhere is not taken up
    assert memory.take("w", "1", "t1") == Lease(beaten)
    assert memory.take("unknown", "1", "t1") is None


def test_a_new_lease_of_the_same_task_replaces_the_old_and_forget_drops_it() -> None:
    memory = LeaseMemory()
    memory.leased([leased("w", "old")])
    memory.leased([leased("w", "new")])
    assert memory.take("w", "1", "old") is None
    memory.forget("w", "1")
    assert memory.take("w", "1", "new") is None


def test_the_oldest_leases_are_forgotten_past_the_capacity() -> None:
    memory = LeaseMemory(capacity=3)
    memory.leased([leased(f"w{n}") for n in range(5)])
    assert len(memory) == 3
    assert memory.take("w0", "1", "t1") is None and memory.take("w1", "1", "t1") is None
    assert all(memory.take(f"w{n}", "1", "t1") is not None for n in (2, 3, 4))


def test_an_instance_read_with_the_lease_is_taken_with_it_and_outlives_a_heartbeat() -> None:
    memory = LeaseMemory()
    instance = object()  # what the poll read: the memory only keeps it beside the task
    memory.leased([leased("w"), leased("v")], {"w": instance})  # type: ignore[dict-item]
    memory.renewed(dataclasses.replace(leased("w"), heartbeat_details={"done": 1}))
    taken = memory.take("w", "1", "t1")
    assert taken is not None and taken.instance is instance
    assert taken.task.heartbeat_details == {"done": 1}
    other = memory.take("v", "1", "t1")
    assert other is not None and other.instance is None, "an instance the poll did not read"
