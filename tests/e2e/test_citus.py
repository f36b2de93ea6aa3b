"""Two server processes on one Citus database: the acceptance scenarios, distributed.

Every instance's rows live on the worker that holds its shard; the servers reach them
through the coordinator (reads) and through delegated shard functions (steps, claims).
Whatever node holds an instance, and whichever replica steps it, the answers are those of
one PostgreSQL: starts, resumes and signals apply exactly once, a timer fires once, a task
is leased once and completes its step, a watcher on one replica sees every revision the
other one saves, and a retried request id is answered from its record.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
import psycopg
import pytest
from statewright.v1 import task_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support import citus
from tests.support.api import COMPLETED, RUNNING, WAITING, Client, context_of, uid
from tests.support.databases import read_all_history, read_history
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import wait_until
from tests.support.tasks import Tasks

pytestmark = pytest.mark.citus

NOT_APPLIED = {
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


@dataclass
class Cluster:
    database_url: str
    a: Client
    b: Client


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    admin = citus.citus_admin_url()
    # Citus's own number of shards (32): many shard groups on each worker, as deployed.
    url = citus.create_database(admin, shards=None)
    root = tmp_path_factory.mktemp("citus")
    definitions = definitions_dir(root / "definitions")
    try:
        # Both replicas migrate at start, at once: one distributes, the other finds it done.
        with (
            running_server(url, definitions, cwd=root) as first,
            running_server(url, definitions, cwd=root) as second,
            Client(first.target) as a,
            Client(second.target) as b,
        ):
            yield Cluster(url, a, b)
            for server in (first, second):
                assert "Traceback" not in server.log(), server.log()
    finally:
        citus.drop_database(admin, url)


def _nodes_holding(database_url: str, workflow_ids: list[str]) -> set[int]:
    with psycopg.connect(database_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT DISTINCT p.groupid FROM unnest(%s::text[]) AS w(id)"
            " JOIN pg_dist_placement p"
            " ON p.shardid = get_shard_id_for_distribution_column('workflow_instances', w.id)",
            (workflow_ids,),
        ).fetchall()
    return {r[0] for r in rows}


def test_the_schema_is_distributed_by_workflow_id(cluster: Cluster) -> None:
    with psycopg.connect(cluster.database_url, autocommit=True) as conn:
        kinds: dict[str, str] = dict(
            conn.execute(
                "SELECT logicalrelid::regclass::text, partmethod FROM pg_dist_partition"
            ).fetchall()
        )
        groups = conn.execute(
            "SELECT count(DISTINCT colocationid) FROM pg_dist_partition WHERE partmethod = 'h'"
        ).fetchone()
    assert kinds == {
        "workflow_instances": "h",
        "workflow_history": "h",
        "workflow_timers": "h",
        "workflow_tasks": "h",
        "workflow_requests": "h",
        "workflow_tombstones": "h",
        "workflow_search": "h",
        "workflow_children": "h",  # by the child's id: a link lives beside its child
        "workflow_definitions": "n",
        "schedules": "n",  # a reference table: schedules are not per instance
        "batch_operations": "n",  # a reference table: its claim locks within one shard
        "batch_items": "h",  # by the batch's id: a batch's items on one shard
    }
    assert groups == (1,)  # all colocated


def test_starts_resumes_and_signals_through_both_replicas(cluster: Cluster) -> None:
    a, b = cluster.a, cluster.b
    approvals = [uid("gate") for _ in range(12)]
    for i, wid in enumerate(approvals):
        (a, b)[i % 2].start("gated-approval", workflow_id=wid, input={"amount": 10 + i})
    # The instances are spread over the workers.
    assert len(_nodes_holding(cluster.database_url, approvals)) == 2
    for i, wid in enumerate(approvals):
        resumed = (b, a)[i % 2].resume(wid, "approve").workflow
        assert (resumed.state, resumed.revision) == ("approved", 2)
    tally = uid("tally")
    a.start("tally", workflow_id=tally)
    for k in range(6):
        assert (a, b)[k % 2].signal(tally, "tick", {"id": f"t{k}"}).accepted
    wf = b.get(tally)
    assert (wf.status, wf.revision, context_of(wf)["count"]) == (RUNNING, 7, 6)
    assert [h.revision for h in read_history(cluster.database_url, tally)] == list(range(1, 8))


def test_concurrent_signals_through_both_replicas_apply_exactly_once(cluster: Cluster) -> None:
    clients = (cluster.a, cluster.b)
    ids = [uid("storm") for _ in range(8)]
    for i, wid in enumerate(ids):
        clients[i % 2].start("tally", workflow_id=wid)
    jobs = [
        (clients[(i + k) % 2], wid, f"{wid}/{k}") for k in range(8) for i, wid in enumerate(ids)
    ]
    accepted: set[str] = set()
    unknown: dict[str, str] = {}

    def send(job: tuple[Client, str, str]) -> None:
        client, wid, signal_id = job
        try:
            if client.signal(wid, "tick", {"id": signal_id}, timeout=60).accepted:
                accepted.add(signal_id)
        except grpc.RpcError as err:
            if err.code() not in NOT_APPLIED:
                unknown[signal_id] = f"{err.code()}: {err.details()}"

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(send, jobs))
    assert not unknown, unknown
    history = read_all_history(cluster.database_url)
    for wid in ids:
        rows = history[wid]
        assert [h.revision for h in rows] == list(range(1, len(rows) + 1))
        seen = rows[-1].context["seen"]
        assert len(seen) == len(set(seen)) == len(rows) - 1
        assert set(seen) == {s for s in accepted if s.startswith(f"{wid}/")}
        for previous, row in itertools.pairwise(rows):
            assert row.context["seen"][:-1] == previous.context["seen"]


def test_a_timer_fires_once_across_replicas(cluster: Cluster) -> None:
    ids = [uid("esc") for _ in range(10)]
    for i, wid in enumerate(ids):
        started = (cluster.a, cluster.b)[i % 2].start("escalation", workflow_id=wid).workflow
        assert (started.status, started.state) == (WAITING, "awaiting")

    def escalated() -> bool:
        return all(cluster.a.get(w).state == "escalated" for w in ids)

    assert wait_until(escalated, 30)
    time.sleep(1.5)  # a second firing, were there one, would have landed by now
    history = read_all_history(cluster.database_url)
    for wid in ids:
        events = Counter(h.event for h in history[wid])
        assert events["after"] == 1, history[wid]
        assert [h.revision for h in history[wid]] == [1, 2]
    assert cluster.b.workflow_diagnostics(ids[0]).diagnostics.timers == []


def test_a_task_is_leased_once_and_its_completion_steps_the_instance(cluster: Cluster) -> None:
    ids = [uid("task") for _ in range(6)]
    for i, wid in enumerate(ids):
        (cluster.a, cluster.b)[i % 2].start("task-flow", workflow_id=wid, input={"route": "apply"})
    workers = (Tasks(cluster.a.channel), Tasks(cluster.b.channel))
    leased: list[tuple[int, task_pb2.Task]] = []
    deadline = time.monotonic() + 30
    while len(leased) < len(ids) and time.monotonic() < deadline:
        for k, tasks in enumerate(workers):
            leased.extend((k, t) for t in tasks.poll("e2e.apply", wait=1.0, max_tasks=4))
    names = [t.name for _, t in leased]
    assert sorted(names) == sorted(f"workflows/{w}/tasks/1" for w in ids), names
    for k, task in leased:
        # Completed through the replica that did not lease it.
        workers[1 - k].complete(task, {"total": 3, "by": f"worker-{k}"})
    for wid in ids:
        wf = cluster.a.get(wid)
        assert (wf.state, wf.status, wf.revision) == ("done", COMPLETED, 2), wf
        assert context_of(wf)["total"] == 3.0


def test_the_leasing_replica_completes_on_what_its_poll_read_unless_it_is_outdated(
    cluster: Cluster,
) -> None:
    """As on PostgreSQL: the replica that leased a task, though it never stepped the
    instance, completes it on what its poll read (node by node); a copy outdated by a
    pause and an unpause through the other replica loses the compare-and-swap once, and
    the completion is decided again on the instance as stored."""
    a, b = cluster.a, cluster.b
    fresh, outdated = uid("task"), uid("task")
    for wid in (fresh, outdated):
        a.start("task-flow", workflow_id=wid, input={"route": "apply"})
    leased: dict[str, task_pb2.Task] = {}
    deadline = time.monotonic() + 30
    while len(leased) < 2 and time.monotonic() < deadline:
        for task in Tasks(b.channel).poll("e2e.apply", wait=1.0, max_tasks=2):
            leased[task.name.split("/")[1]] = task
    assert sorted(leased) == sorted((fresh, outdated))
    a.stub.PauseWorkflow(pb.PauseWorkflowRequest(name=f"workflows/{outdated}"), timeout=10)
    a.stub.UnpauseWorkflow(pb.UnpauseWorkflowRequest(name=f"workflows/{outdated}"), timeout=10)

    def conflicts() -> int:
        return sum(c.diagnostics().persistence.conflicts for c in (a, b))

    before = conflicts()
    done = Tasks(b.channel).complete(leased[fresh], {"total": 1, "by": "w"}).workflow
    assert (done.status, done.revision) == (COMPLETED, 2) and conflicts() == before
    done = Tasks(b.channel).complete(leased[outdated], {"total": 2, "by": "w"}).workflow
    assert (done.status, done.revision, done.paused) == (COMPLETED, 4, False)
    assert context_of(done)["total"] == 2.0 and conflicts() == before + 1
    assert [h.revision for h in read_history(cluster.database_url, outdated)] == [1, 2, 3, 4]


def test_a_watcher_on_one_replica_sees_every_step_of_the_other(cluster: Cluster) -> None:
    wid = uid("watched")
    cluster.a.start("tally", workflow_id=wid)
    seen: list[pb.WatchWorkflowResponse] = []
    request = pb.WatchWorkflowRequest(name=f"workflows/{wid}")
    stream = cluster.b.stub.WatchWorkflow(request, timeout=60)
    reader = threading.Thread(target=lambda: seen.extend(stream))
    reader.start()
    assert wait_until(lambda: len(seen) >= 1, 10)
    for k in range(5):
        assert cluster.a.signal(wid, "tick", {"id": f"w{k}"}).accepted
    cluster.a.signal(wid, "close", {})
    reader.join(30)
    assert not reader.is_alive(), "the stream did not end after the terminal revision"
    assert [m.revision for m in seen] == list(range(seen[0].revision, 8))
    assert seen[-1].workflow.status == COMPLETED


def test_a_request_id_retried_through_the_other_replica_is_answered_once(
    cluster: Cluster,
) -> None:
    rid = uid("req")
    first = cluster.a.start("mail-approval", input={"topic": "citus"}, request_id=rid)
    again = cluster.b.start("mail-approval", input={"topic": "citus"}, request_id=rid)
    assert again == first
    wid = first.workflow.workflow_id
    resumed = cluster.b.resume(wid, request_id=f"{rid}-resume")
    assert cluster.a.resume(wid, request_id=f"{rid}-resume") == resumed
    assert [h.revision for h in read_history(cluster.database_url, wid)] == [1, 2]
