"""Tasks in the store, run identically against PostgreSQL and SQLite.

A step schedules, finishes and cancels tasks in its own compare-and-swap transaction,
fenced by the lease it saw; workers' leases, heartbeats, retries and releases touch only
the task row; concurrent polls never lease one task twice.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.domain import Status, TaskStatus, TraceContext
from statewrightd.errors import Conflict, RecordNotFound, TaskFenced
from statewrightd.store import Repository
from statewrightd.store.records import (
    Create,
    HistoryRecord,
    InstanceRecord,
    Save,
    TaskChange,
    TaskFinish,
    TaskRecord,
)
from tests.support.store_records import task_record

NOW = datetime.now(UTC).replace(microsecond=123456)
FIRST_LEASE = 30.0


def instance(wid: str, revision: int = 1, state: str = "charging") -> InstanceRecord:
    return InstanceRecord(
        workflow_id=wid,
        definition="tasked",
        version=1,
        state=state,
        status=Status.RUNNING,
        context={"n": revision},
        revision=revision,
        error=None,
        create_time=NOW,
        update_time=NOW + timedelta(milliseconds=revision),
    )


def history(rec: InstanceRecord, event: str | None = None) -> HistoryRecord:
    return HistoryRecord(
        workflow_id=rec.workflow_id,
        revision=rec.revision,
        event=event,
        transitions=[],
        state=rec.state,
        status=rec.status,
        context=rec.context,
        error=None,
        time=rec.update_time,
    )


def task(
    rec: InstanceRecord,
    queue: str = "payments",
    *,
    available: datetime = NOW,
    attempts: int = 3,
    start_to_close: float = 60.0,
    heartbeat: float | None = None,
    deadline: timedelta = timedelta(hours=1),
    trace: TraceContext | None = None,
) -> TaskRecord:
    return task_record(
        rec.workflow_id,
        str(rec.revision),
        NOW,
        state=rec.state,
        queue=queue,
        input={"order": rec.workflow_id, "amount": 12.5, "items": ["a", {"b": None}]},
        max_attempts=attempts,
        available_time=available,
        deadline=NOW + deadline,
        start_to_close=start_to_close,
        heartbeat=heartbeat,
        retry={"initial_interval": 1.0, "backoff": 2.0, "max_interval": 60.0, "non_retryable": []},
        trace=trace,
    )


def scheduled(repo: Repository, wid: str, queue: str = "payments", **kw: object) -> TaskRecord:
    rec = instance(wid)
    new = task(rec, queue, **kw)  # type: ignore[arg-type]
    repo.create(Create(rec, history(rec), tasks=TaskChange(schedule=new)))
    return new


def step(
    repo: Repository,
    wid: str,
    base: int,
    *,
    finish: TaskFinish | None = None,
    cancel: bool = False,
    schedule_next: bool = False,
    state: str = "shipping",
) -> InstanceRecord:
    new = dataclasses.replace(
        instance(wid, base + 1, state), update_time=NOW + timedelta(milliseconds=base + 1)
    )
    nxt = task(new, "shipping") if schedule_next else None
    op = Save(new, base, history(new), tasks=TaskChange(schedule=nxt, cancel=cancel, finish=finish))
    repo.save(op)
    return new


def lease(
    repo: Repository, queue: str = "payments", at: datetime = NOW, n: int = 10
) -> list[TaskRecord]:
    return repo.lease_tasks(queue, at, n, FIRST_LEASE)


def test_a_step_schedules_a_task_that_a_poll_leases(repo: Repository) -> None:
    new = scheduled(repo, "k-lease", start_to_close=60.0)
    assert repo.get_task("k-lease", "1") == new
    assert repo.open_tasks(["k-lease", "absent"]) == {"k-lease": new}
    (leased,) = lease(repo)
    assert (leased.status, leased.attempt) == (TaskStatus.LEASED, 1)
    assert leased.lease_token and leased.attempt_start_time == NOW
    # The first lease is short: min(start_to_close, heartbeat, FIRST_LEASE).
    assert leased.lease_expire_time == NOW + timedelta(seconds=FIRST_LEASE)
    assert leased.input == new.input
    assert lease(repo) == [], "a leased task is not leased again"


def test_a_lease_takes_only_the_tasks_chosen_and_leaves_the_rest_untouched(
    repo: Repository,
) -> None:
    """What a poll cannot send (its answer would be too large) is never leased."""
    for wid in ("k-pick-1", "k-pick-2", "k-pick-3"):
        scheduled(repo, wid)
    seen: list[list[str]] = []

    def every_other(ready: list[TaskRecord]) -> list[TaskRecord]:
        seen.append([t.workflow_id for t in ready])
        assert all(t.status is TaskStatus.SCHEDULED and t.attempt == 0 for t in ready)
        return ready[::2]

    leased = repo.lease_tasks("payments", NOW, 10, FIRST_LEASE, every_other)
    assert seen == [["k-pick-1", "k-pick-2", "k-pick-3"]], "the ready tasks, in order"
    assert [t.workflow_id for t in leased] == ["k-pick-1", "k-pick-3"]
    assert all(t.status is TaskStatus.LEASED and t.attempt == 1 for t in leased)
    left = repo.get_task("k-pick-2", "1")
    assert (left.status, left.attempt, left.lease_token) == (TaskStatus.SCHEDULED, 0, None)
    assert repo.lease_tasks("payments", NOW, 10, FIRST_LEASE, lambda ready: []) == []
    assert [t.workflow_id for t in lease(repo)] == ["k-pick-2"]


def test_a_lease_with_room_leases_what_surely_fits_and_chooses_exactly_otherwise(
    repo: Repository,
) -> None:
    """A poll that says its answer's size may be leased without a read first (PostgreSQL),
    but never leases a task ``choose`` would not pick, and never passes over one it would
    because a bound of its size is too generous."""
    small = ("k-room-1", "k-room-2")
    for wid in small:
        scheduled(repo, wid)
    picked: list[list[str]] = []

    def all_of(ready: list[TaskRecord]) -> list[TaskRecord]:
        picked.append([t.workflow_id for t in ready])
        return ready

    leased = repo.lease_tasks("payments", NOW, 10, FIRST_LEASE, all_of, room=4_000_000)
    assert [t.workflow_id for t in leased] == list(small)
    assert all(t.status is TaskStatus.LEASED and t.attempt == 1 for t in leased)
    assert [repo.get_task(w, "1") for w in small] == leased, "as stored"
    # A task of about 50 kB in a room of 100 kB: it fits, but not six times over.
    rec = instance("k-room-big")
    big = dataclasses.replace(task(rec), input={"blob": "x" * 50_000})
    repo.create(Create(rec, history(rec), tasks=TaskChange(schedule=big)))
    (leased_big,) = repo.lease_tasks("payments", NOW, 10, FIRST_LEASE, all_of, room=100_000)
    assert (leased_big.workflow_id, leased_big.input) == ("k-room-big", big.input)
    assert picked[-1] == ["k-room-big"], "read and chosen exactly"
    assert repo.lease_tasks("payments", NOW, 10, FIRST_LEASE, all_of, room=4_000_000) == []


def test_a_heartbeat_extends_the_lease_to_its_full_length(repo: Repository) -> None:
    scheduled(repo, "k-beat", start_to_close=120.0, heartbeat=20.0)
    (leased,) = lease(repo)
    assert leased.lease_expire_time == NOW + timedelta(seconds=20)
    token = leased.lease_token or ""
    later = NOW + timedelta(seconds=10)
    beat = repo.heartbeat_task("k-beat", "1", token, later, {"done": 3})
    assert beat is not None and beat.lease_expire_time == later + timedelta(seconds=20)
    assert beat.heartbeat_details == {"done": 3}
    # Never past the attempt's start_to_close.
    late = NOW + timedelta(seconds=110)
    beat = repo.heartbeat_task("k-beat", "1", token, late - timedelta(seconds=1), None)
    assert beat is None, "the lease had already expired"
    assert repo.heartbeat_task("k-beat", "1", "not-the-token", later, None) is None


def test_a_heartbeat_never_outlasts_start_to_close(repo: Repository) -> None:
    scheduled(repo, "k-cap", start_to_close=40.0)
    (leased,) = lease(repo)
    beat = repo.heartbeat_task(
        "k-cap", "1", leased.lease_token or "", NOW + timedelta(seconds=25), None
    )
    assert beat is not None and beat.lease_expire_time == NOW + timedelta(seconds=40)


def test_a_retry_ends_the_attempt_and_a_release_undoes_the_lease(repo: Repository) -> None:
    scheduled(repo, "k-retry")
    (first,) = lease(repo)
    error = {"type": "FLAKY", "message": "again", "details": {"n": 1}}
    back = NOW + timedelta(seconds=5)
    retried = repo.retry_task(
        "k-retry",
        "1",
        first.lease_token or "",
        now=NOW,
        available=back,
        error=error,
        request_id="r1",
    )
    assert retried is not None and retried.status is TaskStatus.BACKOFF
    assert (retried.lease_token, retried.last_error, retried.last_request_id) == (None, error, "r1")
    assert lease(repo) == [], "not before its backoff"
    (second,) = lease(repo, at=back)
    assert second.attempt == 2 and second.lease_token != first.lease_token
    released = repo.release_task("k-retry", "1", second.lease_token or "", back)
    assert released is not None and (released.status, released.attempt) == (TaskStatus.BACKOFF, 1)
    (again,) = lease(repo, at=back)
    assert again.attempt == 2
    assert repo.release_task("k-retry", "1", "stale", back) is None


def test_an_expired_lease_is_claimed_once_and_retried_only_if_still_expired(
    repo: Repository,
) -> None:
    scheduled(repo, "k-expire", start_to_close=10.0)
    (leased,) = lease(repo)
    token = leased.lease_token or ""
    assert (
        repo.claim_expired_tasks(NOW + timedelta(seconds=5), NOW + timedelta(seconds=10), 10) == []
    )
    after = NOW + timedelta(seconds=11)
    (claimed,) = repo.claim_expired_tasks(after, after + timedelta(seconds=5), 10)
    assert claimed.task_id == "1"
    assert repo.claim_expired_tasks(after, after + timedelta(seconds=5), 10) == [], "claimed"
    error = {"type": "TIMED_OUT", "message": "", "details": {}}
    early = repo.retry_task(
        "k-expire", "1", token, now=NOW, available=NOW, error=error, expired_only=True
    )
    assert early is None, "not expired as of then"
    done = repo.retry_task(
        "k-expire", "1", token, now=after, available=after, error=error, expired_only=True
    )
    assert done is not None and done.status is TaskStatus.BACKOFF


def test_a_past_deadline_is_claimed_whatever_the_status(repo: Repository) -> None:
    scheduled(repo, "k-deadline", deadline=timedelta(seconds=30))
    past = NOW + timedelta(seconds=31)
    (claimed,) = repo.claim_expired_tasks(past, past + timedelta(seconds=5), 10)
    assert claimed.status is TaskStatus.SCHEDULED
    assert lease(repo, at=past) == [], "never leased past its deadline"


def test_concurrent_polls_never_lease_a_task_twice(repo: Repository) -> None:
    for n in range(60):
        scheduled(repo, f"k-race-{n}", "race")
    with ThreadPoolExecutor(6) as pool:
        batches = list(pool.map(lambda _: lease(repo, "race", n=7), range(12)))
    names = [t.workflow_id for batch in batches for t in batch]
    assert sorted(names) == sorted(f"k-race-{n}" for n in range(60))


def test_a_completion_saves_only_under_the_current_lease(repo: Repository) -> None:
    scheduled(repo, "k-done")
    (leased,) = lease(repo)
    stale = TaskFinish("1", TaskStatus.COMPLETED, "stale", None, leased=True)
    with pytest.raises(TaskFenced) as refused:
        step(repo, "k-done", 1, finish=stale)
    assert refused.value.reason == "LEASE_SUPERSEDED"
    assert repo.load("k-done").revision == 1, "nothing of the refused step was written"
    good = TaskFinish("1", TaskStatus.COMPLETED, leased.lease_token, None, leased=True)
    step(repo, "k-done", 1, finish=good, schedule_next=True)
    assert repo.get_task("k-done", "1").status is TaskStatus.COMPLETED
    assert repo.open_tasks(["k-done"])["k-done"].task_id == "2"
    with pytest.raises(Conflict):
        step(repo, "k-done", 1, finish=good)  # the revision moved on
    with pytest.raises(TaskFenced):
        step(repo, "k-done", 2, finish=good)  # the task is finished already


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "in-a-batch"])
def test_a_completion_that_names_the_row_it_saw_saves_only_if_unchanged_since(
    repo: Repository, batched: bool
) -> None:
    """A server completing a lease from its memory of it names the task's update_time as
    the lease (or its last heartbeat through it) left it; a heartbeat elsewhere since
    refuses the save, as superseded, and nothing of it is written."""
    wids = ["k-seen-a", "k-seen-b"]
    for wid in wids:
        scheduled(repo, wid, start_to_close=120.0, heartbeat=20.0)
    leases = {t.workflow_id: t for t in lease(repo)}
    beats = {}
    for wid in wids:
        token = leases[wid].lease_token or ""
        beat = repo.heartbeat_task(wid, "1", token, NOW + timedelta(seconds=1), {"done": 1})
        assert beat is not None and beat.update_time != leases[wid].update_time
        beats[wid] = beat

    def finish(wid: str, seen: TaskRecord) -> TaskFinish:
        token = leases[wid].lease_token
        return TaskFinish(
            "1", TaskStatus.COMPLETED, token, None, leased=True, seen=seen.update_time
        )

    ops = []
    for wid, seen in (("k-seen-a", leases["k-seen-a"]), ("k-seen-b", beats["k-seen-b"])):
        new = dataclasses.replace(instance(wid, 2, "shipping"), update_time=NOW)
        ops.append(Save(new, 1, history(new), tasks=TaskChange(finish=finish(wid, seen))))
    if batched:  # one batch: the stale row refused, its neighbour saved
        refused, saved = repo.apply_batch(ops)
    else:
        (refused,), (saved,) = repo.apply_batch(ops[:1]), repo.apply_batch(ops[1:])
    assert isinstance(saved, InstanceRecord) and saved.revision == 2
    assert isinstance(refused, TaskFenced) and refused.reason == "LEASE_SUPERSEDED"
    assert repo.load("k-seen-a").revision == 1, "nothing of the refused step was written"
    assert repo.get_task("k-seen-a", "1").status is TaskStatus.LEASED
    assert repo.get_task("k-seen-b", "1").status is TaskStatus.COMPLETED
    # Named as the heartbeat left it, the stale one completes too.
    step(repo, "k-seen-a", 1, finish=finish("k-seen-a", beats["k-seen-a"]))
    assert repo.get_task("k-seen-a", "1").status is TaskStatus.COMPLETED


def test_leaving_the_state_cancels_the_task_and_fences_its_lease(repo: Repository) -> None:
    scheduled(repo, "k-cancel")
    (leased,) = lease(repo)
    step(repo, "k-cancel", 1, cancel=True, state="cancelled")
    found = repo.get_task("k-cancel", "1")
    assert (found.status, found.lease_token) == (TaskStatus.CANCELLED, leased.lease_token)
    assert repo.open_tasks(["k-cancel"]) == {}
    assert repo.heartbeat_task("k-cancel", "1", leased.lease_token or "", NOW, None) is None
    finish = TaskFinish("1", TaskStatus.COMPLETED, leased.lease_token, None, leased=True)
    with pytest.raises(TaskFenced) as refused:
        step(repo, "k-cancel", 2, finish=finish)
    assert refused.value.reason == "TASK_CANCELLED"


def test_giving_up_is_fenced_by_the_attempt_it_saw(repo: Repository) -> None:
    scheduled(repo, "k-give-up", deadline=timedelta(seconds=30))
    error = {"type": "TIMED_OUT", "message": "deadline", "details": {}}
    wrong = TaskFinish("1", TaskStatus.TIMED_OUT, None, 1, leased=False, last_error=error)
    with pytest.raises(TaskFenced):
        step(repo, "k-give-up", 1, finish=wrong)
    right = TaskFinish("1", TaskStatus.TIMED_OUT, None, 0, leased=False, last_error=error)
    step(repo, "k-give-up", 1, finish=right, state="failed")
    found = repo.get_task("k-give-up", "1")
    assert (found.status, found.last_error) == (TaskStatus.TIMED_OUT, error)


def test_queue_stats_count_ready_and_leased_tasks(repo: Repository) -> None:
    for n in range(3):
        scheduled(repo, f"k-stats-{n}", "stats")
    scheduled(repo, "k-stats-later", "stats", available=NOW + timedelta(minutes=5))
    lease(repo, "stats", n=1)
    (stats,) = [q for q in repo.queue_stats(NOW) if q.queue == "stats"]
    assert (stats.ready, stats.leased, stats.oldest_ready) == (2, 1, NOW)


def test_list_tasks_filters_and_pages_in_schedule_order(repo: Repository) -> None:
    for n in range(5):
        scheduled(repo, f"k-list-{n}", "listed")
    lease(repo, "listed", n=2)
    seen: list[str] = []
    token = ""
    while True:
        page = repo.list_tasks(queue="listed", page_size=2, page_token=token)
        seen += [t.workflow_id for t in page.items]
        token = page.next_page_token
        if not token:
            break
    assert sorted(seen) == [f"k-list-{n}" for n in range(5)]
    leased = repo.list_tasks(queue="listed", status="LEASED")
    assert len(leased.items) == 2
    assert [t.workflow_id for t in repo.list_tasks(workflow_id="k-list-3").items] == ["k-list-3"]
    with pytest.raises(Exception) as bad:
        repo.list_tasks(queue="other", page_token=token or page.next_page_token or "junk")
    assert "page" in str(bad.value).lower()


def test_an_unknown_task_is_not_found(repo: Repository) -> None:
    with pytest.raises(RecordNotFound) as missing:
        repo.get_task("nobody", "1")
    assert missing.value.reason == "TASK_NOT_FOUND"


def test_a_task_keeps_the_trace_context_of_the_step_that_scheduled_it(repo: Repository) -> None:
    traced = TraceContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=1,b=2")
    new = scheduled(repo, "k-traced", trace=traced)
    assert repo.get_task("k-traced", "1") == new
    (leased,) = lease(repo)
    assert leased.trace == traced  # what the worker is handed
    # Without tracing there is none, and an empty tracestate reads back empty.
    plain = scheduled(repo, "k-untraced", "shipping")
    assert repo.get_task("k-untraced", "1") == plain and plain.trace is None
    scheduled(repo, "k-bare", "refunds", trace=TraceContext(traced.traceparent))
    assert repo.get_task("k-bare", "1").trace == TraceContext(traced.traceparent, "")


def test_a_whole_load_reads_the_open_task_with_its_lease(repo: Repository, backend: str) -> None:
    scheduled(repo, "k-whole")
    (leased,) = lease(repo)
    whole = repo.load_whole("k-whole")
    if backend != "postgres":
        assert whole is None  # this store reads the parts one at a time
        return
    assert whole is not None
    assert whole.record == repo.load("k-whole")
    assert whole.task == leased == repo.open_tasks(["k-whole"])["k-whole"]
    assert whole.timers == ()
    step(repo, "k-whole", 1, finish=None, cancel=True, state="cancelled")
    after = repo.load_whole("k-whole")
    assert after is not None and after.task is None, "a cancelled task is not open"
