"""The flow-control benchmark: what a queue's limits cost.

Not a test. Run it through bench/run_flow.sh, which brings its own PostgreSQL. Two parts:

1. ``steps``: one statewrightd on 127.0.0.1, two queues of the same one-task workflow,
   ``bench.free`` (no limits: today's one-statement claim) and ``bench.keyed``
   (``key_max_leased: 1`` over ``--keys`` concurrency keys, so every claim takes the
   queue's lock, counts leases by key and reads its window). For each queue in turn,
   ``--tasks`` instances are started up front, then ``--pollers`` asyncio pollers (in
   this process, completing each task at once) work them off; the report gives task steps
   completed per second for each, and their ratio, in one run (the queues alternate, so
   both see the same machine).
2. ``claim``: the claim itself at a large backlog, on the repository (no server):
   ``--backlog`` ready tasks over ``--backlog-keys`` keys, written straight into the
   tables; the median time of one lease of 10 tasks, without limits and with
   ``key_max_leased: 1`` (the leases are put back after each, so every claim sees the
   same backlog).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import grpc
import psycopg
from google.protobuf import duration_pb2
from statewright.v1 import task_service_pb2 as tpb
from statewright.v1 import task_service_pb2_grpc as tpb_grpc
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.timer_bench import server, workspace
from statewrightd.store import open_repository
from statewrightd.store.flow import QueueConfig
from statewrightd.store.schema import migrate
from tests.support import citus

DEFINITIONS = {
    f"flow-{name}.yaml": f"""
name: flow-{name}
version: 1
context:
  key: {{type: string, default: ""}}
states:
  work:
    task: {{queue: bench.{name}, concurrency_key: "context.key"}}
transitions:
  - {{from: work, to: __finish__}}
"""
    for name in ("free", "keyed")
}


async def start_all(target: str, name: str, tasks: int, keys: int) -> None:
    async with grpc.aio.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        todo = iter(range(tasks))

        async def starter() -> None:
            for i in todo:
                context = {"key": f"k{i % keys}"}
                request = pb.StartWorkflowRequest(definition=f"flow-{name}")
                request.input.update(context)
                await stub.StartWorkflow(request, timeout=60)

        await asyncio.gather(*(starter() for _ in range(16)))


async def work_off(target: str, queue: str, tasks: int, pollers: int) -> float:
    """Task steps completed per second until ``tasks`` are done."""
    done = 0
    async with grpc.aio.insecure_channel(target) as channel:
        stub = tpb_grpc.TaskServiceStub(channel)

        async def poller(n: int) -> None:
            nonlocal done
            wait = duration_pb2.Duration(seconds=1)
            while done < tasks:
                request = tpb.PollTasksRequest(
                    queue=queue, identity=f"bench-{n}", max_tasks=10, wait=wait
                )
                got = (await stub.PollTasks(request, timeout=30)).tasks
                for task in got:
                    await stub.CompleteTask(
                        tpb.CompleteTaskRequest(name=task.name, lease_token=task.lease_token),
                        timeout=30,
                    )
                    done += 1

        began = time.monotonic()
        await asyncio.gather(*(poller(n) for n in range(pollers)))
        return done / (time.monotonic() - began)


def steps(database: str, args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, list[float]] = {"free": [], "keyed": []}
    with (
        workspace(DEFINITIONS, "flow-bench-") as (definitions, logs),
        server(database, definitions, logs, "flow") as (target, _pid),
    ):
        names = ("free",) if args.free_only else ("free", "keyed")
        with grpc.insecure_channel(target) as channel:
            config = tpb.QueueConfig(queue="bench.keyed", key_max_leased=1)
            if not args.free_only:
                tpb_grpc.TaskServiceStub(channel).SetQueueConfig(
                    tpb.SetQueueConfigRequest(config=config), timeout=10
                )
        for _ in range(args.repeat):
            for name in names:
                asyncio.run(start_all(target, name, args.tasks, args.keys))
                rate = asyncio.run(work_off(target, f"bench.{name}", args.tasks, args.pollers))
                out[name].append(rate)
                print(f"  {name}: {rate:,.0f} task steps/s", flush=True)
    free = statistics.median(out["free"])
    if args.free_only:
        return {"free_steps_per_s": free}
    keyed = statistics.median(out["keyed"])
    return {"free_steps_per_s": free, "keyed_steps_per_s": keyed, "ratio": keyed / free}


def claim(database: str, args: argparse.Namespace) -> dict[str, object]:
    now = datetime.now(UTC)
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(
            """
