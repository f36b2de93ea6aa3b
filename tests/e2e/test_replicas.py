"""Two server processes on one PostgreSQL database.

PostgreSQL's compare-and-swap is the only arbiter: a replica whose cached session is stale
loses the CAS, reloads and re-applies the signal; decisions that write nothing are
confirmed against a fresh load. No accepted signal is lost or applied twice, and every
instance's history has dense revisions. PostgreSQL only: SQLite is embedded, one process.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    CANCELLED,
    COMPLETED,
    RUNNING,
    WAITING,
    Client,
    context_of,
    error_info,
    expect_error,
    uid,
)
from tests.support.databases import PostgresDatabases, read_all_history, read_history
from tests.support.deployment import definitions_dir, running_server
from tests.support.tasks import BACKOFF, Tasks
from tests.support.tasks import COMPLETED as TASK_COMPLETED

INSTANCES = 20
SIGNALS_PER_INSTANCE = 15
THREADS = 8
# Answers that prove a signal was not applied; anything else would leave its fate open.
NOT_APPLIED = {
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


@dataclass
class Replicas:
    database_url: str
    a: Client
    b: Client

    def conflicts(self) -> int:
        return sum(c.diagnostics().persistence.conflicts for c in (self.a, self.b))


@pytest.fixture(scope="module")
def replicas(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Replicas]:
    root = tmp_path_factory.mktemp("replicas")
    url = postgres_databases.create()
    definitions = definitions_dir(root / "definitions")
    with (
        running_server(url, definitions, cwd=root) as first,
        running_server(url, definitions, cwd=root) as second,
        Client(first.target) as a,
        Client(second.target) as b,
    ):
        yield Replicas(url, a, b)
        for server in (first, second):
            assert "Traceback" not in server.log(), server.log()
    postgres_databases.drop_soon(url)


def test_a_stale_replica_reloads_and_reapplies(replicas: Replicas) -> None:
    a, b = replicas.a, replicas.b
    wid = uid("tally")
    a.start("tally", workflow_id=wid)
    before = replicas.conflicts()
    # Alternating replicas: each one's cached session is always one step behind.
    for i in range(6):
        response = (a, b)[i % 2].signal(wid, "tick", {"id": f"x{i}"})
        assert response.accepted
        assert response.workflow.revision == i + 2
        assert context_of(response.workflow)["seen"] == [f"x{k}" for k in range(i + 1)]
    assert replicas.conflicts() > before
    rows = read_history(replicas.database_url, wid)
    assert [h.revision for h in rows] == list(range(1, 8))


def test_refusals_made_on_a_stale_cache_are_confirmed_against_the_store(
    replicas: Replicas,
) -> None:
    a, b = replicas.a, replicas.b
    # A caches the instance WAITING; B moves it to RUNNING. A signal through A must not
    # be refused as "not running" on the strength of A's stale cache.
    gated = uid("gated")
    a.start("gated-approval", workflow_id=gated)
    assert a.get(gated).status == WAITING
    b.resume(gated, "revise")
    response = a.signal(gated, "resubmit")
    assert response.accepted and response.workflow.status == WAITING
    assert response.workflow.revision == 3
    # A caches it WAITING at revision 3; B resumes it. A's expected_revision check and
    # its "not waiting" answer both come from the store.
    b.resume(gated, "revise")
    info = expect_error(
        lambda: a.resume(gated, "reject", expected_revision=3),
        grpc.StatusCode.ABORTED,
        "REVISION_MISMATCH",
    )
    assert info.metadata["actual_revision"] == "4"
    expect_error(
        lambda: a.resume(gated, "reject"), grpc.StatusCode.FAILED_PRECONDITION, "NOT_WAITING"
    )
    # A caches a RUNNING tally; B closes it: A's tick is not applied to the closed instance.
    tally = uid("tally")
    a.start("tally", workflow_id=tally)
    b.signal(tally, "close")
    late = a.signal(tally, "tick", {"id": "late"})
    assert (late.accepted, late.reason) == (False, pb.SIGNAL_REJECTION_NOT_RUNNING)
    assert late.workflow.status == COMPLETED
    assert context_of(b.get(tally))["seen"] == []
    # A cancel decided on a stale cache is re-decided too.
    cancelled = uid("tally")
    b.start("tally", workflow_id=cancelled)
    a.signal(cancelled, "tick", {"id": "1"})
    b.cancel(cancelled)
    expect_error(
        lambda: a.cancel(cancelled), grpc.StatusCode.FAILED_PRECONDITION, "ALREADY_TERMINAL"
    )
    # An expected revision newer than A's cache is checked against the store, not refused.
    moved = uid("tally")
    a.start("tally", workflow_id=moved)
    b.signal(moved, "tick", {"id": "1"})
    wf = a.cancel(moved, expected_revision=2)
    assert (wf.status, wf.revision) == (CANCELLED, 3)
    assert context_of(wf)["seen"] == ["1"]


def test_return_existing_answers_the_stored_instance_not_a_stale_cache(
    replicas: Replicas,
) -> None:
    a, b = replicas.a, replicas.b
    wid = uid("tally")
    a.start("tally", workflow_id=wid)
    # A caches the instance at revision 1; B moves it on twice.
    b.signal(wid, "tick", {"id": "1"})
    b.signal(wid, "tick", {"id": "2"})
    again = a.start("tally", workflow_id=wid, if_exists=pb.IF_EXISTS_POLICY_RETURN_EXISTING)
    assert not again.created
    assert again.workflow.revision == 3
    assert context_of(again.workflow)["seen"] == ["1", "2"]


@dataclass
class _Ledger:
    accepted: dict[str, pb.SignalWorkflowResponse] = field(default_factory=dict)
    not_applied: dict[str, str] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)


def test_concurrent_signals_through_both_replicas_are_each_applied_exactly_once(
    replicas: Replicas,
) -> None:
    clients = (replicas.a, replicas.b)
    ids = [uid("storm") for _ in range(INSTANCES)]
    for i, wid in enumerate(ids):
        clients[i % 2].start("tally", workflow_id=wid)
    # Interleaved so that concurrent signals to one instance go through both replicas.
    jobs = [
        (clients[(i + k) % 2], wid, f"{wid}/{k}")
        for k in range(SIGNALS_PER_INSTANCE)
        for i, wid in enumerate(ids)
    ]
    ledger = _Ledger()
    before = replicas.conflicts()

    def send(job: tuple[Client, str, str]) -> None:
        client, wid, signal_id = job
        try:
            response = client.signal(wid, "tick", {"id": signal_id}, timeout=60)
        except grpc.RpcError as err:
            where = ledger.not_applied if err.code() in NOT_APPLIED else ledger.unknown
            where[signal_id] = f"{err.code()}: {err.details()}"
            return
        if response.accepted:
            ledger.accepted[signal_id] = response
        else:
            ledger.not_applied[signal_id] = pb.SignalRejection.Name(response.reason)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(send, jobs))

    print(f"accepted {len(ledger.accepted)}, not applied {ledger.not_applied}")
    assert not ledger.unknown, ledger.unknown
    assert len(ledger.accepted) + len(ledger.not_applied) == len(jobs)
    # Every signal of this test raced with others on the same instance through the other
    # replica: the reload-and-re-apply path carried most of them.
    assert replicas.conflicts() > before
    assert len(ledger.accepted) >= len(jobs) // 2, ledger.not_applied

    history = read_all_history(replicas.database_url)
    for wid in ids:
        rows = history[wid]
        assert [h.revision for h in rows] == list(range(1, len(rows) + 1)), wid
        for previous, row in itertools.pairwise(rows):
            # Each step applied exactly one signal on top of the step before it.
            assert row.event == "tick" and row.status == "RUNNING"
            assert row.context["seen"][:-1] == previous.context["seen"]
        seen = rows[-1].context["seen"]
        assert len(seen) == len(set(seen)) == len(rows) - 1
        accepted = {s for s in ledger.accepted if s.startswith(f"{wid}/")}
        assert set(seen) == accepted, (wid, set(seen) ^ accepted)
        wf = replicas.a.get(wid)
        assert (wf.status, wf.revision) == (RUNNING, len(rows))
        assert context_of(wf)["count"] == len(seen)
    # Every acceptance answered the durable step that applied it.
    for signal_id, response in ledger.accepted.items():
        wf = response.workflow
        row = history[wf.workflow_id][wf.revision - 1]
        assert row.context["seen"][-1] == signal_id
        assert context_of(wf)["seen"] == row.context["seen"]


def _race_starts(replicas: Replicas, rounds: int, *, explicit_ids: bool) -> None:
    """Each round sends one start request, with one request id, through both replicas at
    once (as a client retrying on another replica does)."""
    clients = (replicas.a, replicas.b)
    before = len(replicas.a.list_all(definition="order-pricing", page_size=1000))
    answers: list[list[pb.StartWorkflowResponse]] = []
    barrier = threading.Barrier(2)

    def start(client: Client, rid: str, wid: str) -> pb.StartWorkflowResponse:
        barrier.wait(10)
        return client.start(
            "order-pricing", workflow_id=wid, input={"items": ["x"]}, request_id=rid
        )

    with ThreadPoolExecutor(2) as pool:
        for _ in range(rounds):
            rid, wid = uid("req"), (uid("raced") if explicit_ids else "")
            answers.append(list(pool.map(start, clients, [rid, rid], [wid, wid])))
    created = len(replicas.a.list_all(definition="order-pricing", page_size=1000)) - before
    pairs = [(a.workflow.workflow_id, b.workflow.workflow_id) for a, b in answers]
    # Both callers get the one original answer, and one instance exists per request.
    assert [a == b for a, b in answers] == [True] * rounds, pairs
    assert created == rounds, f"{created} instances for {rounds} request ids"


def test_one_request_id_raced_through_both_replicas_with_an_explicit_id(
    replicas: Replicas,
) -> None:
    _race_starts(replicas, 10, explicit_ids=True)


def test_one_request_id_raced_through_both_replicas_starts_one_instance(
    replicas: Replicas,
) -> None:
    _race_starts(replicas, 20, explicit_ids=False)


def test_competing_resumes_through_both_replicas_apply_exactly_one(replicas: Replicas) -> None:
    clients = (replicas.a, replicas.b)
    barrier = threading.Barrier(2)

    def resume(client: Client, wid: str, event: str) -> str:
        barrier.wait(10)
        try:
            return client.resume(wid, event).workflow.state
        except grpc.RpcError as err:
            return f"{err.code().name}:{error_info(err).reason}"

    with ThreadPoolExecutor(2) as pool:
        for _ in range(10):
            wid = uid("contest")
            clients[0].start("gated-approval", workflow_id=wid, input={"amount": 1})
            answers = list(pool.map(resume, clients, [wid, wid], ["approve", "reject"]))
            winners = [a for a in answers if not a.startswith(("FAILED_PRECONDITION", "ABORTED"))]
            assert len(winners) == 1, answers
            losers = [a for a in answers if a not in winners]
            # The loser lost the CAS (or saw the winner's step): reloaded, no longer WAITING.
            assert losers == ["FAILED_PRECONDITION:NOT_WAITING"], answers
            wf = replicas.b.get(wid)
            assert (wf.state, wf.revision) == (winners[0], 2)
            rows = read_history(replicas.database_url, wid)
            assert [h.revision for h in rows] == [1, 2]


def test_a_task_leased_through_one_replica_and_beaten_through_the_other_completes_as_stored(
    replicas: Replicas,
) -> None:
    """The replica that leased a task completes it without reading it first, unless the
    task changed since through the other replica: then the completion reads it, and its
    answer shows the task as stored."""
    a, b = replicas.a, replicas.b
    for beat_through in (a, b):
        wid = uid("task-flow")
        a.start("task-flow", workflow_id=wid, input={"route": "apply"})
        task = Tasks(a.channel).poll_one("e2e.apply")
        details = {"through": "a" if beat_through is a else "b"}
        assert not Tasks(beat_through.channel).heartbeat(task, details).cancel_requested
        answer = Tasks(a.channel).complete(task, {"total": 1, "by": "w"}, request_id=uid("c"))
        assert answer.workflow.status == COMPLETED and answer.workflow.revision == 2
        assert answer.task.status == TASK_COMPLETED and answer.task.attempt == 1
        assert dict(answer.task.heartbeat_details) == details
        assert dict(Tasks(b.channel).get(task.name).heartbeat_details) == details
        assert [h.revision for h in read_history(replicas.database_url, wid)] == [1, 2]


def test_a_completion_retried_through_the_leasing_replica_gets_the_first_answer(
    replicas: Replicas,
) -> None:
    """A completion applied through the other replica, retried with its request id
    through the one that leased the task: the first answer again, the task as stored."""
    a, b = replicas.a, replicas.b
    wid = uid("task-flow")
    a.start("task-flow", workflow_id=wid, input={"route": "apply"})
    task = Tasks(a.channel).poll_one("e2e.apply")
    Tasks(b.channel).heartbeat(task, {"through": "b"})
    rid = uid("c")
    first = Tasks(b.channel).complete(task, {"total": 1, "by": "w"}, request_id=rid)
    again = Tasks(a.channel).complete(task, {"total": 1, "by": "w"}, request_id=rid)
    assert again.workflow == first.workflow and first.workflow.revision == 2
    assert again.task.status == TASK_COMPLETED and again.task.lease_token == ""
    assert dict(again.task.heartbeat_details) == {"through": "b"}
    assert [h.revision for h in read_history(replicas.database_url, wid)] == [1, 2]


def test_a_completion_through_a_replica_that_missed_its_tasks_scheduling_steps_no_stale_copy(
    replicas: Replicas,
) -> None:
    """A replica whose cached instance is older than the step that scheduled the task
    completes it on the instance as its lease read it (or loads it), instead of stepping
    the stale copy and losing the compare-and-swap."""
    a, b = replicas.a, replicas.b
    wid = uid("task-flow")
    a.start("task-flow", workflow_id=wid, input={"route": "apply"})  # A caches revision 1
    # Through B, the task state is entered again: task 1 cancelled, task 2 scheduled.
    assert b.signal(wid, "again").workflow.revision == 2
    task = Tasks(a.channel).poll_one("e2e.apply")
    assert task.name == f"workflows/{wid}/tasks/2"
    conflicts = replicas.conflicts()
    answer = Tasks(a.channel).complete(task, {"total": 2, "by": "w"}, request_id=uid("c"))
    assert answer.workflow.status == COMPLETED and answer.workflow.revision == 3
    assert context_of(answer.workflow)["done_by"] == "w"
    assert replicas.conflicts() == conflicts, "the stale copy was stepped and lost the CAS"
    assert [h.revision for h in read_history(replicas.database_url, wid)] == [1, 2, 3]


def _pause(client: Client, wid: str) -> pb.PauseWorkflowResponse:
    request = pb.PauseWorkflowRequest(name=f"workflows/{wid}", reason="e2e")
    return client.stub.PauseWorkflow(request, timeout=10)


def _unpause(client: Client, wid: str) -> pb.UnpauseWorkflowResponse:
    request = pb.UnpauseWorkflowRequest(name=f"workflows/{wid}", reason="e2e")
    return client.stub.UnpauseWorkflow(request, timeout=10)


def test_a_completion_through_the_leasing_replica_steps_the_instance_its_lease_read(
    replicas: Replicas,
) -> None:
    """The replica that leased a task, though it never stepped the instance, completes
    it (on what its poll read of the instance): nothing stepped the instance since, so
    its first save wins. The next test shows that copy is what the step starts from."""
    a, b = replicas.a, replicas.b
    wid = uid("task-flow")
    a.start("task-flow", workflow_id=wid, input={"route": "apply"})  # only A has stepped it
    task = Tasks(b.channel).poll_one("e2e.apply")
    conflicts = replicas.conflicts()
    answer = Tasks(b.channel).complete(task, {"total": 5, "by": "w"}, request_id=uid("c"))
    assert answer.workflow.status == COMPLETED and answer.workflow.revision == 2
    assert context_of(answer.workflow)["total"] == 5 and answer.task.status == TASK_COMPLETED
    assert replicas.conflicts() == conflicts
    assert [h.revision for h in read_history(replicas.database_url, wid)] == [1, 2]


def test_an_instance_stepped_after_its_task_was_leased_is_completed_as_stored(
    replicas: Replicas,
) -> None:
    """What the leasing replica's poll read of the instance is out of date once another
    replica steps it: the completion's save loses the compare-and-swap (one conflict),
    and the completion is decided again on the instance as stored. Paused meanwhile, it
    is refused WORKFLOW_PAUSED; paused and unpaused, it completes after both steps."""
    a, b = replicas.a, replicas.b
    wid = uid("task-flow")
    a.start("task-flow", workflow_id=wid, input={"route": "apply"})
    task = Tasks(b.channel).poll_one("e2e.apply")  # B reads the instance at revision 1
    assert _pause(a, wid).workflow.revision == 2
    conflicts = replicas.conflicts()
    expect_error(
        lambda: Tasks(b.channel).complete(task, {"total": 1, "by": "w"}),
        grpc.StatusCode.FAILED_PRECONDITION,
        "WORKFLOW_PAUSED",
    )
    assert replicas.conflicts() == conflicts + 1, "the lease's copy was not stepped"
    assert _unpause(a, wid).workflow.revision == 3

    other = uid("task-flow")
    a.start("task-flow", workflow_id=other, input={"route": "apply"})
    task = Tasks(b.channel).poll_one("e2e.apply")
    assert _pause(a, other).workflow.revision == 2
    assert _unpause(a, other).workflow.revision == 3
    conflicts = replicas.conflicts()
    answer = Tasks(b.channel).complete(task, {"total": 2, "by": "w"}, request_id=uid("c"))
    assert answer.workflow.status == COMPLETED and answer.workflow.revision == 4
    assert not answer.workflow.paused and context_of(answer.workflow)["done_by"] == "w"
    assert replicas.conflicts() == conflicts + 1
    assert [h.revision for h in read_history(replicas.database_url, other)] == [1, 2, 3, 4]


def test_a_failure_through_the_leasing_replica_answers_the_task_as_stored(
    replicas: Replicas,
) -> None:
    """A failure through the replica that leased the task answers the row its retry
    wrote, with what a heartbeat through the other replica left. A failure already
    retried through the other replica, sent again with its request id through the
    leasing one, gets the retried task, and nothing is retried twice."""
    a, b = replicas.a, replicas.b
    wid = uid("task-flow")
    a.start("task-flow", workflow_id=wid, input={"route": "retry"})
    first = Tasks(a.channel).poll_one("e2e.retry")
    Tasks(b.channel).heartbeat(first, {"through": "b"})
    failed = Tasks(a.channel).fail(first, "FLAKY", "again", retry_delay=0, request_id=uid("f"))
    assert (failed.task.status, failed.task.attempt) == (BACKOFF, 1)
    assert failed.task.lease_token == "" and failed.task.last_error.type == "FLAKY"
    assert dict(failed.task.heartbeat_details) == {"through": "b"}
    stored = Tasks(b.channel).get(first.name)
    assert (stored.status, stored.last_error.message) == (BACKOFF, "again")

    second = Tasks(a.channel).poll_one("e2e.retry")
    assert second.attempt == 2
    rid = uid("f")
    through_b = Tasks(b.channel).fail(second, "FLAKY", "b", retry_delay=0, request_id=rid)
    again = Tasks(a.channel).fail(second, "FLAKY", "b", retry_delay=0, request_id=rid)
    assert again.task == through_b.task and again.task.attempt == 2
    third = Tasks(a.channel).poll_one("e2e.retry")
    assert third.attempt == 3, "the failure sent twice was retried twice"
    done = Tasks(a.channel).complete(third, {"by": "third"}).workflow
    assert (done.status, done.revision) == (COMPLETED, 2)
