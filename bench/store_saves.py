"""Durable saves per second: GroupCommitWriter versus one CAS transaction per save.

Not a test. For N concurrent instances (1, 8, 64) each instance's driver thread saves
step after step, waiting for each to be durable before the next (as the runtime does).
Writer: every driver submits to one GroupCommitWriter. Baseline: every driver runs its
own single-row CAS transaction on its own connection. synchronous_commit stays on.

    scripts/with-postgres bash -c \
      '.venv/bin/python bench/store_saves.py --database "$STATEWRIGHT_TEST_POSTGRES_URL"'
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import threading
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import psycopg

from statewrightd.domain import Status
from statewrightd.errors import StoreError
from statewrightd.store import GroupCommitWriter, Repository, open_repository
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclasses.dataclass
class Result:
    saves: int
    seconds: float
    latencies: list[float]

    @property
    def rate(self) -> float:
        return self.saves / self.seconds if self.seconds else 0.0

    def pct(self, q: float) -> float:
        if not self.latencies:
            return 0.0
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * 1000


def _history(rec: InstanceRecord) -> HistoryRecord:
    return HistoryRecord(
        rec.workflow_id,
        rec.revision,
        "tick",
        [{"from": "a", "to": "a", "event": "tick"}],
        rec.state,
        rec.status,
        rec.context,
        None,
        rec.update_time,
    )


def _step(rec: InstanceRecord) -> Save:
    new = dataclasses.replace(
        rec,
        revision=rec.revision + 1,
        context={"n": rec.revision},
        update_time=rec.update_time + timedelta(microseconds=1),
    )
    return Save(new, rec.revision, _history(new))


def _seed(repo: Repository, count: int) -> list[InstanceRecord]:
    tag = uuid.uuid4().hex[:8]
    out = []
    for i in range(count):
        rec = InstanceRecord(
            f"bench-{tag}-{i}", "bench", 1, "a", Status.RUNNING, {}, 1, None, T0, T0
        )
        out.append(repo.create(Create(rec, _history(rec))))
    return out


def _drive(records: list[InstanceRecord], duration: float, save: Callable[[Save], None]) -> Result:
    """One thread per instance, each saving its next step as soon as the last is durable."""
    counts = [0] * len(records)
    latencies: list[list[float]] = [[] for _ in records]
    start = threading.Barrier(len(records) + 1)
    stop_at = [0.0]

    def loop(i: int) -> None:
        rec = records[i]
        start.wait()
        while time.monotonic() < stop_at[0]:
            op = _step(rec)
            t = time.perf_counter()
            save(op)
            latencies[i].append(time.perf_counter() - t)
            counts[i] += 1
            rec = op.new

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(len(records))]
    for thread in threads:
        thread.start()
    stop_at[0] = time.monotonic() + duration
    began = time.monotonic()
    start.wait()
    for thread in threads:
        thread.join(duration + 30)
    elapsed = time.monotonic() - began
    return Result(sum(counts), elapsed, [x for per in latencies for x in per])


def run_writer(repo: Repository, n: int, duration: float) -> tuple[Result, float]:
    writer = GroupCommitWriter(repo, max_batch=256)
    writer.start()

    def save(op: Save) -> None:
        done = threading.Event()
        box: list[InstanceRecord | StoreError] = []

        def callback(result: InstanceRecord | StoreError) -> None:
            box.append(result)
            done.set()

        writer.submit(op, callback)
        if not done.wait(30):
            raise RuntimeError("save timed out")
        if isinstance(box[0], StoreError):
            raise box[0]

    try:
        result = _drive(_seed(repo, n), duration, save)
    finally:
        writer.stop()
    return result, writer.stats().mean_batch_size


_BASELINE_SQL = """
UPDATE workflow_instances
   SET state = %s, context = %s::jsonb, revision = %s, update_time = %s
 WHERE workflow_id = %s AND revision = %s
"""
_BASELINE_HISTORY = """
INSERT INTO workflow_history (workflow_id, revision, event, transitions, state, status,
                              context, error, time)
VALUES (%s, %s, %s, %s::jsonb, %s, %s, %s::jsonb, NULL, %s)
"""


def run_baseline(url: str, repo: Repository, n: int, duration: float) -> Result:
    """Plain psycopg: one connection per instance, one CAS transaction (+history) per save."""
    conns = [psycopg.connect(url) for _ in range(n)]
    by_id = {}
    records = _seed(repo, n)
    for rec, conn in zip(records, conns, strict=True):
        by_id[rec.workflow_id] = conn

    def save(op: Save) -> None:
        conn = by_id[op.new.workflow_id]
        new = op.new
        with conn.transaction():
            cur = conn.execute(
                _BASELINE_SQL,
                (
                    new.state,
                    json.dumps({"n": new.revision - 1}),
                    new.revision,
                    new.update_time,
                    new.workflow_id,
                    op.expected_revision,
                ),
            )
            if cur.rowcount != 1:
                raise RuntimeError("baseline CAS failed")
            conn.execute(
                _BASELINE_HISTORY,
                (
                    new.workflow_id,
                    new.revision,
                    "tick",
                    '[{"from":"a","to":"a","event":"tick"}]',
                    new.state,
                    new.status,
                    json.dumps({"n": new.revision - 1}),
                    new.update_time,
                ),
            )

    try:
        return _drive(records, duration, save)
    finally:
        for conn in conns:
            conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--database", required=True, help="postgresql://... (or sqlite:///...)")
    parser.add_argument("--seconds", type=float, default=3.0, help="duration of each scenario")
    parser.add_argument("--instances", type=int, nargs="+", default=[1, 8, 64])
    args = parser.parse_args()

    repo = open_repository(args.database, pool_size=4)
    with psycopg.connect(args.database) as conn:
        sync = conn.execute("SHOW synchronous_commit").fetchone()
    print(f"synchronous_commit={sync[0] if sync else '?'}; {args.seconds:.0f}s per scenario")
    header = (
        f"{'instances':>9} | {'writer/s':>9} {'p50 ms':>7} {'p99 ms':>7} {'batch':>6} |"
        f" {'baseline/s':>10} {'p50 ms':>7} {'p99 ms':>7} | {'ratio':>5}"
    )
    print(header)
    print("-" * len(header))
    try:
        for n in args.instances:
            writer, batch = run_writer(repo, n, args.seconds)
            base = run_baseline(args.database, repo, n, args.seconds)
            ratio = writer.rate / base.rate if base.rate else float("inf")
            print(
                f"{n:>9} | {writer.rate:>9.0f} {writer.pct(0.5):>7.2f} {writer.pct(0.99):>7.2f}"
                f" {batch:>6.1f} | {base.rate:>10.0f} {base.pct(0.5):>7.2f} {base.pct(0.99):>7.2f}"
                f" | {ratio:>5.2f}",
                flush=True,
            )
    finally:
        repo.close()


if __name__ == "__main__":
    main()
