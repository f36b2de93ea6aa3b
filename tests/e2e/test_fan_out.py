"""Fan-out over real gRPC on PostgreSQL and Citus: a `map` task state worked by four worker
processes.

Never more than `max_concurrency` items are leased at once (checked from the task rows:
each item's attempt start and its end, the row's update time), every item is applied once
and the join's `results` are in input order; an item that fails for good with
`tolerated_failures: 0` fires `task_failed`, and the other open items are cancelled in that
step. The item count is modest for CI; STATEWRIGHT_MAP_E2E_ITEMS sets it (the issue's
figure is 1,000).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import psycopg
import pytest

from tests.e2e.test_flow_control import most_at_once
from tests.support.api import COMPLETED, Client, context_of, uid
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until
from tests.support.tasks import Tasks

ITEMS = max(2, int(os.environ.get("STATEWRIGHT_MAP_E2E_ITEMS", "300")))
CONCURRENCY = 50
WORKERS = 4

BATCH = """
name: fan-batch
version: 1
description: Charge every line of an order, at most 50 at once.
context:
  lines:        {type: list, default: []}
  charges:      {type: list, default: []}
  failed_lines: {type: list, default: []}
  why:          {type: map, default: {}}
states:
  charge_lines:
    task:
      queue: fanout.e2e
      map: "context.lines"
      input: "{'sku': item.sku, 'fail': item.fail, 'line': index}"
      max_concurrency: 50
      tolerated_failures: 0
      retry: {max_attempts: 2, initial_interval: 1s, non_retryable: [DECLINED]}
      timeouts: {start_to_close: 60s}
      apply: {charges: "results", failed_lines: "failures"}
  charged: {}
  stopped: {}
transitions:
  - {from: charge_lines, to: charged}
  - {from: charge_lines, on: task_failed, to: stopped, set: {why: "event.payload"}}
"""

# A worker process: polls the queue, completes each item with its line and sku (or fails
# for good the one marked `fail`), until the stop file appears or its time runs out.
WORKER = r"""
import os, sys, time
import grpc
from google.protobuf import duration_pb2, struct_pb2
from statewright.v1 import task_pb2, task_service_pb2 as pb, task_service_pb2_grpc as pb_grpc

target, queue, stop, name = sys.argv[1:5]
stub = pb_grpc.TaskServiceStub(grpc.insecure_channel(target))
end = time.monotonic() + 120
done = 0
while time.monotonic() < end and not os.path.exists(stop):
    request = pb.PollTasksRequest(queue=queue, identity=name, max_tasks=5,
                                  wait=duration_pb2.Duration(seconds=1))
    for task in stub.PollTasks(request, timeout=15).tasks:
        item = dict(task.input)
        try:
            if item.get("fail"):
                error = task_pb2.TaskError(type="DECLINED", message=f"line {int(item['line'])}")
                stub.FailTask(pb.FailTaskRequest(name=task.name, lease_token=task.lease_token,
                                                 error=error, non_retryable=True), timeout=15)
                continue
            result = struct_pb2.Struct()
            result.update({"line": item["line"], "sku": item["sku"], "by": name})
            stub.CompleteTask(pb.CompleteTaskRequest(name=task.name, lease_token=task.lease_token,
                                                     result=result), timeout=15)
            done += 1
        except grpc.RpcError as exc:
            # Cancelled with its state (task_failed left it): nothing to do.
            if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
