"""Durable timers in the store, run identically against PostgreSQL and SQLite.

A step arms, disarms and fires timers in its own compare-and-swap transaction; replicas
claim due timers with a lease; a fired or consumed timer is gone.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.domain import Status, TraceContext
from statewrightd.errors import Conflict, RecordNotFound, SerializationError, TimerGone
from statewrightd.store import Repository, open_repository
from statewrightd.store.records import (
    Create,
    HistoryRecord,
    InstanceRecord,
    Save,
    TimerChange,
    TimerRecord,
)

T0 = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


def instance(wid: str, revision: int = 1, state: str = "waiting") -> InstanceRecord:
    return InstanceRecord(
        workflow_id=wid,
        definition="timed",
        version=1,
        state=state,
        status=Status.WAITING,
        context={"n": revision},
        revision=revision,
        error=None,
        create_time=T0,
        update_time=T0 + timedelta(milliseconds=revision),
    )


def timer(rec: InstanceRecord, transition: int, due: datetime) -> TimerRecord:
    return TimerRecord(
        workflow_id=rec.workflow_id,
        timer_id=f"{rec.revision}.{transition}",
        revision=rec.revision,
        transition=transition,
        target="escalated",
        after="48h",
        due_time=due,
    )


def history(rec: InstanceRecord, armed: tuple[TimerRecord, ...] = ()) -> HistoryRecord:
    return HistoryRecord(
        workflow_id=rec.workflow_id,
        revision=rec.revision,
        event=None,
        transitions=[],
        state=rec.state,
        status=rec.status,
        context=rec.context,
        error=None,
        time=rec.update_time,
        timers=[{"timer_id": t.timer_id, "due_time": t.due_time.isoformat()} for t in armed]
        or None,
    )


def create(wid: str, *dues: datetime) -> tuple[InstanceRecord, tuple[TimerRecord, ...]]:
    rec = instance(wid)
    armed = tuple(timer(rec, i + 1, due) for i, due in enumerate(dues))
    return rec, armed


def armed_create(repo: Repository, wid: str, *dues: datetime) -> InstanceRecord:
    rec, armed = create(wid, *dues)
    repo.create(Create(rec, history(rec, armed), timers=TimerChange(arm=armed)))
    return rec


def step(
    base: InstanceRecord,
    *,
    disarm: bool = True,
    arm: tuple[int, ...] = (),
    fired: str | None = None,
    due: datetime = T0,
) -> Save:
    new = dataclasses.replace(
        base,
        revision=base.revision + 1,
        state="next",
        context={"n": base.revision + 1},
        update_time=base.update_time + timedelta(milliseconds=1),
    )
    armed = tuple(timer(new, t, due) for t in arm)
    return Save(
        new,
        base.revision,
        history(new, armed),
        timers=TimerChange(disarm=disarm, arm=armed, fired=fired),
    )


def ids(timers: dict[str, list[TimerRecord]], wid: str) -> list[str]:
    return [t.timer_id for t in timers.get(wid, [])]


def test_a_new_instance_arms_its_timers_with_it(repo: Repository) -> None:
    rec = armed_create(repo, "t-arm", T0 + timedelta(hours=2), T0 + timedelta(hours=1))
    found = repo.armed_timers(["t-arm", "absent"])
    assert ids(found, "t-arm") == ["1.2", "1.1"]  # in due order
    (first, _) = found["t-arm"]
    assert first == timer(rec, 2, T0 + timedelta(hours=1))
    (row,) = repo.history_after("t-arm", 0, 10)
    assert row.timers is not None and [t["timer_id"] for t in row.timers] == ["1.1", "1.2"]


def test_a_step_that_leaves_the_state_disarms_and_arms_in_its_own_transaction(
    repo: Repository,
) -> None:
    rec = armed_create(repo, "t-move", T0 + timedelta(hours=1))
    repo.save(step(rec, disarm=True, arm=(3,), due=T0 + timedelta(minutes=5)))
    assert ids(repo.armed_timers(["t-move"]), "t-move") == ["2.3"]
    # A save that loses its compare-and-swap touches no timer.
    with pytest.raises(Conflict):
        repo.save(step(rec, disarm=True, arm=(4,)))
    assert ids(repo.armed_timers(["t-move"]), "t-move") == ["2.3"]


def test_a_fire_saves_only_while_its_timer_is_armed(repo: Repository) -> None:
    rec = armed_create(repo, "t-fire", T0)
    assert repo.delete_timer("t-fire", "1.1")  # consumed elsewhere (a false guard)
    with pytest.raises(TimerGone) as caught:
        repo.save(step(rec, fired="1.1"))
    assert caught.value.metadata["timer_id"] == "1.1"
    assert repo.load("t-fire").revision == 1  # nothing of the step was written
    assert not repo.delete_timer("t-fire", "1.1")

    other = armed_create(repo, "t-fire-2", T0)
    repo.save(step(other, fired="1.1"))
    assert repo.armed_timers(["t-fire-2"]) == {}
    with pytest.raises(Conflict):  # the same timer fired twice: the CAS refuses the second
        repo.save(step(other, fired="1.1"))


def test_the_set_based_batch_applies_timer_work_per_row(repo: Repository) -> None:
    a = armed_create(repo, "t-batch-a", T0)
    b = armed_create(repo, "t-batch-b", T0)
    c_rec, c_armed = create("t-batch-c", T0 + timedelta(seconds=30))
    repo.delete_timer("t-batch-b", "1.1")
    results = repo.apply_batch(
        [
            step(a, fired="1.1", arm=(2,), due=T0 + timedelta(minutes=1)),
            step(b, fired="1.1"),
            Create(c_rec, history(c_rec, c_armed), timers=TimerChange(arm=c_armed)),
        ]
    )
    assert isinstance(results[0], InstanceRecord)
    assert isinstance(results[1], TimerGone)
    assert isinstance(results[2], InstanceRecord)
    found = repo.armed_timers(["t-batch-a", "t-batch-b", "t-batch-c"])
    assert ids(found, "t-batch-a") == ["2.2"]
    assert ids(found, "t-batch-b") == []
    assert ids(found, "t-batch-c") == ["1.1"]
    assert repo.load("t-batch-b").revision == 1


def test_a_timer_keeps_the_trace_context_of_the_step_that_armed_it(repo: Repository) -> None:
    """Whether the step saved alone or in a batch, the claim hands the timer's
    firer the arming step's trace context; a step not traced arms timers without one."""
    traced = TraceContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=1,b=2")
    bare = TraceContext(traced.traceparent)
    rec, (armed,) = create("t-traced", T0)
    one = dataclasses.replace(armed, trace=traced)
    repo.create(Create(rec, history(rec, (one,)), timers=TimerChange(arm=(one,))))
    b_rec, (b_armed,) = create("t-traced-batch", T0 + timedelta(seconds=1))
    in_batch = dataclasses.replace(b_armed, trace=bare)
    c_rec, (c_armed,) = create("t-traced-batch-2", T0 + timedelta(seconds=3))
    beside = dataclasses.replace(c_armed, trace=traced)
    plain = armed_create(repo, "t-untraced", T0 + timedelta(seconds=2))
    created = repo.apply_batch(
        [
            Create(b_rec, history(b_rec, (in_batch,)), timers=TimerChange(arm=(in_batch,))),
            Create(c_rec, history(c_rec, (beside,)), timers=TimerChange(arm=(beside,))),
        ]
    )
    assert all(isinstance(r, InstanceRecord) for r in created)
    found = repo.armed_timers(["t-traced", "t-traced-batch", "t-traced-batch-2", "t-untraced"])
    assert [t.trace for t in found["t-traced"]] == [traced]
    assert [t.trace for t in found["t-traced-batch"]] == [bare]
    assert [t.trace for t in found["t-traced-batch-2"]] == [traced]
    assert found["t-untraced"] == [timer(plain, 1, T0 + timedelta(seconds=2))]
    claimed = repo.claim_timers(T0 + timedelta(seconds=5), T0 + timedelta(seconds=10), 10)
    assert [(t.workflow_id, t.trace) for t in claimed] == [
        ("t-traced", traced),
        ("t-traced-batch", bare),
        ("t-untraced", None),
        ("t-traced-batch-2", traced),
    ]