INSERT INTO workflow_instances (workflow_id, definition, version, state, status, context,
                                revision, create_time, update_time)
SELECT 'c-' || i, 'flow-keyed', 1, 'work', 'RUNNING', '{}'::jsonb, 1, %(now)s, %(now)s
  FROM generate_series(1, %(n)s) i""",
            {"now": now, "n": args.backlog},
        )
        conn.execute(
            """
INSERT INTO workflow_tasks (workflow_id, task_id, revision, state, queue, input, status,
    max_attempts, available_time, schedule_time, deadline, start_to_close_ms, retry,
    update_time, priority, concurrency_key)
SELECT 'c-' || i, '1', 1, 'work', q.queue, '{}'::jsonb, 'SCHEDULED', 3,
       %(now)s - i * interval '1 ms', %(now)s, %(now)s + interval '1 day', 60000, '{}'::jsonb,
       %(now)s, 3, 'k' || (i %% %(keys)s)
  FROM generate_series(1, %(n)s) i,
       LATERAL (SELECT CASE WHEN i %% 2 = 0 THEN 'claim.free' ELSE 'claim.keyed' END) q(queue)""",
            {"now": now, "n": args.backlog, "keys": args.backlog_keys},
        )
        conn.execute("ANALYZE workflow_tasks")
    repo = open_repository(database, migrate=False, pool_size=2)
    times: dict[str, list[float]] = {"claim.free": []}
    if not args.free_only:
        repo.set_queue_config(QueueConfig("claim.keyed", key_max_leased=1), now)
        times["claim.keyed"] = []
    try:
        for _ in range(args.claims):
            for queue, spent in times.items():
                at = datetime.now(UTC)
                began = time.perf_counter()
                leased = repo.lease_tasks(queue, at, 10, 30.0)
                spent.append((time.perf_counter() - began) * 1000)
                assert len(leased) == 10, (queue, len(leased))
                for t in leased:
                    repo.release_task(t.workflow_id, t.task_id, t.lease_token or "", at)
    finally:
        repo.close()
    return {
        "backlog_per_queue": args.backlog // 2,
        "keys": args.backlog_keys,
        **{f"claim_ms_{q[6:]}_p50": statistics.median(t) for q, t in times.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=["steps", "claim", "both"], default="both")
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--pollers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--backlog", type=int, default=200_000, help="tasks over both queues")
    parser.add_argument("--backlog-keys", type=int, default=10_000)
    parser.add_argument("--claims", type=int, default=20)
    parser.add_argument(
        "--citus", action="store_true", help="on the Citus cluster scripts/with-citus starts"
    )
    parser.add_argument(
        "--free-only", action="store_true", help="the claim without limits only (no config)"
    )
    args = parser.parse_args()
    admin = os.environ[citus.ENV if args.citus else "STATEWRIGHT_TEST_POSTGRES_URL"]
    report: dict[str, object] = {}
    for part in ("steps", "claim"):
        if args.part not in (part, "both"):
            continue
        database = _database(admin, part, args.citus)
        try:
            if part == "claim":
                migrate(database)
                report.update(claim(database, args))
            else:
                report.update(steps(database, args))
        finally:
            _drop(admin, database, args.citus)
    print(json.dumps(report, indent=2))


def _database(admin: str, part: str, on_citus: bool) -> str:
    if on_citus:  # Citus's default 32 shards, as deployed
        return citus.create_database(admin, shards=None)
    name = f"flow_bench_{part}_{os.getpid()}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return admin.rsplit("/", 1)[0] + "/" + name


def _drop(admin: str, database: str, on_citus: bool) -> None:
    if on_citus:
        citus.drop_database(admin, database)
        return
    name = database.rsplit("/", 1)[1]
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)".encode())


if __name__ == "__main__":
    main()