print(f"{name} completed {done}")
"""


@pytest.fixture(scope="module")
def database(module_server_database: str) -> str:
    return module_server_database


@pytest.fixture(scope="module")
def server(database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("fanout")
    definitions = definitions_dir(
        root / "definitions",
        examples=False,
        test_definitions=False,
        extra={"fan-batch.yaml": BATCH},
    )
    with running_server(database, definitions, cwd=root) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def run_workers(server: ServerProcess, tmp: Path, finished: Callable[[], bool]) -> list[str]:
    """Four worker processes until ``finished()`` says the instance is done."""
    stop = tmp / "stop"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, server.target, "fanout.e2e", str(stop), f"w{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(WORKERS)
    ]
    try:
        assert wait_until(finished, timeout=180), "the instance did not get there in time"
    finally:
        stop.touch()
        outputs = []
        for w in workers:
            out, err = w.communicate(timeout=30)
            outputs.append(out + err)
    for w, out in zip(workers, outputs, strict=True):
        assert w.returncode == 0, out
    return outputs


def item_rows(database: str, wid: str) -> list[tuple[int, str, datetime | None, datetime, int]]:
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT item_index, status, attempt_start_time, update_time, attempt"
            " FROM workflow_tasks WHERE workflow_id = %s ORDER BY item_index",
            (wid,),
        ).fetchall()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def lines(n: int, fail: int | None = None) -> list[dict[str, object]]:
    return [{"sku": f"sku-{i}", "fail": i == fail} for i in range(n)]


def test_a_map_is_worked_at_most_max_concurrency_at_once_and_joins_in_order(
    client: Client, server: ServerProcess, database: str, tmp_path: Path
) -> None:
    wid = uid("fan")
    client.start("fan-batch", workflow_id=wid, input={"lines": lines(ITEMS)})
    started = client.get(wid)
    assert started.fan_out.total == ITEMS and started.fan_out.open == ITEMS
    outputs = run_workers(server, tmp_path, lambda: client.get(wid).status == COMPLETED)
    assert sum(int(o.split()[-1]) for o in outputs) == ITEMS, outputs
    assert sum(int(o.split()[-1]) > 0 for o in outputs) >= 2, "the workers shared the items"
    done = client.get(wid)
    assert done.state == "charged" and not done.HasField("fan_out")
    context = context_of(done)
    assert [c["line"] for c in context["charges"]] == list(range(ITEMS))
    assert [c["sku"] for c in context["charges"]] == [f"sku-{i}" for i in range(ITEMS)]
    assert context["failed_lines"] == [None] * ITEMS
    rows = item_rows(database, wid)
    assert [r[0] for r in rows] == list(range(ITEMS))
    assert all(r[1] == "COMPLETED" and r[4] == 1 for r in rows), "each item applied once"
    spans: list[tuple[datetime, datetime, str | None]] = [
        (start, end, None) for _, _, start, end, _ in rows if start is not None
    ]
    assert len(spans) == ITEMS
    assert most_at_once(spans) <= CONCURRENCY
    assert most_at_once(spans) >= min(ITEMS, 4), "items were worked side by side"
    # One step an item, and the join: history has every item's step.
    assert done.revision == ITEMS + 1
    listed = Tasks(client.channel).list(workflow=f"workflows/{wid}", page_size=100)
    assert sorted(t.item_index for t in listed) == list(range(ITEMS))


def test_an_item_that_fails_for_good_fires_task_failed_and_cancels_the_rest(
    client: Client, server: ServerProcess, database: str, tmp_path: Path
) -> None:
    n = min(ITEMS, 120)
    bad = n // 2
    wid = uid("fanfail")
    client.start("fan-batch", workflow_id=wid, input={"lines": lines(n, fail=bad)})
    run_workers(server, tmp_path, lambda: client.get(wid).state == "stopped")
    stopped = client.get(wid)
    why = context_of(stopped)["why"]
    assert (why["type"], why["item"], why["total"], why["given_up"]) == ("DECLINED", bad, n, 1)
    assert [e["item"] for e in why["errors"]] == [bad]
    rows = item_rows(database, wid)
    statuses = [r[1] for r in rows]
    assert statuses[bad] == "FAILED" and statuses.count("FAILED") == 1
    cancelled = statuses.count("CANCELLED")
    assert cancelled >= 1 and statuses.count("COMPLETED") + cancelled == n - 1
    assert why["completed"] == statuses.count("COMPLETED")
