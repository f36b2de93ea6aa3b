"""What a server process remembers of the leases it handed out."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import cast

from statewrightd.app.lease_memory import Lease, LeaseMemory
from statewrightd.engine.loading import Found
from statewrightd.store.records import TaskRecord
from tests.support.store_records import task_record

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def leased(wid: str, token: str = "t1", task_id: str = "1") -> TaskRecord:
    return task_record(
        wid, task_id, NOW, leased=token, lease_expire_time=NOW + timedelta(seconds=30)
    )


def read(context_bytes: int) -> Found:
    """An instance as a poll read it, its context measured (only that is looked at)."""
    return cast(Found, SimpleNamespace(context_bytes=context_bytes))


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
    instance = read(10)  # what the poll read: the memory keeps it beside the task
    memory.leased([leased("w"), leased("v")], {"w": instance})
    memory.renewed(dataclasses.replace(leased("w"), heartbeat_details={"done": 1}))
    taken = memory.take("w", "1", "t1")
    assert taken is not None and taken.instance is instance
    assert taken.task.heartbeat_details == {"done": 1}
    other = memory.take("v", "1", "t1")
    assert other is not None and other.instance is None, "an instance the poll did not read"


def test_the_oldest_leases_are_forgotten_past_the_budget_of_their_instances_contexts() -> None:
    memory = LeaseMemory(budget=1000)
    memory.leased([leased(f"w{n}") for n in range(4)], {f"w{n}": read(300) for n in range(4)})
    assert len(memory) == 3 and memory.context_bytes == 900
    assert memory.take("w0", "1", "t1") is None
    memory.leased([leased("bare")])  # no instance read: it weighs nothing
    assert len(memory) == 4 and memory.context_bytes == 900
    taken = memory.take("w1", "1", "t1")
    assert taken is not None and taken.weight == 300 and memory.context_bytes == 600
    memory.forget("w2", "1")
    assert memory.context_bytes == 300


def test_a_heartbeat_keeps_the_instance_and_its_weight_and_makes_the_lease_the_newest() -> None:
    memory = LeaseMemory(budget=700)
    memory.leased([leased("w"), leased("v")], {"w": read(300), "v": read(300)})
    memory.renewed(dataclasses.replace(leased("w"), heartbeat_details={"done": 1}))
    assert memory.context_bytes == 600
    memory.leased([leased("u")], {"u": read(300)})  # over: v is now the oldest
    assert memory.take("v", "1", "t1") is None
    assert memory.take("w", "1", "t1") is not None and memory.context_bytes == 300
