"""Batch operations in the store, identically on PostgreSQL, SQLite, Citus and memory: a
batch is created with all its items at once, leased by one replica at a time, worked
through in workflow id order, each item's end counted once, cancelled, listed newest
first."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.errors import RecordExists
from statewrightd.store import Repository
from statewrightd.store.records import BatchItemEnd, BatchItemFailure, BatchRecord

T0 = datetime(2026, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
LEASE = timedelta(seconds=30)
DOCUMENT = {"operation": {"retry": {}}, "reason": "réessayer", "rate": 50.0}


def batch(
    batch_id: str, at: datetime = T0, document: dict[str, object] | None = None
) -> BatchRecord:
    # The store sets what it keeps itself: state, counts and version.
    return BatchRecord(batch_id, document or DOCUMENT, "", 0, 0, 0, 0, at, at)


def ids(n: int, prefix: str = "w-") -> list[str]:
    return [f"{prefix}{i:04d}" for i in range(n)]


def failure(workflow_id: str) -> BatchItemEnd:
    return BatchItemEnd(
        workflow_id, True, "FAILED_PRECONDITION", "NOT_FAILED", f"{workflow_id}: no"
    )


def test_a_batch_is_created_once_with_every_item_pending(repo: Repository) -> None:
    made = repo.insert_batch(batch("b1"), ["w-2", "w-0", "w-1"])
    assert made == BatchRecord("b1", DOCUMENT, "RUNNING", 3, 0, 0, 1, T0, T0, None)
    assert repo.get_batch("b1") == made
    assert repo.pending_items("b1", "", 10) == ["w-0", "w-1", "w-2"]
    with pytest.raises(RecordExists) as taken:
        repo.insert_batch(batch("b1", T0 + LEASE, {"other": 1}), ["x-1"])
    assert taken.value.metadata == {"batch_id": "b1"}
    # The refused insert wrote nothing: neither a row nor an item.
    assert repo.get_batch("b1") == made
    assert repo.pending_items("b1", "", 10) == ["w-0", "w-1", "w-2"]
    assert repo.get_batch("nobody") is None
    assert repo.pending_items("nobody", "", 10) == []


def test_a_batch_that_matched_nothing_is_completed_when_it_is_created(repo: Repository) -> None:
    made = repo.insert_batch(batch("empty"), [])
    assert (made.state, made.matched, made.end_time, made.version) == ("COMPLETED", 0, T0, 1)
    assert repo.claim_batch("r1", T0, T0 + LEASE) is None


def test_a_claim_is_exclusive_until_it_lapses_and_its_owner_renews_it(repo: Repository) -> None:
    repo.insert_batch(batch("old", T0), ["w-1"])
    repo.insert_batch(batch("new", T0 + timedelta(seconds=1)), ["w-1"])
    now = T0 + timedelta(seconds=2)
    first = repo.claim_batch("r1", now, now + LEASE)
    assert first is not None and first.batch_id == "old"  # the oldest first
    second = repo.claim_batch("r2", now, now + LEASE)
    assert second is not None and second.batch_id == "new"
    assert repo.claim_batch("r3", now, now + LEASE) is None
    # The owner renews its own; the other's is not taken from it meanwhile.
    later = now + LEASE / 2
    renewed = repo.claim_batch("r2", later, later + LEASE)
    assert renewed is not None and renewed.batch_id == "new"
    # r1's lease lapses (r2's renewed one does not): another replica takes over.
    lapsed = now + LEASE
    taken = repo.claim_batch("r3", lapsed, lapsed + LEASE)
    assert taken is not None and taken.batch_id == "old"
    assert repo.claim_batch("r1", lapsed, lapsed + LEASE) is None


def test_replicas_claiming_at_once_never_hold_the_same_batch(repo: Repository) -> None:
    for i in range(3):
        repo.insert_batch(batch(f"b{i}", T0 + timedelta(seconds=i)), ["w-1"])
    owners = [f"r{i}" for i in range(6)]
    with ThreadPoolExecutor(6) as pool:
        found = list(pool.map(lambda o: repo.claim_batch(o, T0, T0 + LEASE), owners))
    held = sorted(b.batch_id for b in found if b is not None)
    assert held == ["b0", "b1", "b2"]


def test_a_cancelled_or_completed_batch_is_never_claimed(repo: Repository) -> None:
    repo.insert_batch(batch("done"), ["w-1"])
    repo.insert_batch(batch("stopped"), ["w-1"])
    repo.end_items("done", [BatchItemEnd("w-1")], T0)
    repo.cancel_batch("stopped", {"cancel_reason": "no"}, T0)
    assert repo.claim_batch("r1", T0 + LEASE, T0 + 2 * LEASE) is None


def test_pending_items_are_paged_by_workflow_id_past_those_that_ended(repo: Repository) -> None:
    items = ids(10)
    repo.insert_batch(batch("b"), list(reversed(items)))
    assert repo.pending_items("b", "", 4) == items[:4]
    assert repo.pending_items("b", items[3], 4) == items[4:8]
    assert repo.pending_items("b", items[7], 4) == items[8:]
    repo.end_items("b", [BatchItemEnd(items[0]), failure(items[1]), BatchItemEnd(items[5])], T0)
    assert repo.pending_items("b", "", 4) == [items[2], items[3], items[4], items[6]]
    assert repo.pending_items("b", items[4], 100) == items[6:]


def test_each_item_ends_once_and_the_last_completes_the_batch(repo: Repository) -> None:
    items = ids(4)
    repo.insert_batch(batch("b"), items)
    at = T0 + timedelta(seconds=5)
    first = repo.end_items("b", [BatchItemEnd(items[0]), failure(items[1])], at)
    assert first == BatchRecord("b", DOCUMENT, "RUNNING", 4, 1, 1, 2, T0, at, None)
    # The same ends again (a replica that died before it saw them recorded), an item
    # twice in one call, and an id that is not an item: nothing is counted twice.
    again = repo.end_items("b", [BatchItemEnd(items[0]), failure(items[1]), failure("w-x")], at)
    assert again == first
    end = at + timedelta(seconds=1)
    last = repo.end_items("b", [failure(items[2]), BatchItemEnd(items[3]), failure(items[3])], end)
    assert last == BatchRecord("b", DOCUMENT, "COMPLETED", 4, 2, 2, 3, T0, end, end)
    assert repo.pending_items("b", "", 10) == []
    assert repo.end_items("nobody", [BatchItemEnd("w-1")], end) is None


def test_ends_recorded_at_once_are_counted_once(repo: Repository) -> None:
    items = ids(40)
    repo.insert_batch(batch("b"), items)
    start = threading.Barrier(4)

    def end(k: int) -> None:
        start.wait()
        # Overlapping pages in different orders: most items are in two of them.
        page = items[k * 10 : k * 10 + 20] if k % 2 else list(reversed(items[k * 10 : k * 10 + 20]))
        repo.end_items("b", [BatchItemEnd(w) if int(w[2:]) % 3 else failure(w) for w in page], T0)

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(end, range(4)))
    counted = repo.get_batch("b")
    assert counted is not None
    failed = sum(1 for w in items if int(w[2:]) % 3 == 0)
    assert (counted.done, counted.failed, counted.state) == (40 - failed, failed, "COMPLETED")
    assert len(repo.batch_failures("b", "", 100)) == failed


def test_failures_are_recorded_and_paged_by_workflow_id(repo: Repository) -> None:
    items = ids(6)
    repo.insert_batch(batch("b"), items)
    at = T0 + timedelta(seconds=3)
    repo.end_items("b", [failure(w) for w in reversed(items[::2])] + [BatchItemEnd(items[1])], at)
    page = repo.batch_failures("b", "", 2)
    assert page == [
        BatchItemFailure(items[0], "FAILED_PRECONDITION", "NOT_FAILED", f"{items[0]}: no", at),
        BatchItemFailure(items[2], "FAILED_PRECONDITION", "NOT_FAILED", f"{items[2]}: no", at),
    ]
    assert [f.workflow_id for f in repo.batch_failures("b", items[2], 2)] == [items[4]]
    assert repo.batch_failures("nobody", "", 2) == []


def test_a_running_batch_is_cancelled_once(repo: Repository) -> None:
    repo.insert_batch(batch("b"), ids(3))
    repo.claim_batch("r1", T0, T0 + LEASE)
    at = T0 + timedelta(seconds=1)
    stopped = {**DOCUMENT, "cancel_reason": "enough"}
    cancelled = repo.cancel_batch("b", stopped, at)
    assert cancelled == BatchRecord("b", stopped, "CANCELLED", 3, 0, 0, 2, T0, at, at)
    # Cancelled is final: a second cancel answers it as it is.
    assert repo.cancel_batch("b", {"other": 1}, at + LEASE) == cancelled
    assert repo.claim_batch("r1", at, at + LEASE) is None
    # An item the runner had under way when the cancel came still ends, and is counted.
    late = repo.end_items("b", [BatchItemEnd("w-0000")], at + LEASE)
    assert late is not None and (late.state, late.done, late.end_time) == ("CANCELLED", 1, at)
    repo.insert_batch(batch("finished"), [])
    finished = repo.get_batch("finished")
    assert repo.cancel_batch("finished", stopped, at) == finished
    assert repo.cancel_batch("nobody", stopped, at) is None


def test_batches_are_listed_newest_first_by_state_and_paged(repo: Repository) -> None:
    times = [T0, T0 + timedelta(seconds=1), T0 + timedelta(seconds=1), T0 + timedelta(seconds=2)]
    for name, at in zip(("a", "b", "c", "d"), times, strict=True):
        repo.insert_batch(batch(name, at), ["w-1"])
    repo.cancel_batch("c", DOCUMENT, T0 + LEASE)
    listed = [b.batch_id for b in repo.list_batches(None, 10)]
    assert listed == ["d", "c", "b", "a"]  # equal create times: by id, descending
    page = repo.list_batches(None, 2)
    assert [b.batch_id for b in page] == ["d", "c"]
    after = (page[-1].create_time, page[-1].batch_id)
    assert [b.batch_id for b in repo.list_batches(after, 2)] == ["b", "a"]
    running = repo.list_batches(None, 10, "RUNNING")
    assert [b.batch_id for b in running] == ["d", "b", "a"]
    after = (running[0].create_time, running[0].batch_id)
    assert [b.batch_id for b in repo.list_batches(after, 1, "RUNNING")] == ["b"]
    assert [b.batch_id for b in repo.list_batches(None, 10, "CANCELLED")] == ["c"]


def test_thousands_of_items_are_created_and_worked_through_in_pages(repo: Repository) -> None:
    items = ids(5000)
    made = repo.insert_batch(batch("big"), items)
    assert made.matched == 5000
    after, seen = "", 0
    while page := repo.pending_items("big", after, 1000):
        ended = repo.end_items("big", [BatchItemEnd(w) for w in page], T0)
        assert ended is not None
        after, seen = page[-1], seen + len(page)
    assert seen == 5000
    assert repo.get_batch("big") == BatchRecord(
        "big", DOCUMENT, "COMPLETED", 5000, 5000, 0, 6, T0, T0, T0
    )


def test_finished_batches_are_purged_whole_oldest_first_and_running_ones_kept(
    repo: Repository,
) -> None:
    second = timedelta(seconds=1)
    repo.insert_batch(batch("old"), ids(3))
    repo.cancel_batch("old", DOCUMENT, T0 + second)
    repo.insert_batch(batch("done"), ids(2, "d-"))
    repo.end_items("done", [BatchItemEnd("d-0000"), failure("d-0001")], T0 + 2 * second)
    repo.insert_batch(batch("empty", T0 + 3 * second), [])  # ended when it was created
    repo.insert_batch(batch("running"), ids(4, "r-"))
    repo.end_items("running", [BatchItemEnd("r-0000")], T0 + second)
    # Nothing ended by then: nothing goes.
    assert repo.purge_batches(T0, 100).rows == {}
    # A limit below the oldest batch's rows still removes it, whole, and nothing after it.
    purged = repo.purge_batches(T0 + LEASE, 1)
    assert purged.rows == {"batch_operations": 1, "batch_items": 3}
    assert repo.get_batch("old") is None
    assert repo.pending_items("old", "", 10) == []
    assert repo.get_batch("done") is not None
    # The rest that ended by then, within the limit's rows: "done" (3 rows), "empty" (1).
    purged = repo.purge_batches(T0 + 2 * second, 100)
    assert purged.rows == {"batch_operations": 1, "batch_items": 2}
    assert repo.batch_failures("done", "", 10) == []
    assert repo.get_batch("empty") is not None
    assert repo.purge_batches(T0 + LEASE, 100).rows == {"batch_operations": 1, "batch_items": 0}
    # A running batch is never purged, however old, and its items stay pending.
    assert repo.purge_batches(T0 + 1000 * LEASE, 100).rows == {}
    assert [b.batch_id for b in repo.list_batches(None, 10)] == ["running"]
    assert repo.pending_items("running", "", 10) == ["r-0001", "r-0002", "r-0003"]
