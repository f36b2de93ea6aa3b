"""GroupCommitWriter against a real repository of each backend."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from statewrightd.domain import Status
from statewrightd.errors import Conflict, Overloaded, StorageUnavailable, StoreError
from statewrightd.store import GroupCommitWriter, Repository
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save

T0 = datetime(2026, 3, 1, tzinfo=UTC)
Result = InstanceRecord | StoreError


def _instance(wid: str) -> InstanceRecord:
    return InstanceRecord(wid, "def", 1, "start", Status.RUNNING, {}, 1, None, T0, T0)


def _history(rec: InstanceRecord) -> HistoryRecord:
    return HistoryRecord(
        rec.workflow_id, rec.revision, None, [], rec.state, rec.status, rec.context, None, T0
    )


def _next(rec: InstanceRecord, expected: int | None = None) -> Save:
    new = dataclasses.replace(
        rec,
        revision=rec.revision + 1,
        state=f"s{rec.revision + 1}",
        update_time=T0 + timedelta(seconds=rec.revision),
    )
    return Save(new, rec.revision if expected is None else expected, _history(new))


class _Collector:
    """Gathers callback results (delivered on the writer thread)."""

    def __init__(self, expected: int) -> None:
        self.results: dict[str, list[Result]] = {}
        self._expected = expected
        self._count = 0
        self._done = threading.Event()
        self._lock = threading.Lock()

    def callback(self, key: str) -> Callable[[Result], None]:
        def deliver(result: Result) -> None:
            with self._lock:
                self.results.setdefault(key, []).append(result)
                self._count += 1
                if self._count >= self._expected:
                    self._done.set()

        return deliver

    def wait(self, timeout: float = 20.0) -> None:
        assert self._done.wait(timeout), f"only {self._count}/{self._expected} callbacks arrived"


def _seed(repo: Repository, count: int) -> list[InstanceRecord]:
    return [repo.create(Create(r, _history(r))) for r in (_instance(f"w{i}") for i in range(count))]


def test_writer_commits_concurrent_saves_in_batches(repo: Repository) -> None:
    records = _seed(repo, 40)
    writer = GroupCommitWriter(repo, max_batch=16)
    writer.start()
    try:
        collector = _Collector(expected=40 * 3)
        current = {r.workflow_id: r for r in records}
        for _ in range(3):
            for wid, rec in list(current.items()):
                op = _next(rec)
                writer.submit(op, collector.callback(wid))
                current[wid] = op.new
        collector.wait()
    finally:
        writer.stop()
    for wid, results in collector.results.items():
        assert [r.revision for r in results if isinstance(r, InstanceRecord)] == [2, 3, 4]
        assert repo.load(wid).revision == 4
    stats = writer.stats()
    assert stats.saves == 120 and stats.conflicts == 0 and stats.failures == 0
    assert stats.batches < 120, "saves submitted together should share transactions"
    assert stats.mean_batch_size > 1
    assert stats.latency_p99_ms >= stats.latency_p50_ms > 0
    assert stats.queue_depth == 0 and not stats.running


def test_writer_reports_each_rows_conflict_separately(repo: Repository) -> None:
    a, b = _seed(repo, 2)
    writer = GroupCommitWriter(repo)
    collector = _Collector(expected=2)
    # Queued before start so both land in one batch.
    writer.submit(_next(a), collector.callback("a"))
    writer.submit(_next(dataclasses.replace(b, revision=7)), collector.callback("b"))
    writer.start()
    try:
        collector.wait()
    finally:
        writer.stop()
    assert isinstance(collector.results["a"][0], InstanceRecord)
    conflict = collector.results["b"][0]
    assert isinstance(conflict, Conflict) and conflict.actual_revision == 1
    assert writer.stats().batches == 1 and writer.stats().conflicts == 1


def test_full_queue_raises_overloaded_without_blocking(repo: Repository) -> None:
    (rec,) = _seed(repo, 1)
    writer = GroupCommitWriter(repo, max_queue=3)
    collector = _Collector(expected=3)
    ops = [_next(rec, expected=1) for _ in range(4)]
    for op in ops[:3]:
        writer.submit(op, collector.callback("w"))
    # The writer is not even started: a submit that waited for room would never return.
    with pytest.raises(Overloaded):
        writer.submit(ops[3], collector.callback("w"))
    assert writer.stats().queue_depth == 3
    writer.start()
    collector.wait()
    writer.stop()
    outcomes = collector.results["w"]
    assert sum(isinstance(r, InstanceRecord) for r in outcomes) == 1
    assert sum(isinstance(r, Conflict) for r in outcomes) == 2


def test_submit_many_refuses_what_does_not_fit_and_posts_each_batch_once(
    repo: Repository,
) -> None:
    records = _seed(repo, 4)
    posted: list[Callable[[], None]] = []
    arrived = threading.Event()

    def post(deliver_all: Callable[[], None]) -> None:
        posted.append(deliver_all)
        arrived.set()

    writer = GroupCommitWriter(repo, max_queue=3, post=post)
    collector = _Collector(expected=3)
    refusals = writer.submit_many([(_next(r), collector.callback(r.workflow_id)) for r in records])
    assert refusals[:3] == [None, None, None]
    assert isinstance(refusals[3], Overloaded)
    writer.start()
    assert arrived.wait(20)
    writer.stop()
    # One hand-off for the whole batch; the callbacks run where it is taken.
    assert len(posted) == 1 and collector.results == {}
    posted[0]()
    collector.wait()
    assert sorted(collector.results) == ["w0", "w1", "w2"]
    assert all(isinstance(r[0], InstanceRecord) for r in collector.results.values())
    assert repo.load("w3").revision == 1


def test_stop_without_drain_fails_pending_saves(repo: Repository) -> None:
    (rec,) = _seed(repo, 1)
    writer = GroupCommitWriter(repo)
    collector = _Collector(expected=1)
    writer.submit(_next(rec), collector.callback("w"))
    writer.stop(drain=False)
    collector.wait()
    assert isinstance(collector.results["w"][0], StorageUnavailable)
    assert repo.load("w0").revision == 1
    with pytest.raises(StorageUnavailable):
        writer.submit(_next(rec), collector.callback("w"))


def test_a_raising_callback_does_not_stop_the_writer(repo: Repository) -> None:
    a, b = _seed(repo, 2)
    writer = GroupCommitWriter(repo)
    writer.start()
    collector = _Collector(expected=1)

    def explode(_: Result) -> None:
        raise RuntimeError("callback bug")

    try:
        writer.submit(_next(a), explode)
        writer.submit(_next(b), collector.callback("b"))
        collector.wait()
    finally:
        writer.stop()
    assert isinstance(collector.results["b"][0], InstanceRecord)
    assert repo.load("w0").revision == 2


def test_a_drain_says_whether_it_finished(repo: Repository) -> None:
    a, b = _seed(repo, 2)
    drained = GroupCommitWriter(repo)
    drained.start()
    collector = _Collector(expected=1)
    drained.submit(_next(a), collector.callback("a"))
    assert drained.stop(drain=True) is True
    collector.wait()
    assert repo.load("w0").revision == 2
    # Never started: the queued save cannot be written, and the shutdown must say so.
    unfinished = GroupCommitWriter(repo)
    left = _Collector(expected=1)
    unfinished.submit(_next(b), left.callback("b"))
    assert unfinished.stop(drain=True) is False
    left.wait()
    refused = left.results["b"][0]
    assert isinstance(refused, StorageUnavailable) and refused.reason == "WRITER_STOPPED"
    assert repo.load("w1").revision == 1
