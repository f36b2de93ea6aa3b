"""What the pause check costs the claims: the timer claim and the task lease, each with
and without its "no paused instance" condition, on the same PostgreSQL data.

N instances each with a due timer and a ready task, P of them paused; every round runs a
claim of BATCH rows in a transaction that is rolled back, so each round sees the same
rows. Prints the median time of each statement and their ratio. Not a test: run it as
``bench/run_pause_claims.sh`` (a private PostgreSQL, 127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from datetime import UTC, datetime, timedelta

import psycopg

from statewrightd.domain import Status, TaskStatus
from statewrightd.store import open_repository, rows
from statewrightd.store import sql_postgres as q
from statewrightd.store.records import (
    Create,
    HistoryRecord,
    InstanceRecord,
    TaskChange,
    TaskRecord,
    TimerChange,
    TimerRecord,
)

BATCH = 256
NOW = datetime.now(UTC)
PAUSE = {"reason": "bench", "actor": "bench", "time": NOW.isoformat()}


def _create(i: int, paused: bool) -> Create:
    wid = f"pause-bench-{i}"
    rec = InstanceRecord(
        wid, "bench", 1, "s", Status.RUNNING, {}, 1, None, NOW, NOW, pause=PAUSE if paused else None
    )
    history = HistoryRecord(wid, 1, None, [], "s", Status.RUNNING, {}, None, NOW)
    timer = TimerRecord(wid, "1.0", 1, 0, "t", "1s", NOW - timedelta(seconds=i % 600))
    task = TaskRecord(
        workflow_id=wid, task_id="1", revision=1, state="s", queue="bench", input={},
        status=TaskStatus.SCHEDULED, attempt=0, max_attempts=3, lease_token=None,
        lease_expire_time=None, attempt_start_time=None,
        available_time=NOW - timedelta(seconds=i % 600), schedule_time=NOW,
        deadline=NOW + timedelta(hours=1), start_to_close=60.0, heartbeat=None,
        retry={"initial_interval": 1.0, "backoff": 2.0, "max_interval": 60.0, "non_retryable": []},
        heartbeat_details=None, last_error=None, last_request_id=None, update_time=NOW,
    )  # fmt: skip
    return Create(rec, history, timers=TimerChange(arm=(timer,)), tasks=TaskChange(schedule=task))


def _median_ms(
    conn: psycopg.Connection[object], sql: str, params: dict[str, object], n: int
) -> float:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        with conn.transaction(force_rollback=True):
            conn.execute(sql, params).fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=20_000)
    parser.add_argument("--paused", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    url = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    repo = open_repository(url, migrate=True, pool_size=2)
    # The paused ones are the oldest due: the claims must pass over them all.
    ops = [_create(i, i >= args.instances - args.paused) for i in range(args.instances)]
    for start in range(0, len(ops), 500):
        repo.apply_batch(ops[start : start + 500])
    repo.close()
    timer_filter = f"\n           AND {rows.unpaused('workflow_timers')}"
    task_filter = f"\n           AND {rows.unpaused('workflow_tasks')}"
    statements = {
        "timer claim": (q.SQL.claim_timers, timer_filter),
        "task lease": (q.SQL.lease_tasks, task_filter),
    }
    params = {
        "now": NOW, "until": NOW + timedelta(seconds=5), "limit": BATCH, "queue": "bench",
        "first_ms": 30_000,
    }  # fmt: skip
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
        print(f"{args.instances} instances ({args.paused} paused, the oldest), batch {BATCH}")
        for name, (sql, condition) in statements.items():
            assert condition in sql, f"{name}: the pause condition moved"
            checked = _median_ms(conn, sql, params, args.rounds)
            unchecked = _median_ms(conn, sql.replace(condition, ""), params, args.rounds)
            print(
                f"{name}: {checked:.2f} ms with the pause check, {unchecked:.2f} ms without"
                f" (ratio {checked / unchecked:.2f})"
            )


if __name__ == "__main__":
    main()
