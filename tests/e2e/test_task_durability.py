"""Tasks under replicas, duplicates and a killed server, on PostgreSQL.

Exactly once: two replicas over one database, four worker processes, 2,000 instances, and
every task completed three times at once (a retried call through each replica, and a
rival duplicate). SIGKILL: the server dies while workers hold 200 leases and completions
are in flight; after a restart every task completes, none twice, and every completion
that was acknowledged is in its instance's history.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from statewright.v1 import task_pb2

from tests.support.api import COMPLETED, Client, context_of, error_info, uid
from tests.support.databases import HistoryRow, PostgresDatabases, read_all_history
from tests.support.deployment import REPO, definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until
from tests.support.tasks import Tasks

QUEUE = "e2e.bulk"


def _start_many(clients: list[Client], count: int, prefix: str) -> list[str]:
    rotation = itertools.cycle(clients)
    targets = [(next(rotation), f"{prefix}-{i}") for i in range(count)]
    with ThreadPoolExecutor(8) as pool:
        started = list(
            pool.map(
                lambda t: t[0].start("task-flow", workflow_id=t[1], input={"route": "bulk"}),
                targets,
            )
        )
    assert all(s.workflow.state == "bulk" for s in started)
    return [wid for _, wid in targets]


def _check_applied_once(
    histories: dict[str, list[HistoryRow]], ids: list[str], acks: list[dict[str, Any]]
) -> None:
    """Each instance completed by exactly one step; every acknowledged completion is the
    one in its history, at the revision it was answered with."""
    for wid in ids:
        rows = histories[wid]
        assert [r.revision for r in rows] == [1, 2], (wid, rows)
        assert [r.event for r in rows].count("task_completed") == 1, rows
        assert rows[-1].status == "COMPLETED" and rows[-1].state == "done"
    for ack in acks:
        wid = ack["task"].split("/")[1]
        applied = histories[wid][ack["revision"] - 1]
        assert applied.context["done_by"] == ack["applied_by"], (ack, applied)
        # What the caller was told was applied is what was applied, and its own result
        # was applied unless it was told of a different one (a replay of a retry).
        assert applied.context["notes"] == [ack["applied_by"]], applied


def test_two_replicas_apply_each_task_once_under_duplicate_completions(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    count, workers = 2000, 4
    with (
        running_server(url, definitions, cwd=tmp_path) as a,
        running_server(url, definitions, cwd=tmp_path) as b,
        Client(a.target) as on_a,
        Client(b.target) as on_b,
    ):
        ids = _start_many([on_a, on_b], count, uid("once"))
        procs = []
        for n in range(workers):
            out = tmp_path / f"worker-{n}.jsonl"
            targets = f"{a.target},{b.target}" if n % 2 == 0 else f"{b.target},{a.target}"
            procs.append(
                (
                    out,
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "tests.support.duplicating_worker",
                            "--targets",
                            targets,
                            "--queue",
                            QUEUE,
                            "--name",
                            f"w{n}",
                            "--out",
                            str(out),
                        ],
                        cwd=REPO,
                    ),
                )
            )
        for _, proc in procs:
            assert proc.wait(300) == 0
        records = [json.loads(line) for out, _ in procs for line in out.read_text().splitlines()]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_task[record["task"]].append(record)
    assert len(by_task) == count, f"{len(by_task)} tasks leased of {count}"
    refusals = Counter(r.get("reason") for r in records if not r["acked"])
    assert set(refusals) <= {"LEASE_SUPERSEDED"}, refusals
    acks = [r for r in records if r["acked"]]
    for name, calls in by_task.items():
        told = {(r["revision"], r["applied_by"]) for r in calls if r["acked"]}
        assert len(told) == 1, (name, calls)  # every acknowledgement tells the same story
    histories = read_all_history(url)
    _check_applied_once(histories, ids, acks)
    winners = Counter(histories[w][-1].context["done_by"].endswith("-dup") for w in ids)
    print(f"{len(records)} completions, {len(acks)} acknowledged; refused: {dict(refusals)}")
    print(f"applied by the request-id pair: {winners[False]}, by the rival: {winners[True]}")
    postgres_databases.drop_soon(url)


def test_a_killed_server_loses_no_acknowledged_completion_and_applies_none_twice(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions")
    count = 200
    server = ServerProcess(database_url=url, definitions=definitions, cwd=tmp_path).start()
    try:
        with Client(server.target) as c:
            ids = _start_many([c], count, uid("kill"))
            tasks = Tasks(c.channel)
            leased: list[task_pb2.Task] = []
            while len(leased) < count:
                leased += tasks.poll(QUEUE, wait=5, max_tasks=100)
            assert len({t.name for t in leased}) == count
        acks: list[dict[str, Any]] = []
        lock = threading.Lock()
        target = [server.target]

        def complete(task: task_pb2.Task) -> None:
            rid = f"{task.name}#complete"
            while True:
                with grpc.insecure_channel(target[0]) as channel:
                    try:
                        answer = Tasks(channel, timeout=5).complete(
                            task, {"by": "killer"}, request_id=rid
                        )
                    except grpc.RpcError as err:
                        if err.code() in (
                            grpc.StatusCode.UNAVAILABLE,
                            grpc.StatusCode.DEADLINE_EXCEEDED,
                            grpc.StatusCode.CANCELLED,
                        ):
                            time.sleep(0.1)
                            continue
                        raise AssertionError(f"{task.name}: {error_info(err)}") from err
                with lock:
                    acks.append(
                        {
                            "task": task.name,
                            "revision": answer.workflow.revision,
                            "applied_by": context_of(answer.workflow)["done_by"],
                        }
                    )
                return

        with ThreadPoolExecutor(16) as pool:
            futures = [pool.submit(complete, t) for t in leased]
            assert wait_until(lambda: len(acks) >= count // 4, 30, interval=0.01)
            server.signal(signal.SIGKILL)
            server.wait(10)
            killed_with = len(acks)
            server = ServerProcess(database_url=url, definitions=definitions, cwd=tmp_path)
            server.start()
            target[0] = server.target
            for future in futures:
                future.result(timeout=120)
        print(f"SIGKILL after {killed_with} of {count} completions were acknowledged")
        assert killed_with < count, "every completion finished before the kill"
        assert len(acks) == count
        with Client(server.target) as c:
            assert all(c.get(w).status == COMPLETED for w in ids)
    finally:
        server.stop()
    _check_applied_once(read_all_history(url), ids, acks)
    postgres_databases.drop_soon(url)