def test_claims_are_leases_that_lapse(repo: Repository) -> None:
    for n in range(5):
        armed_create(repo, f"t-claim-{n}", T0 + timedelta(seconds=n))
    armed_create(repo, "t-claim-later", T0 + timedelta(hours=1))
    now = T0 + timedelta(seconds=10)
    first = repo.claim_timers(now, now + timedelta(seconds=5), 3)
    assert [t.workflow_id for t in first] == ["t-claim-0", "t-claim-1", "t-claim-2"]
    second = repo.claim_timers(now, now + timedelta(seconds=5), 10)
    assert [t.workflow_id for t in second] == ["t-claim-3", "t-claim-4"]  # held ones skipped
    assert repo.claim_timers(now, now + timedelta(seconds=5), 10) == []
    assert repo.next_timer_due(now) == T0 + timedelta(hours=1)
    # The holder died: once its claims lapse, another replica claims them again.
    later = now + timedelta(seconds=6)
    again = repo.claim_timers(later, later + timedelta(seconds=5), 10)
    assert len(again) == 5
    assert repo.timer_counts(later) == (6, 5)


def test_nothing_due_means_no_claim_and_no_next(repo: Repository) -> None:
    assert repo.claim_timers(T0, T0 + timedelta(seconds=5), 10) == []
    assert repo.next_timer_due(T0) is None
    assert repo.timer_counts(T0) == (0, 0)


