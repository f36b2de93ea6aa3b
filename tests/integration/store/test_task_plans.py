"""How PostgreSQL plans the statements that touch tasks.

A statement that finds tasks by their instance or their key reads them through the
primary key, however stale the planner's statistics of a table that churns.

Every task a queue finishes leaves entries behind in the partial indexes over open or
leased tasks (their predicate is the status) until a vacuum. Statistics taken when the
table was small make such an index look like a few rows, and a lookup whose status test
matched the predicate was planned as a scan of that whole index (alone, or ANDed with the
primary key's entries): in the task benchmark, 1.9 ms for each instance of a batch that
left a task state. The plans here are those of the statements the repository sends (a
step's save alone and in a batch, a load's open tasks, a heartbeat, a retry), with its
own parameters, after such a churn.

A batch's save looks each row's task up once: its fence was a condition of the
compare-and-swap's join, which PostgreSQL evaluated for every pair of row and instance
its nested loop tried (n² lookups for n completions). A batch's create reads no task:
a new instance has none to finish, cancel or release, and the parts that did were
planned as a scan of the whole table.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from statewrightd.domain import Status, TaskStatus
from statewrightd.store import postgres
from statewrightd.store import sql_postgres as q
from statewrightd.store.codec import encode_op
from statewrightd.store.records import (
    Create,
    InstanceRecord,
    RequestRecord,
    Save,
    TaskChange,
    TaskFinish,
)
from tests.support.store_records import history, task_record

INSTANCES = 400
FINISHED_EACH = 20  # tasks each instance finished before the statistics were taken
OPEN_THEN = 40  # open tasks when they were taken
ROUNDS = 5  # then: every open task completed, a new one scheduled and leased, each round
BATCH = 40  # the steps of a batch whose plan is read
NOW = datetime.now(UTC)
_TASK = """
INSERT INTO workflow_tasks (workflow_id, task_id, revision, state, queue, input, status,
                            max_attempts, available_time, schedule_time, deadline,
                            start_to_close_ms, retry, update_time)
SELECT 'w-' || i, %(task)s::int::text, %(task)s::int, 'charging', 'payments', '{}',
       %(status)s, 3, now(), now(), now() + interval '1 hour', 60000, '{}', now()
  FROM generate_series(1, %(upto)s::int) AS i
"""


def churned(conn: psycopg.Connection[Any]) -> int:
    """The tables as a busy queue leaves them between two analyses; the current task's id."""
    conn.execute("ALTER TABLE workflow_tasks SET (autovacuum_enabled = off)")
    conn.execute(
        """INSERT INTO workflow_instances (workflow_id, definition, version, state, status,
                                           context, revision, create_time, update_time)
           SELECT 'w-' || i, 'tasked', 1, 'charging', 'RUNNING', '{}', 1, now(), now()
             FROM generate_series(1, %s::int) AS i""",
        (INSTANCES,),
    )
    for n in range(1, FINISHED_EACH + 1):
        conn.execute(_TASK, {"task": n, "status": "COMPLETED", "upto": INSTANCES})
    task = FINISHED_EACH + 1
    conn.execute(_TASK, {"task": task, "status": "SCHEDULED", "upto": OPEN_THEN})
    conn.execute("ANALYZE workflow_tasks")
    conn.execute("ANALYZE workflow_instances")
    for _ in range(ROUNDS):
        task += 1
        conn.execute("UPDATE workflow_tasks SET status = 'COMPLETED' WHERE status <> 'COMPLETED'")
        conn.execute(_TASK, {"task": task, "status": "SCHEDULED", "upto": INSTANCES})
        conn.execute(
            """UPDATE workflow_tasks SET status = 'LEASED', lease_token = 't', attempt = 1,
                      lease_expire_time = now() + interval '1 minute'
                WHERE status = 'SCHEDULED'"""
        )
    return task


def leaving(wid: str, revision: int, request_id: str | None = None) -> Save:
    """The completion of the instance's open task that leaves its task state."""
    later = NOW + timedelta(seconds=1)
    new = InstanceRecord(
        wid, "tasked", 1, "done", Status.COMPLETED, {}, revision + 1, None, NOW, later
    )
    finish = TaskFinish(
        task_id=str(revision), status=TaskStatus.COMPLETED, lease_token="t", attempt=1, leased=True
    )
    request = None
    if request_id is not None:
        request = RequestRecord(request_id, wid, "CompleteTask", "f", b"", NOW)
    changes = TaskChange(cancel=True, finish=finish)
    return Save(new, revision, history(new), request, tasks=changes)


