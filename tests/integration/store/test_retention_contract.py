"""Retention in the store, run identically against PostgreSQL and SQLite.

Finished instances past their expire_time are removed with everything of theirs, in
bounded batches, by any number of replicas at once without doing the same work twice;
request records answer retries only inside their window; DeleteWorkflow's removal takes
one finished instance at the revision its caller saw.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from statewrightd.domain import Status
from statewrightd.errors import Conflict, RecordExists, RecordLive, RecordNotFound
from statewrightd.store import Repository, open_repository
from statewrightd.store.records import (
    ChildLink,
    Create,
    HistoryRecord,
    InstanceRecord,
    RequestRecord,
    Save,
    TaskChange,
    TaskRecord,
    TimerChange,
    TimerRecord,
)
from tests.support.store_records import task_record

T0 = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
HOUR = timedelta(hours=1)
TABLES = (
    "workflow_instances",
    "workflow_history",
    "workflow_timers",
    "workflow_tasks",
    "workflow_requests",
)


def instance(
    wid: str,
    *,
    revision: int = 1,
    status: Status = Status.RUNNING,
    state: str = "draft",
    expire_time: datetime | None = None,
    context: dict[str, Any] | None = None,
) -> InstanceRecord:
    return InstanceRecord(
        workflow_id=wid,
        definition="retained",
        version=1,
        state=state,
        status=status,
        context={"n": revision, "who": wid} if context is None else context,
        revision=revision,
        error=None,
        create_time=T0,
        update_time=T0 + timedelta(milliseconds=revision),
        expire_time=expire_time,
    )


def history_of(
    rec: InstanceRecord, transitions: list[dict[str, Any]] | None = None
) -> HistoryRecord:
    return HistoryRecord(
        workflow_id=rec.workflow_id,
        revision=rec.revision,
        event=None if rec.revision == 1 else "go",
        transitions=[{"from": "draft", "to": rec.state, "event": None}]
        if transitions is None
        else transitions,
        state=rec.state,
        status=rec.status,
        context=rec.context,  # the very dict, as the runtime hands it over
        error=None,
        time=rec.update_time,
    )


def request(
    rec: InstanceRecord,
    rid: str,
    at: datetime = T0,
    method: str = "Start",
    window: timedelta | None = None,
) -> RequestRecord:
    """A step's request record; ``window``: how long records of its id answer retries (the
    engine stamps what that means at ``at``)."""
    return RequestRecord(
        rid,
        rec.workflow_id,
        method,
        f"fp-{method}",
        b'{"revision": 1}',
        at,
        live_after=None if window is None else at - window,
    )


def finished(wid: str, expire: datetime, request_id: str | None = None) -> Create:
    """An instance that finished in its first step (an automatic chain)."""
    rec = instance(wid, status=Status.COMPLETED, state="done", expire_time=expire)
    return Create(rec, history_of(rec), request(rec, request_id) if request_id else None)


def task_of(rec: InstanceRecord) -> TaskRecord:
    return task_record(
        rec.workflow_id,
        str(rec.revision),
        T0,
        state=rec.state,
        input={"order": rec.workflow_id},
        retry={"initial_interval": 1.0, "backoff": 2.0, "max_interval": 60.0},
    )


def timer_of(rec: InstanceRecord) -> TimerRecord:
    return TimerRecord(
        rec.workflow_id, f"{rec.revision}.0", rec.revision, 0, "late", "1h", T0 + HOUR
    )


def raw_rows(db_url: str, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """A query straight on the database, around the repository (to see how rows are kept)."""
    if db_url.startswith("postgresql://"):
        with psycopg.connect(db_url) as conn:
            return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params).fetchall()]
    lite = sqlite3.connect(Path(db_url.removeprefix("sqlite:///")))
    try:
        return [tuple(r) for r in lite.execute(sql, params).fetchall()]
    finally:
        lite.close()


def counts(db_url: str, workflow_id: str) -> dict[str, int]:
    return {
        table: raw_rows(
            db_url, f"SELECT count(*) FROM {table} WHERE workflow_id = ?", (workflow_id,)
        )[0][0]
        for table in TABLES
    }


def lived_and_finished(repo: Repository, wid: str, expire: datetime) -> InstanceRecord:
    """An instance with a timer, a task and two request records, then finished: every
    kind of row an instance owns."""
    first = instance(wid, state="charging")
    repo.create(
        Create(
            first,
            history_of(first),
            request(first, f"{wid}-start"),
            TimerChange(arm=(timer_of(first),)),
            TaskChange(schedule=task_of(first)),
        )
    )
    done = dataclasses.replace(
        first,
        revision=2,
        state="done",
        status=Status.COMPLETED,
        context={"n": 2, "who": wid},
        update_time=T0 + timedelta(milliseconds=2),
        expire_time=expire,
    )
    repo.save(Save(done, 1, history_of(done), request(done, f"{wid}-resume", method="Resume")))
    return done


# -- expiry ----------------------------------------------------------------------------


def test_a_finished_instance_goes_with_everything_of_it_once_due(
    repo: Repository, db_url: str
) -> None:
    done = lived_and_finished(repo, "w-all", T0 + HOUR)
    assert repo.load("w-all").expire_time == T0 + HOUR
    before = counts(db_url, "w-all")
    # The finishing step carried a request id (each row its own statement on PostgreSQL):
    # its history row keeps its context too (a repair may step the instance again).
    stored = raw_rows(
        db_url,
        "SELECT context IS NULL FROM workflow_history WHERE workflow_id = ? AND revision = 2",
        ("w-all",),
    )
    assert [bool(r[0]) for r in stored] == [False]
    assert repo.history_after("w-all", 1, 10)[0].context == done.context
    assert before == {
        t: (2 if t in ("workflow_history", "workflow_requests") else 1) for t in TABLES
    }

    early = repo.purge_expired(T0 + HOUR - timedelta(microseconds=1), 100)
    assert early.workflow_ids == () and repo.load("w-all") == done

    purged = repo.purge_expired(T0 + HOUR, 100)
    assert purged.workflow_ids == ("w-all",)
    assert purged.rows == before
    assert counts(db_url, "w-all") == dict.fromkeys(TABLES, 0)
    with pytest.raises(RecordNotFound):
        repo.load("w-all")
    assert repo.history_after("w-all", 0, 10) == []
    assert repo.lookup_request("w-all", "w-all-start") is None
    tombstone = repo.lookup_tombstone("w-all")
    assert tombstone is not None
    assert (tombstone.expire_time, tombstone.removed_time) == (T0 + HOUR, T0 + HOUR)
    assert repo.purge_expired(T0 + 2 * HOUR, 100).workflow_ids == ()


def test_live_instances_are_never_purged(repo: Repository) -> None:
    # Only a finishing step sets expire_time; even a live row that carried one stays.
    for status in (Status.RUNNING, Status.WAITING):
        rec = instance(f"live-{status}", status=status, expire_time=T0)
        repo.create(Create(rec, history_of(rec)))
    repo.create(finished("old", T0))
    assert repo.purge_expired(T0 + 100 * HOUR, 100).workflow_ids == ("old",)
    assert repo.load("live-RUNNING").status is Status.RUNNING
    assert repo.load("live-WAITING").status is Status.WAITING


def test_instances_without_an_expire_time_stay(repo: Repository) -> None:
    repo.create(finished("kept", T0))
    rec = instance("no-expiry", status=Status.COMPLETED)
    repo.create(Create(rec, history_of(rec)))
    assert repo.purge_expired(T0 + 1000 * HOUR, 100).workflow_ids == ("kept",)
    assert repo.load("no-expiry").expire_time is None


def test_the_purge_takes_the_oldest_first_in_bounded_batches(repo: Repository) -> None:
    repo.apply_batch([finished(f"b{i}", T0 + i * HOUR) for i in (3, 1, 4, 0, 2)])
    now = T0 + 10 * HOUR
    assert repo.purge_expired(now, 2).workflow_ids == ("b0", "b1")
    assert repo.purge_expired(now, 2).workflow_ids == ("b2", "b3")
    last = repo.purge_expired(now, 2)
    assert last.workflow_ids == ("b4",) and last.rows["workflow_history"] == 1
    assert repo.purge_expired(now, 2).workflow_ids == ()


def test_each_instance_is_due_at_its_own_time(repo: Repository) -> None:
    # Per-definition retention reaches the store as each instance's expire_time.
    repo.apply_batch([finished("short", T0 + HOUR), finished("long", T0 + 48 * HOUR)])
    assert repo.purge_expired(T0 + 2 * HOUR, 100).workflow_ids == ("short",)
    assert repo.load("long").expire_time == T0 + 48 * HOUR
    assert repo.purge_expired(T0 + 48 * HOUR, 100).workflow_ids == ("long",)


def test_retention_counts_report_what_is_overdue(repo: Repository) -> None:
    repo.apply_batch([finished(f"c{i}", T0 + i * HOUR, f"rc{i}") for i in range(4)])
    counted = repo.retention_counts(T0 + 2 * HOUR, T0 + timedelta(seconds=1))
    assert counted.overdue_instances == 3
    assert counted.oldest_instance_due == T0
    assert counted.overdue_requests == 4 and counted.oldest_request_time == T0
    capped = repo.retention_counts(T0 + 2 * HOUR, T0, cap=2)
    assert (capped.overdue_instances, capped.overdue_requests) == (2, 2)
    none = repo.retention_counts(T0 - HOUR, T0 - HOUR)
    assert none.overdue_instances == none.overdue_requests == 0
    assert none.oldest_instance_due is None and none.oldest_request_time is None


def test_tombstones_are_purged_by_age(repo: Repository) -> None:
    repo.apply_batch([finished("t1", T0), finished("t2", T0 + HOUR)])
    repo.purge_expired(T0, 100)
    repo.purge_expired(T0 + HOUR, 100)
    assert repo.purge_tombstones(T0, limit=10) == 1
    assert repo.lookup_tombstone("t1") is None and repo.lookup_tombstone("t2") is not None
    assert repo.purge_tombstones(T0 + HOUR, limit=10) == 1
    assert repo.lookup_tombstone("t2") is None


def test_an_id_used_again_after_its_purge_is_a_new_instance(repo: Repository) -> None:
    repo.create(finished("again", T0))
    repo.purge_expired(T0, 10)
    repo.create(finished("again", T0 + 5 * HOUR))
    assert repo.load("again").expire_time == T0 + 5 * HOUR
    repo.purge_expired(T0 + 5 * HOUR, 10)
    tombstone = repo.lookup_tombstone("again")
    assert tombstone is not None and tombstone.expire_time == T0 + 5 * HOUR


# -- history contexts -----------------------------------------------------------------


def test_a_finished_instances_last_history_row_keeps_its_own_context(
    repo: Repository, db_url: str
) -> None:
    moves: list[dict[str, Any]] = [
        {"from": "draft", "to": "review", "event": None},
        {"from": "review", "to": "send", "event": "approve"},
        {"from": "send", "to": "__finish__", "event": None},
    ]
    first = instance("h1", state="review", context={"topic": "ü", "n": [1, 2.5, None]})
    repo.create(Create(first, history_of(first, moves[:1])))
    done = dataclasses.replace(
        first,
        revision=2,
        state="send",
        status=Status.COMPLETED,
        context={"topic": "ü", "n": [1, 2.5, None], "sent": True},
        update_time=T0 + timedelta(seconds=1),
        expire_time=T0 + HOUR,
    )
    repo.save(Save(done, 1, history_of(done, moves[1:])))
    rows = repo.history_after("h1", 0, 10)
    assert [h.transitions for h in rows] == [moves[:1], moves[1:]]
    assert [h.context for h in rows] == [first.context, done.context]
    stored = raw_rows(
        db_url,
        "SELECT revision, context IS NULL FROM workflow_history WHERE workflow_id = ?"
        " ORDER BY revision",
        ("h1",),
    )
    # Kept whole: a repair (retry, reset) steps a finished instance again, after which
    # the instance row holds another context.
    assert [(r, bool(null)) for r, null in stored] == [(1, False), (2, False)]


def test_a_last_row_with_a_context_of_its_own_keeps_it(repo: Repository) -> None:
    rec = instance("h2", status=Status.FAILED, expire_time=T0 + HOUR)
    own = dataclasses.replace(history_of(rec), context={"other": 1})
    repo.create(Create(rec, own))
    assert repo.history_after("h2", 0, 10)[0].context == {"other": 1}


def test_transitions_that_do_not_fit_the_compact_form_are_kept_as_they_are(
    repo: Repository,
) -> None:
    odd: list[dict[str, Any]] = [
        {"from": "a b", "to": "c", "event": None},
        {"from": "c", "to": "d", "event": "x@y"},
    ]
    rec = instance("h3")
    repo.create(Create(rec, history_of(rec, odd)))
    assert repo.history_after("h3", 0, 10)[0].transitions == odd


# -- request records -------------------------------------------------------------------


MINUTE = timedelta(minutes=1)


def test_a_request_record_answers_only_inside_its_window(repo: Repository) -> None:
    windowed = repo
    first = instance("r1")
    windowed.create(Create(first, history_of(first), request(first, "rid", window=MINUTE)))
    assert windowed.lookup_request("r1", "rid", live_after=T0 - timedelta(seconds=59)) is not None
    assert windowed.lookup_request("r1", "rid", live_after=T0) is None
    assert windowed.lookup_request("r1", "rid") is not None  # no window asked for: any record

    # Inside the window the id is taken: the retry is answered from the record.
    inside = dataclasses.replace(first, revision=2, state="inside")
    with pytest.raises(RecordExists) as taken:
        windowed.save(
            Save(
                inside,
                1,
                history_of(inside),
                request(inside, "rid", T0 + timedelta(seconds=59), window=MINUTE),
            )
        )
    assert taken.value.reason == "REQUEST_EXISTS"
    assert windowed.load("r1") == first

    # After it the id is free: the step runs and records the id afresh.
    later = T0 + timedelta(minutes=1)
    after = dataclasses.replace(first, revision=2, state="after")
    windowed.save(
        Save(after, 1, history_of(after), request(after, "rid", later, "Resume", window=MINUTE))
    )
    record = windowed.lookup_request("r1", "rid", live_after=later - timedelta(minutes=1))
    assert record is not None
    assert (record.workflow_id, record.method, record.create_time) == ("r1", "Resume", later)


def test_a_save_records_an_expired_request_id_afresh(repo: Repository) -> None:
    windowed = repo
    first = instance("s1")
    windowed.create(Create(first, history_of(first), request(first, "sid", window=MINUTE)))
    nxt = dataclasses.replace(first, revision=2, state="next", update_time=T0 + HOUR)
    saved = Save(nxt, 1, history_of(nxt), request(nxt, "sid", T0 + HOUR, "Signal", MINUTE))
    assert windowed.save(saved) == 2
    record = windowed.lookup_request("s1", "sid")
    assert record is not None and (record.method, record.create_time) == ("Signal", T0 + HOUR)


def test_request_records_are_purged_in_bounded_batches(repo: Repository) -> None:
    repo.apply_batch([finished(f"q{i}", T0 + 100 * HOUR, f"rq{i}") for i in range(3)])
    assert repo.purge_requests(T0, limit=2) == 2
    assert repo.purge_requests(T0, limit=2) == 1
    assert repo.purge_requests(T0, limit=2) == 0
    assert repo.load("q0").workflow_id == "q0"  # the instances stay


# -- DeleteWorkflow --------------------------------------------------------------------


def test_delete_removes_one_finished_instance_and_leaves_no_tombstone(
    repo: Repository, db_url: str
) -> None:
    lived_and_finished(repo, "d1", T0 + 1000 * HOUR)
    lived_and_finished(repo, "d2", T0 + 1000 * HOUR)
    removed = repo.delete_workflow("d1", 2)
    assert removed.workflow_ids == ("d1",)
    assert removed.rows["workflow_history"] == 2 and removed.rows["workflow_requests"] == 2
    assert counts(db_url, "d1") == dict.fromkeys(TABLES, 0)
    assert repo.lookup_tombstone("d1") is None
    assert repo.load("d2").revision == 2
    with pytest.raises(RecordNotFound):
        repo.delete_workflow("d1")


def test_delete_takes_away_the_tombstone_of_an_earlier_instance(repo: Repository) -> None:
    repo.create(finished("d3", T0))
    repo.purge_expired(T0, 10)
    assert repo.lookup_tombstone("d3") is not None
    repo.create(finished("d3", T0 + HOUR))
    repo.delete_workflow("d3")
    assert repo.lookup_tombstone("d3") is None


def test_delete_refuses_a_live_instance_and_another_revision(repo: Repository) -> None:
    live = instance("d4", status=Status.WAITING)
    repo.create(Create(live, history_of(live)))
    with pytest.raises(RecordLive) as refused:
        repo.delete_workflow("d4")
    assert refused.value.reason == "WORKFLOW_NOT_FINISHED"
    assert refused.value.metadata["status"] == "WAITING"
    lived_and_finished(repo, "d5", T0 + HOUR)
    with pytest.raises(Conflict) as moved:
        repo.delete_workflow("d5", 1)
    assert moved.value.actual_revision == 2
    assert repo.load("d4").revision == 1 and repo.load("d5").revision == 2


# -- replicas --------------------------------------------------------------------------


def test_two_replicas_purge_together_without_conflict_or_double_work(db_url: str) -> None:
    total = 400
    seed = open_repository(db_url, migrate=False)
    try:
        for start in range(0, total, 100):
            ops = [
                finished(f"p{i:04d}", T0 + timedelta(seconds=i), f"rp{i}")
                for i in range(start, start + 100)
            ]
            assert all(isinstance(r, InstanceRecord) for r in seed.apply_batch(ops))
    finally:
        seed.close()
    replicas = [open_repository(db_url, migrate=False, pool_size=4) for _ in range(2)]
    barrier = threading.Barrier(2, timeout=30)
    now = T0 + timedelta(hours=2)

    def purge(repo: Repository) -> tuple[list[str], int]:
        barrier.wait()
        removed: list[str] = []
        requests = 0
        for _ in range(total):  # bounded: each round removes at least one, or ends
            batch = repo.purge_expired(now, 25)
            if not batch.workflow_ids:
                break
            removed.extend(batch.workflow_ids)
            requests += batch.rows["workflow_requests"]
        return removed, requests

    try:
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(purge, replicas))
        left = replicas[0].retention_counts(now, T0 - HOUR)
    finally:
        for replica in replicas:
            replica.close()
    (a, a_requests), (b, b_requests) = results
    assert not set(a) & set(b)
    assert sorted(a + b) == [f"p{i:04d}" for i in range(total)]
    assert a_requests + b_requests == total
    assert left.overdue_instances == 0


def test_a_finished_child_stays_until_its_parent_has_taken_its_end(repo: Repository) -> None:
    repo.apply_batch([finished("child", T0), finished("loose", T0), finished("gone", T0)])
    repo.link_child(ChildLink("child", "parent", "1", "verify", T0))
    repo.link_child(ChildLink("gone", "parent", "2", "verify", T0))
    late = T0 + 100 * HOUR
    # Due long ago, but its parent has not taken its end: retention keeps it.
    assert repo.purge_expired(late, 100).workflow_ids == ("loose",)
    untaken = repo.untaken_children(10)
    assert [link.workflow_id for link in untaken] == ["child", "gone"]
    assert repo.untaken_children(1) == untaken[:1]
    assert repo.take_children(["gone", "nobody"]) == 1
    assert repo.take_children(["gone"]) == 0  # taken once
    assert repo.purge_expired(late, 100).workflow_ids == ("gone",)
    assert [link.workflow_id for link in repo.untaken_children(10)] == ["child"]
    assert repo.take_children(["child"]) == 1
    assert repo.purge_expired(late, 100).workflow_ids == ("child",)
    assert repo.untaken_children(10) == []


def test_a_live_child_is_never_offered_to_be_taken(repo: Repository) -> None:
    rec = instance("running-child", status=Status.WAITING)
    repo.create(Create(rec, history_of(rec)))
    repo.link_child(ChildLink("running-child", "parent", "1", "verify", T0))
    repo.link_child(ChildLink("unstarted", "parent", "2", "verify", T0))
    assert repo.untaken_children(10) == []