def test_two_claimers_at_once_never_share_a_timer(repo: Repository, db_url: str) -> None:
    for n in range(200):
        armed_create(repo, f"t-race-{n:03d}", T0)
    other = open_repository(db_url, migrate=False, pool_size=4)
    now = T0 + timedelta(seconds=1)
    try:

        def claim(store: Repository) -> list[str]:
            got: list[str] = []
            while True:
                batch = store.claim_timers(now, now + timedelta(seconds=30), 16)
                if not batch:
                    return got
                got += [t.workflow_id for t in batch]

        with ThreadPoolExecutor(2) as pool:
            mine, theirs = pool.submit(claim, repo), pool.submit(claim, other)
            a, b = mine.result(30), theirs.result(30)
    finally:
        other.close()
    assert not set(a) & set(b)
    assert len(a) + len(b) == 200


def test_a_timer_is_armed_by_the_step_that_saves_it(repo: Repository) -> None:
    rec = instance("t-bad")
    wrong = dataclasses.replace(timer(rec, 1, T0), revision=2)
    with pytest.raises(SerializationError):
        repo.create(Create(rec, history(rec), timers=TimerChange(arm=(wrong,))))
    with pytest.raises(SerializationError):
        repo.create(Create(rec, history(rec), timers=TimerChange(fired="1.1")))


def test_a_whole_load_reads_the_row_and_its_timers_as_their_own_reads_do(
    repo: Repository, backend: str
) -> None:
    armed_create(repo, "w-whole", T0 + timedelta(minutes=2), T0 + timedelta(minutes=1))
    whole = repo.load_whole("w-whole")
    if backend != "postgres":
        # These read the parts one at a time (SQLite and memory have no round trips to
        # save; Citus reads a node at a time).
        assert whole is None
        return
    assert whole is not None
    assert whole.record == repo.load("w-whole")
    assert list(whole.timers) == repo.armed_timers(["w-whole"])["w-whole"]
    assert [t.transition for t in whole.timers] == [2, 1], "in due order"
    assert whole.task is None
    with pytest.raises(RecordNotFound):
        repo.load_whole("w-absent")