def plan(conn: psycopg.Connection[Any], statement: str, params: Any) -> str:
    return "\n".join(row[0] for row in conn.execute(f"EXPLAIN {statement}", params))


def other_indexes(conn: psycopg.Connection[Any]) -> list[str]:
    """Every index of the tasks' table but its primary key."""
    found = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE tablename = 'workflow_tasks'"
        " AND indexname <> 'workflow_tasks_pkey'"
    )
    return [row[0] for row in found]


def test_a_tasks_status_is_tested_after_its_rows_are_found_by_key(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        task = churned(conn)
        ops = [encode_op(leaving(f"w-{i}", task)) for i in range(1, 28)]
        lone = postgres._lone_statement(ops[0])
        plans = {"a step alone": plan(conn, lone, {**ops[0].params, "n_steps": "{}"})}
        kind = postgres._work(ops)
        fields = postgres._fields(postgres._SAVE_ROW, kind, False)
        rows_json = postgres._rows_json([e.params for e in ops], fields)
        plans["a batch"] = plan(conn, q.SAVE_MANYS[kind], (rows_json,))
        ids = json.dumps([f"w-{i}" for i in range(1, 28)])
        plans["a load's open tasks"] = plan(conn, q.SQL.open_tasks, {"ids": ids})
        key = {"workflow_id": "w-5", "task_id": str(task), "token": "t", "now": NOW}
        plans["a heartbeat"] = plan(conn, q.SQL.heartbeat_task, {**key, "details": None})
        retry = {"available": NOW, "error": None, "request_id": None, "expired_only": False}
        plans["a retry"] = plan(conn, q.SQL.retry_task, {**key, **retry})
        others = other_indexes(conn)
        assert "workflow_tasks_open" in others and "workflow_tasks_leased" in others
        for case, shown in plans.items():
            assert "workflow_tasks_pkey" in shown, (case, shown)
            used = [name for name in others if re.search(rf"\b{name}\b", shown)]
            assert not used, (case, used, shown)


def loops(node: dict[str, Any]) -> list[tuple[int, str]]:
    """(times run, what) of every node of an EXPLAIN ANALYZE plan in JSON."""
    found = [(node["Actual Loops"], f"{node['Node Type']} {node.get('Relation Name', '')}")]
    for child in node.get("Plans", []):
        found += loops(child)
    return found


def test_a_batch_save_looks_each_rows_task_up_once(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        task = churned(conn)
        for requested in (False, True):
            ops = [
                encode_op(leaving(f"w-{i}", task, f"r-{i}" if requested else None))
                for i in range(1, BATCH + 1)
            ]
            kind = postgres._work(ops)
            fields = postgres._fields(postgres._SAVE_ROW, kind, requested)
            rows_json = postgres._rows_json([e.params for e in ops], fields)
            statement = (q.SAVE_REQUESTS if requested else q.SAVE_MANYS)[kind]
            with conn.transaction(force_rollback=True):
                # Under load the planner put the instances outside and the rows inside;
                # over these smaller tables it takes that order only if it cannot
                # materialize the instances instead.
                conn.execute("SET LOCAL enable_material = off")
                row = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", (rows_json,))
                shown = row.fetchone()
            assert shown is not None
            ran = loops(shown[0][0]["Plan"])
            assert max(times for times, _ in ran) <= BATCH, (requested, sorted(ran)[-3:])


def starting(wid: str, request_id: str | None) -> Create:
    """A new instance that enters a task state: its first task scheduled."""
    new = InstanceRecord(wid, "tasked", 1, "charging", Status.RUNNING, {}, 1, None, NOW, NOW)
    request = None
    if request_id is not None:
        request = RequestRecord(request_id, wid, "StartWorkflow", "f", b"", NOW)
    task = TaskChange(schedule=task_record(wid, "1", NOW))
    return Create(new, history(new), request, tasks=task)


def test_a_batch_create_reads_no_task(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        churned(conn)
        for requested in (False, True):
            ops = [
                encode_op(starting(f"new-{i}", f"r-{i}" if requested else None))
                for i in range(1, BATCH + 1)
            ]
            kind = postgres._work(ops)
            fields = postgres._fields(postgres._CREATE_ROW, kind, requested)
            rows_json = postgres._rows_json([e.params for e in ops], fields)
            statement = (q.CREATE_REQUESTS if requested else q.CREATE_MANYS)[kind]
            shown = plan(conn, statement, (rows_json,))
            reads = [
                line for line in shown.splitlines() if "Scan" in line and "workflow_tasks" in line
            ]
            assert not reads, (requested, reads)
            assert "Insert on workflow_tasks" in shown
