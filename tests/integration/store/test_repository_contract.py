"""The repository contract, run identically against PostgreSQL and SQLite."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from statewrightd.domain import Status
from statewrightd.errors import (
    Conflict,
    InvalidArgument,
    RecordExists,
    RecordNotFound,
    SerializationError,
    StoreError,
)
from statewrightd.store import Repository, open_repository
from statewrightd.store.records import (
    Create,
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    ListOrder,
    RequestRecord,
    Save,
)

T0 = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)


def instance(
    wid: str,
    *,
    revision: int = 1,
    state: str = "draft",
    status: str = "RUNNING",
    context: dict[str, Any] | None = None,
    definition: str = "mail-approval",
) -> InstanceRecord:
    when = T0 + timedelta(milliseconds=revision)
    return InstanceRecord(
        workflow_id=wid,
        definition=definition,
        version=1,
        state=state,
        status=Status(status),
        context={"n": revision} if context is None else context,
        revision=revision,
        error=None,
        create_time=T0,
        update_time=when,
    )


def history_of(rec: InstanceRecord, event: str | None = None) -> HistoryRecord:
    return HistoryRecord(
        workflow_id=rec.workflow_id,
        revision=rec.revision,
        event=event,
        transitions=[{"from": "draft", "to": rec.state, "event": event}],
        state=rec.state,
        status=rec.status,
        context=rec.context,
        error=rec.error,
        time=rec.update_time,
    )


def request_for(rec: InstanceRecord, rid: str) -> RequestRecord:
    return RequestRecord(rid, rec.workflow_id, "ResumeWorkflow", "fp", b"\x00resp", T0)


def create_op(wid: str, request_id: str | None = None, **kw: Any) -> Create:
    rec = instance(wid, **kw)
    req = request_for(rec, request_id) if request_id else None
    return Create(rec, history_of(rec), req)


def save_op(
    base: InstanceRecord,
    *,
    expected: int | None = None,
    state: str = "next",
    context: dict[str, Any] | None = None,
    request_id: str | None = None,
) -> Save:
    rev = base.revision + 1
    new = dataclasses.replace(
        base,
        revision=rev,
        state=state,
        context={"n": rev} if context is None else context,
        update_time=T0 + timedelta(milliseconds=rev),
    )
    req = request_for(new, request_id) if request_id else None
    return Save(new, base.revision if expected is None else expected, history_of(new, "go"), req)


# -- create / load -------------------------------------------------------------------


def test_create_and_load_round_trip(repo: Repository) -> None:
    ctx = {"s": "héllo ✓", "i": -(2**63), "f": 0.1, "b": True, "l": [1, [2, None]], "m": {"k": {}}}
    rec = dataclasses.replace(instance("w-1", context=ctx), error={"code": 9, "message": "x"})
    assert repo.create(Create(rec, history_of(rec))) == rec
    loaded = repo.load("w-1")
    assert loaded == rec
    assert loaded.create_time.utcoffset() == timedelta(0)


def test_load_missing_raises_not_found(repo: Repository) -> None:
    with pytest.raises(RecordNotFound):
        repo.load("nope")


def test_a_read_of_several_instances_gives_each_that_exists_as_load_does(
    repo: Repository,
) -> None:
    ctx = {"s": "héllo ✓", "i": -(2**63), "f": 0.1, "l": [1, [2, None]], "m": {"k": {}}}
    for wid in ("w-a", "w-b"):
        rec = dataclasses.replace(instance(wid, context=ctx), error={"code": 9, "message": "x"})
        repo.create(Create(rec, history_of(rec)))
    found = repo.load_many(["w-b", "nope", "w-a", "w-b"])
    assert sorted(found, key=lambda r: r.workflow_id) == [repo.load("w-a"), repo.load("w-b")]
    assert repo.load_many([]) == []


def test_duplicate_create_raises_record_exists(repo: Repository) -> None:
    repo.create(create_op("w-dup"))
    with pytest.raises(RecordExists):
        repo.create(create_op("w-dup", state="other"))
    assert repo.load("w-dup").state == "draft"
    assert len(repo.history_after("w-dup", 0, 10)) == 1


def test_two_concurrent_creates_have_exactly_one_winner(repo: Repository) -> None:
    for round_ in range(10):
        wid = f"race-{round_}"
        barrier = threading.Barrier(2, timeout=10)

        def attempt(state: str, wid: str = wid, barrier: threading.Barrier = barrier) -> str:
            barrier.wait()
            try:
                repo.create(create_op(wid, state=state))
            except RecordExists:
                return "lost"
            return state

        with ThreadPoolExecutor(2) as pool:
            outcomes = list(pool.map(attempt, ["a", "b"]))
        winners = [o for o in outcomes if o != "lost"]
        assert len(winners) == 1, outcomes
        assert repo.load(wid).state == winners[0]
        assert [h.state for h in repo.history_after(wid, 0, 10)] == winners


# -- compare-and-swap ----------------------------------------------------------------


def test_save_success_conflict_and_not_found(repo: Repository) -> None:
    first = repo.create(create_op("w-cas"))
    op = save_op(first)
    assert repo.save(op) == 2
    assert repo.load("w-cas") == op.new

    with pytest.raises(Conflict) as conflict:
        repo.save(save_op(first, state="stale"))
    assert conflict.value.actual_revision == 2
    assert conflict.value.metadata["actual_revision"] == "2"
    assert repo.load("w-cas") == op.new

    with pytest.raises(RecordNotFound):
        repo.save(save_op(instance("ghost")))


def test_a_save_writes_the_instance_s_version(repo: Repository) -> None:
    """A migration moves an instance to another version of its definition in a save."""
    first = repo.create(create_op("w-migrated"))
    op = save_op(first, state="approval")
    moved = dataclasses.replace(op.new, version=first.version + 1)
    assert repo.save(dataclasses.replace(op, new=moved)) == 2
    loaded = repo.load("w-migrated")
    assert (loaded.version, loaded.state) == (first.version + 1, "approval")


def test_revisions_are_dense_with_one_history_row_each(repo: Repository) -> None:
    rec = repo.create(create_op("w-dense"))
    for _ in range(5):
        op = save_op(rec, state=f"s{rec.revision + 1}")
        assert repo.save(op) == rec.revision + 1
        rec = op.new
    history = repo.history_after("w-dense", 0, 100)
    assert [h.revision for h in history] == [1, 2, 3, 4, 5, 6]
    assert history[-1].state == rec.state == repo.load("w-dense").state
    assert history[-1].context == rec.context
    assert history[-1].transitions == [{"from": "draft", "to": "s6", "event": "go"}]
    assert [h.revision for h in repo.history_after("w-dense", 3, 2)] == [4, 5]
    assert repo.history_after("w-dense", 6, 10) == []


def test_the_revisions_of_many_instances_come_in_one_read(repo: Repository) -> None:
    rec = repo.create(create_op("w-rev-a"))
    for _ in range(2):
        op = save_op(rec, state=f"s{rec.revision + 1}")
        repo.save(op)
        rec = op.new
    repo.create(create_op("w-rev-é"))
    found = repo.instance_revisions(["w-rev-a", "nobody", "w-rev-é", "w-rev-a"])
    assert found == {"w-rev-a": 3, "w-rev-é": 1}
    assert repo.instance_revisions([]) == {}


def test_history_is_written_if_and_only_if_the_state_is(repo: Repository) -> None:
    rec = repo.create(create_op("w-iff"))
    repo.save(save_op(rec))
    with pytest.raises(Conflict):
        repo.save(save_op(rec, state="loser"))
    states = [h.state for h in repo.history_after("w-iff", 0, 10)]
    assert states == ["draft", "next"]
    assert "loser" not in states


def test_request_id_is_recorded_with_the_step_and_not_on_conflict(repo: Repository) -> None:
    rec = repo.create(create_op("w-req", request_id="req-start"))
    start = repo.lookup_request("w-req", "req-start")
    assert start is not None
    assert (start.workflow_id, start.response) == ("w-req", b"\x00resp")

    repo.save(save_op(rec, request_id="req-1"))
    assert repo.lookup_request("w-req", "req-1") is not None

    with pytest.raises(Conflict):
        repo.save(save_op(rec, request_id="req-lost"))
    assert repo.lookup_request("w-req", "req-lost") is None

    # Reusing a request id blocks the whole step: nothing of it is written.
    current = repo.load("w-req")
    with pytest.raises(RecordExists) as used:
        repo.save(save_op(current, request_id="req-1"))
    assert used.value.reason == "REQUEST_EXISTS"
    assert repo.load("w-req") == current
    assert len(repo.history_after("w-req", 0, 10)) == 2


def test_purge_requests_removes_only_old_records(repo: Repository) -> None:
    old = create_op("w-old", request_id="r-old")
    new_rec = instance("w-new")
    new = Create(
        new_rec,
        history_of(new_rec),
        dataclasses.replace(request_for(new_rec, "r-new"), create_time=T0 + timedelta(days=2)),
    )
    repo.create(old)
    repo.create(new)
    assert repo.purge_requests(T0 + timedelta(days=1)) == 1
    assert repo.lookup_request("w-old", "r-old") is None
    assert repo.lookup_request("w-new", "r-new") is not None


# -- listing -------------------------------------------------------------------------


def test_list_paging_is_stable_while_rows_are_inserted(repo: Repository) -> None:
    for i in range(30):
        repo.create(create_op(f"w-{i:03d}", status="WAITING" if i % 3 == 0 else "RUNNING"))
    seen: list[str] = []
    token = ""
    for page_no in range(20):
        page = repo.list(page_size=7, page_token=token)
        seen.extend(r.workflow_id for r in page.items)
        # Concurrent traffic between pages: new rows must never duplicate or hide old ones.
        repo.create(create_op(f"late-{page_no}"))
        token = page.next_page_token
        if not token:
            break
    assert token == "", "paging did not finish"
    assert len(seen) == len(set(seen))
    assert [w for w in seen if w.startswith("w-")] == [f"w-{i:03d}" for i in range(30)]


def test_list_filters_by_status_and_definition(repo: Repository) -> None:
    for i in range(6):
        repo.create(
            create_op(
                f"f-{i}",
                status="WAITING" if i % 2 else "RUNNING",
                definition="a" if i < 3 else "b",
            )
        )
    waiting = repo.list(status="WAITING", page_size=100)
    assert [r.workflow_id for r in waiting.items] == ["f-1", "f-3", "f-5"]
    assert waiting.next_page_token == ""
    both = repo.list(definition="b", status="RUNNING", page_size=100)
    assert [r.workflow_id for r in both.items] == ["f-4"]
    first = repo.list(definition="a", page_size=2)
    assert len(first.items) == 2 and first.next_page_token
    rest = repo.list(definition="a", page_size=2, page_token=first.next_page_token)
    assert [r.workflow_id for r in rest.items] == ["f-2"]


def made(wid: str, created: int, updated: int | None = None, **kw: Any) -> Create:
    """An instance created ``created`` minutes after T0 and last changed ``updated``
    minutes after it (as late as it was created when not said)."""
    rec = dataclasses.replace(
        instance(wid, **kw),
        create_time=T0 + timedelta(minutes=created),
        update_time=T0 + timedelta(minutes=created if updated is None else updated),
    )
    return Create(rec, history_of(rec), None)


NEWEST = ListOrder("create_time", descending=True)


def listed(repo: Repository, order: ListOrder, size: int, **kw: Any) -> list[str]:
    """Every id of a listing in ``order``, read ``size`` at a time."""
    seen: list[str] = []
    token = ""
    for _ in range(100):
        page = repo.list(page_size=size, page_token=token, order=order, **kw)
        seen.extend(r.workflow_id for r in page.items)
        token = page.next_page_token
        if not token:
            return seen
    raise AssertionError("paging did not finish")


def test_newest_first_paging_is_stable_while_rows_are_inserted(repo: Repository) -> None:
    for i in range(20):
        repo.create(made(f"w-{i:03d}", created=i))
    seen: list[str] = []
    token = ""
    for page_no in range(20):
        page = repo.list(page_size=6, page_token=token, order=NEWEST)
        seen.extend(r.workflow_id for r in page.items)
        # Newer instances made between pages belong before the first page: never on a
        # later one, never shifting what a later page holds.
        repo.create(made(f"late-{page_no}", created=1000 + page_no))
        token = page.next_page_token
        if not token:
            break
    assert token == "", "paging did not finish"
    assert seen == [f"w-{i:03d}" for i in reversed(range(20))]
    assert listed(repo, NEWEST, 50)[:2] == [f"late-{page_no}", f"late-{page_no - 1}"]


def test_each_order_lists_by_its_time_with_ties_by_id(repo: Repository) -> None:
    # (id, created, updated): "b" and "c" were created together, "c" and "a" last changed
    # together; each tie goes by id, in the order's direction.
    for wid, created, updated in [("a", 1, 9), ("b", 2, 5), ("c", 2, 9), ("d", 3, 4)]:
        repo.create(made(wid, created, updated))
    orders = {
        order.spelled: listed(repo, order, 2)
        for order in (
            ListOrder("create_time"),
            NEWEST,
            ListOrder("update_time"),
            ListOrder("update_time", descending=True),
        )
    }
    assert orders == {
        "create_time": ["a", "b", "c", "d"],
        "create_time desc": ["d", "c", "b", "a"],
        "update_time": ["d", "b", "a", "c"],
        "update_time desc": ["c", "a", "b", "d"],
    }
    assert listed(repo, ListOrder(), 3) == listed(repo, ListOrder("create_time"), 1)


def test_id_prefix_matches_the_start_of_ids_exactly(repo: Repository) -> None:
    # '_' is a wildcard to LIKE, and SQLite's LIKE ignores case: neither may leak in.
    for i, wid in enumerate(["a_b-1", "axb-2", "A_b-3", "a_b-4", "za_b-5", "a_"]):
        repo.create(made(wid, created=i, status="WAITING" if i == 3 else "RUNNING"))
    assert listed(repo, NEWEST, 1, id_prefix="a_b") == ["a_b-4", "a_b-1"]
    assert listed(repo, ListOrder(), 10, id_prefix="a_") == ["a_b-1", "a_b-4", "a_"]
    assert listed(repo, NEWEST, 10, id_prefix="a_b", status="WAITING") == ["a_b-4"]
    assert listed(repo, NEWEST, 10, id_prefix="nothing") == []


def test_page_token_is_bound_to_its_order_and_prefix(repo: Repository) -> None:
    for i in range(3):
        repo.create(made(f"o-{i}", created=i))
    token = repo.list(page_size=1, order=NEWEST).next_page_token
    assert [
        r.workflow_id for r in repo.list(page_size=1, page_token=token, order=NEWEST).items
    ] == ["o-1"]
    for other in ({"order": ListOrder()}, {"order": NEWEST, "id_prefix": "o-"}):
        with pytest.raises(InvalidArgument):
            repo.list(page_size=1, page_token=token, **other)
    plain = repo.list(page_size=1).next_page_token
    with pytest.raises(InvalidArgument):
        repo.list(page_size=1, page_token=plain, order=NEWEST)


@pytest.mark.parametrize("token", ["garbage!", "djE6eDp5", "dj-6MTpx"])
def test_bad_page_token_is_invalid_argument(repo: Repository, token: str) -> None:
    with pytest.raises(InvalidArgument):
        repo.list(page_size=5, page_token=token)


def test_page_token_is_bound_to_its_filters(repo: Repository) -> None:
    for i in range(3):
        repo.create(create_op(f"b-{i}"))
    token = repo.list(page_size=1).next_page_token
    with pytest.raises(InvalidArgument):
        repo.list(status="RUNNING", page_size=1, page_token=token)


# -- values --------------------------------------------------------------------------


class _Opaque:
    pass


@pytest.mark.parametrize(
    "bad",
    [
        math.nan,
        math.inf,
        -math.inf,
        b"bytes",
        {1, 2},
        (1, 2),
        _Opaque(),
        datetime(2026, 1, 1, tzinfo=UTC),
        {1: "int key"},
        "nul\x00char",
        "\ud800",
        2**64,
    ],
    ids=lambda v: type(v).__name__,
)
def test_unsupported_values_raise_serialization_error(repo: Repository, bad: object) -> None:
    with pytest.raises(SerializationError):
        repo.create(create_op("w-bad", context={"v": bad}))
    with pytest.raises(RecordNotFound):
        repo.load("w-bad")

    rec = repo.create(create_op("w-ok"))
    with pytest.raises(SerializationError):
        repo.save(save_op(rec, context={"nested": [{"v": bad}]}))
    assert repo.load("w-ok") == rec
    assert len(repo.history_after("w-ok", 0, 10)) == 1


def test_naive_timestamps_are_rejected(repo: Repository) -> None:
    rec = dataclasses.replace(instance("w-naive"), update_time=datetime(2026, 1, 1))
    with pytest.raises(SerializationError):
        repo.create(Create(rec, history_of(instance("w-naive"))))


# -- concurrency ---------------------------------------------------------------------


def test_fifty_racing_writers_get_one_winner_per_revision(db_url: str) -> None:
    repo = open_repository(db_url, migrate=False, pool_size=50)
    try:
        repo.create(create_op("hot", context={"count": 0, "by": []}))
        target = 120
        wins: Counter[int] = Counter()
        lock = threading.Lock()
        deadline = time.monotonic() + 120  # a bound, not a goal: a busy machine is slow
        start = threading.Barrier(50, timeout=20)

        def writer(me: int) -> None:
            start.wait()
            attempts = 0
            while time.monotonic() < deadline and attempts < 5_000:
                attempts += 1
                cur = repo.load("hot")
                if cur.revision >= target:
                    return
                ctx = {"count": cur.context["count"] + 1, "by": [*cur.context["by"], me]}
                try:
                    rev = repo.save(save_op(cur, context=ctx, state=f"by-{me}"))
                except Conflict:
                    continue
                with lock:
                    wins[rev] += 1

        with ThreadPoolExecutor(50) as pool:
            list(pool.map(writer, range(50)))

        final = repo.load("hot")
        assert final.revision == target
        # Exactly one winner per revision 2..target, and every win is counted: no lost update.
        assert sorted(wins) == list(range(2, target + 1))
        assert set(wins.values()) == {1}
        assert final.context["count"] == target - 1
        assert len(final.context["by"]) == target - 1
        history = repo.history_after("hot", 0, 1000)
        assert [h.revision for h in history] == list(range(1, target + 1))
        assert [h.state for h in history[1:]] == [f"by-{w}" for w in final.context["by"]]
    finally:
        repo.close()


def test_two_replicas_batching_the_same_instances_in_opposite_orders(db_url: str) -> None:
    # Two replicas' group-commit batches (PostgreSQL: the set-based statements) racing
    # over the same instances, listed in opposite orders: no batch fails, no step is lost
    # or applied twice, and every save either commits or reports the conflict it lost.
    ids = [f"shared-{i:02d}" for i in range(24)]
    setup = open_repository(db_url, migrate=False)
    for wid in ids:
        setup.create(create_op(wid, context={"n": 0}))
    setup.close()
    replicas = [open_repository(db_url, migrate=False, pool_size=2) for _ in range(2)]
    failures: list[StoreError] = []
    committed: Counter[str] = Counter()
    lock = threading.Lock()
    start = threading.Barrier(2, timeout=20)

    def replica(me: int) -> None:
        repo = replicas[me]
        order = ids if me == 0 else list(reversed(ids))
        start.wait()
        for _ in range(30):
            ops: list[Save] = []
            for wid in order:
                cur = repo.load(wid)
                ops.append(save_op(cur, context={"n": cur.context["n"] + 1}, state=f"r{me}"))
            for op, result in zip(ops, repo.apply_batch(ops), strict=True):
                with lock:
                    if isinstance(result, InstanceRecord):
                        committed[op.new.workflow_id] += 1
                    elif not isinstance(result, Conflict):
                        failures.append(result)

    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(replica, range(2)))
        assert failures == []
        reader = replicas[0]
        for wid in ids:
            final = reader.load(wid)
            # Dense revisions, and every committed save counted exactly once.
            assert final.revision == 1 + committed[wid] == 1 + final.context["n"]
            history = reader.history_after(wid, 0, 1000)
            assert [h.revision for h in history] == list(range(1, final.revision + 1))
    finally:
        for repo in replicas:
            repo.close()


# -- group commit batches ------------------------------------------------------------


def assert_batch_begins_as_planned(
    ops: list[Create | Save], results: list[InstanceRecord | StoreError]
) -> None:
    """The batch tests' first five rows: a new instance created, a save that lost its
    compare-and-swap (to revision 2), one that won it, one of a missing instance, and the
    create of an instance that exists (not a request id that does)."""
    assert len(results) == len(ops)
    assert results[0] == ops[0].record if isinstance(ops[0], Create) else False
    assert isinstance(results[1], Conflict) and results[1].actual_revision == 2
    assert isinstance(results[2], InstanceRecord) and results[2].revision == 2
    assert isinstance(results[3], RecordNotFound)
    assert isinstance(results[4], RecordExists) and results[4].reason != "REQUEST_EXISTS"


def test_batch_rows_succeed_or_fail_on_their_own(repo: Repository) -> None:
    a = repo.create(create_op("a"))
    b = repo.create(create_op("b"))
    repo.save(save_op(b))  # b is now at 2, so a save expecting 1 conflicts
    repo.create(create_op("c", request_id="taken"))
    ops: list[Create | Save] = [
        create_op("new-1", request_id="r-new"),
        save_op(b, state="conflicting"),
        save_op(a, request_id="r-a"),
        save_op(instance("missing")),
        create_op("a"),
        save_op(repo.load("c"), request_id="taken"),
        create_op("bad", context={"x": math.nan}),
        create_op("new-2"),
    ]
    results = repo.apply_batch(ops)
    assert_batch_begins_as_planned(ops, results)
    assert isinstance(results[5], RecordExists) and results[5].reason == "REQUEST_EXISTS"
    assert isinstance(results[6], SerializationError)
    assert isinstance(results[7], InstanceRecord)

    assert repo.load("a").revision == 2 and repo.load("b").revision == 2
    assert repo.load("c").revision == 1
    assert [h.state for h in repo.history_after("b", 0, 10)] == ["draft", "next"]
    assert repo.lookup_request("a", "r-a") is not None
    assert repo.lookup_request("new-1", "r-new") is not None
    with pytest.raises(RecordNotFound):
        repo.load("bad")


def test_batch_without_request_ids_rows_succeed_or_fail_on_their_own(repo: Repository) -> None:
    # No request ids and one op per instance: PostgreSQL takes its set-based statements.
    a = repo.create(create_op("sa"))
    b = repo.create(create_op("sb"))
    repo.save(save_op(b))
    failed = dataclasses.replace(
        instance("sf"), status=Status.FAILED, error={"reason": "R", "message": "m", "metadata": {}}
    )
    ops: list[Create | Save] = [
        create_op("s-new-1"),
        save_op(b, state="conflicting"),
        save_op(a, state="moved"),
        save_op(instance("s-missing")),
        create_op("sa"),
        create_op("s-bad", context={"x": math.nan}),
        Create(failed, history_of(failed), None),
    ]
    results = repo.apply_batch(ops)
    assert_batch_begins_as_planned(ops, results)
    assert isinstance(results[5], SerializationError)
    assert results[6] == failed

    assert repo.load("sa").state == "moved" and repo.load("sb").revision == 2
    assert repo.load("sf").error == failed.error
    assert [(h.revision, h.state) for h in repo.history_after("sa", 0, 10)] == [
        (1, "draft"),
        (2, "moved"),
    ]
    assert repo.history_after("sf", 0, 10)[0].error == failed.error
    with pytest.raises(RecordNotFound):
        repo.load("s-bad")


def test_batch_with_request_ids_rows_succeed_or_fail_on_their_own(repo: Repository) -> None:
    # Request ids and one op per instance: PostgreSQL takes its set-based statements that
    # record them, which must refuse a row for its request id as the per-row ones do.
    a = repo.create(create_op("ra"))
    b = repo.create(create_op("rb"))
    repo.save(save_op(b))
    repo.create(create_op("rx"))
    taken = repo.create(create_op("rc", request_id="taken"))
    ops: list[Create | Save] = [
        create_op("r-new", request_id="r-new"),
        save_op(b, state="conflicting", request_id="r-b"),
        save_op(a, request_id="r-a"),
        save_op(instance("r-missing"), request_id="r-m"),
        create_op("rx", request_id="r-x"),
        save_op(taken, request_id="taken"),
        create_op("r-bad", request_id="r-bad", context={"x": math.nan}),
        create_op("r-plain"),
    ]
    results = repo.apply_batch(ops)
    assert_batch_begins_as_planned(ops, results)
    assert isinstance(results[5], RecordExists) and results[5].reason == "REQUEST_EXISTS"
    assert isinstance(results[6], SerializationError)
    assert isinstance(results[7], InstanceRecord)

    assert repo.load("ra").revision == 2 and repo.load("rc").revision == 1
    assert [h.state for h in repo.history_after("rb", 0, 10)] == ["draft", "next"]
    assert repo.lookup_request("ra", "r-a") is not None
    assert repo.lookup_request("r-new", "r-new") is not None
    # What a refused row carried is not recorded.
    assert repo.lookup_request("rb", "r-b") is None
    assert repo.lookup_request("rx", "r-x") is None


def test_batch_rows_keep_awkward_text_exactly(repo: Repository) -> None:
    # PostgreSQL's set-based statements carry a batch as one JSON document: quotes,
    # backslashes, control characters and non-BMP text must come back byte for byte.
    odd = 'q"uote \\back\\slash\n\ttab \x01 é ✓ 🚀 \u2028'
    ctx = {odd: [odd, {"k": odd}], "n": 2**62, "f": -0.5}
    ops: list[Create | Save] = [
        create_op(f"odd-{i}{odd}", state=f"s{odd}", context=ctx) for i in range(3)
    ]
    results = repo.apply_batch(ops)
    assert results == [op.record for op in ops if isinstance(op, Create)]
    bases = [r for r in results if isinstance(r, InstanceRecord)]
    saves: list[Create | Save] = [save_op(b, state=f"t{odd}", context={"v": odd}) for b in bases]
    saved = repo.apply_batch(saves)
    assert saved == [op.new for op in saves if isinstance(op, Save)]
    for op in saves:
        assert isinstance(op, Save)
        assert repo.load(op.new.workflow_id) == op.new
        first, second = repo.history_after(op.new.workflow_id, 0, 10)
        assert first.state == f"s{odd}" and first.context == ctx
        assert second.state == f"t{odd}" and second.context == {"v": odd}


def test_history_row_keeps_its_own_context(repo: Repository) -> None:
    # 1 and 1.0 compare equal but are stored differently: the history row's context is
    # never replaced by the instance row's merely because they are ==.
    rec = instance("own", context={"n": 1})
    history = dataclasses.replace(history_of(rec), context={"n": 1.0})
    repo.create(Create(rec, history, None))
    assert repo.load("own").context == {"n": 1}
    stored = repo.history_after("own", 0, 10)[0].context["n"]
    assert stored == 1.0 and isinstance(stored, float)


def test_batch_applies_steps_of_one_instance_in_order(repo: Repository) -> None:
    rec = repo.create(create_op("seq"))
    first = save_op(rec, state="one")
    second = save_op(first.new, state="two")
    results = repo.apply_batch([first, second])
    assert results == [first.new, second.new]
    assert [h.revision for h in repo.history_after("seq", 0, 10)] == [1, 2, 3]


def test_empty_batch(repo: Repository) -> None:
    assert repo.apply_batch([]) == []


def test_batch_with_duplicate_request_ids_keeps_the_first(repo: Repository) -> None:
    d1 = instance("d1")
    first = save_op(d1, request_id="same")
    results = repo.apply_batch(
        [create_op("d1"), first, save_op(first.new, request_id="same"), create_op("d2")]
    )
    assert isinstance(results[1], InstanceRecord)
    assert isinstance(results[2], StoreError) and results[2].reason == "REQUEST_EXISTS"
    assert isinstance(results[3], InstanceRecord)
    assert repo.load("d1").revision == 2


def test_request_ids_are_unique_per_instance(repo: Repository) -> None:
    """The same request id on two instances is two requests: each is recorded with its
    own instance, and each instance answers it alone."""
    results = repo.apply_batch(
        [create_op("u1", request_id="same"), create_op("u2", request_id="same")]
    )
    assert all(isinstance(r, InstanceRecord) for r in results)
    one, two = repo.lookup_request("u1", "same"), repo.lookup_request("u2", "same")
    assert one is not None and one.workflow_id == "u1"
    assert two is not None and two.workflow_id == "u2"
    assert repo.lookup_request("u3", "same") is None


# -- definitions ---------------------------------------------------------------------


def _definition(name: str, version: int, digest: str, source_name: str) -> DefinitionRecord:
    return DefinitionRecord(name, version, f"name: {name}\n# {digest}", digest, source_name, T0)


def test_definitions_are_immutable_per_name_and_version(repo: Repository) -> None:
    v1 = _definition("mail", 1, "d1", "mail.yaml")
    assert repo.put_definition(v1) == v1
    # Same content again (e.g. a restart): idempotent, the stored record comes back.
    again = dataclasses.replace(v1, source_name="copy.yaml", create_time=T0 + timedelta(days=1))
    assert repo.put_definition(again) == v1
    with pytest.raises(RecordExists) as clash:
        repo.put_definition(_definition("mail", 1, "other", "edited.yaml"))
    assert clash.value.metadata["existing_source"] == "mail.yaml"
    assert clash.value.metadata["new_source"] == "edited.yaml"
    assert "mail.yaml" in clash.value.message and "edited.yaml" in clash.value.message
    assert repo.get_definition("mail", 1) == v1

    v2 = _definition("mail", 2, "d2", "mail-v2.yaml")
    repo.put_definition(v2)
    repo.put_definition(_definition("alpha", 1, "a", "alpha.yaml"))
    assert repo.get_definition("mail") == v2
    assert repo.get_definition("mail", None) == v2
    assert [(d.name, d.version) for d in repo.list_definitions()] == [
        ("alpha", 1),
        ("mail", 1),
        ("mail", 2),
    ]
    with pytest.raises(RecordNotFound):
        repo.get_definition("mail", 3)
    with pytest.raises(RecordNotFound):
        repo.get_definition("nothing")


# -- lifecycle -----------------------------------------------------------------------


def test_ping_succeeds_on_a_migrated_database(repo: Repository) -> None:
    repo.ping()


_Op = TypeVar("_Op", Create, Save)


def test_history_rows_keep_what_their_step_took(repo: Repository) -> None:
    # Every way a step reaches the store: one create and one save (PostgreSQL: a
    # statement each), a batch without request ids and one with them (its set-based
    # statements, with and without request records). A row without input stays without.
    odd = 'q"uote \\back\\slash\n é 🚀'
    taken = {"approved": True, "note": odd, "items": [1, 2.5, None, {"k": odd}], "n": 2**62}

    def took(op: _Op, value: dict[str, Any] | None) -> _Op:
        return dataclasses.replace(op, history=dataclasses.replace(op.history, input=value))

    repo.create(took(create_op("in-one"), {"start": odd}))
    one = repo.load("in-one")
    repo.save(took(save_op(one), taken))
    set_based = [took(create_op(f"in-set-{i}"), {"i": i, "v": odd}) for i in range(3)]
    assert all(isinstance(r, InstanceRecord) for r in repo.apply_batch(set_based))
    saves = [took(save_op(repo.load(f"in-set-{i}")), taken if i else None) for i in range(3)]
    assert all(isinstance(r, InstanceRecord) for r in repo.apply_batch(saves))
    finished = dataclasses.replace(
        repo.load("in-set-0"), revision=3, status=Status.CANCELLED, state="next"
    )
    requested: list[Create | Save] = [
        took(create_op("in-req", request_id="r-1"), {"x": odd}),
        took(
            Save(finished, 2, history_of(finished), request_for(finished, "r-2")), {"reason": odd}
        ),
    ]
    assert all(isinstance(r, InstanceRecord) for r in repo.apply_batch(requested))

    assert [h.input for h in repo.history_after("in-one", 0, 10)] == [{"start": odd}, taken]
    for i in range(3):
        first, second, *_ = repo.history_after(f"in-set-{i}", 0, 10)
        assert first.input == {"i": i, "v": odd}
        assert second.input == (taken if i else None)
    (row,) = repo.history_after("in-req", 0, 10)
    assert row.input == {"x": odd}
    last = repo.history_after("in-set-0", 0, 10)[-1]
    # A finished instance's last row may store no context; its input is its own.
    assert last.status == Status.CANCELLED and last.input == {"reason": odd}
    assert last.context == finished.context
