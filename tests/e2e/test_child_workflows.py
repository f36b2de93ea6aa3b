"""Child workflows over real gRPC on PostgreSQL and Citus.

A parent's `workflow:` state starts its child; the child waits for a resume; resumed, it
completes and the parent moves on with the child's context. A child that fails fires the
parent's `child_failed`; a cancelled parent cancels its child (actor
`statewright:parent`); `Workflow.parent`, `Workflow.children` and the `parent` list
filter show the family. A server killed (SIGKILL) right after parents entered their
workflow states starts every child once when it comes back; with two replicas, one killed
while children start and the other while they finish, every child starts once and every
parent steps once. STATEWRIGHT_CHILD_E2E_PARENTS sets how many parents those tests start
(default 12). A `map` of children starts
at most `max_concurrency` at once and joins their final Workflows in list order.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import Client, context_of, uid
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

PARENTS = max(2, int(os.environ.get("STATEWRIGHT_CHILD_E2E_PARENTS", "12")))

CHILD = """
name: kyc-check
version: 1
context:
  customer: {type: string, default: ""}
  verified: {type: bool, default: false}
states:
  review:
    wait: true
  decide: {}
  done: {}
transitions:
  - {from: review, on: reviewed, to: decide}
  - {from: decide, to: done, guard: "context.verified"}
"""

PARENT = """
name: onboarding
version: 1
context:
  customer_id: {type: string, default: ""}
  kyc:         {type: map, default: {}}
  why:         {type: any}
states:
  verify_identity:
    workflow:
      definition: kyc-check
      input: "{'customer': context.customer_id}"
      apply: {kyc: "result.context"}
  approved: {}
  manual_review: {}
transitions:
  - {from: verify_identity, to: approved}
  - {from: verify_identity, on: child_failed, to: manual_review, set: {why: "event.payload"}}
"""

HOUSEHOLD = """
name: household
version: 1
context:
  people: {type: list, default: []}
  checks: {type: list, default: []}
states:
  verify_all:
    workflow:
      definition: kyc-check
      map: "context.people"
      max_concurrency: 2
      id: "'hh-' + workflow.id + '-' + item"
      input: "{'customer': item}"
      apply: {checks: "results"}
  done: {}
transitions:
  - {from: verify_all, to: done}
"""

WAITING = workflow_pb2.WORKFLOW_STATUS_WAITING
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED
CANCELLED = workflow_pb2.WORKFLOW_STATUS_CANCELLED


@pytest.fixture(scope="module")
def database(module_server_database: str) -> str:
    return module_server_database


@pytest.fixture(scope="module")
def definitions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("children")
    return definitions_dir(
        root / "definitions",
        examples=False,
        test_definitions=False,
        extra={"kyc-check.yaml": CHILD, "onboarding.yaml": PARENT, "household.yaml": HOUSEHOLD},
    )


@pytest.fixture(scope="module")
def server(database: str, definitions: Path) -> Iterator[ServerProcess]:
    with running_server(database, definitions, cwd=definitions.parent) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def child_of(parent: str) -> str:
    return f"{parent}.verify_identity.1"  # <parent id>.<state>.<revision>


def waiting_child(client: Client, parent: str) -> workflow_pb2.Workflow:
    child = child_of(parent)

    def started() -> bool:
        try:
            return client.get(child).status == WAITING
        except Exception:
            return False

    assert wait_until(started, timeout=30), f"child {child} did not start"
    return client.get(child)


def last_actor(database: str, workflow_id: str) -> str:
    with psycopg.connect(database) as conn:
        row = conn.execute(
            "SELECT actor FROM workflow_history WHERE workflow_id = %s"
            " ORDER BY revision DESC LIMIT 1",
            (workflow_id,),
        ).fetchone()
    assert row is not None
    return str(row[0])


def test_a_resumed_child_completes_and_its_parent_moves_on_with_its_context(
    client: Client,
) -> None:
    parent = uid("onb")
    client.start("onboarding", workflow_id=parent, input={"customer_id": "c-42"})
    child = waiting_child(client, parent)
    assert child.parent.name == f"workflows/{parent}"
    assert child.parent.state == "verify_identity"
    assert context_of(child)["customer"] == "c-42"
    running = client.get(parent)
    assert running.children.open == 1
    assert list(running.children.names) == [f"workflows/{child.workflow_id}"]
    listed = client.stub.ListWorkflows(
        pb.ListWorkflowsRequest(filter=f'parent = "workflows/{parent}"'), timeout=10
    )
    assert [w.workflow_id for w in listed.workflows] == [child.workflow_id]
    client.resume(child.workflow_id, input={"verified": True})
    assert wait_until(lambda: client.get(parent).status == COMPLETED, timeout=30)
    done = client.get(parent)
    assert done.state == "approved"
    assert context_of(done)["kyc"] == {"customer": "c-42", "verified": True}
    assert not done.HasField("children")


def test_a_child_that_fails_fires_child_failed_in_its_parent(client: Client) -> None:
    parent = uid("onbfail")
    client.start("onboarding", workflow_id=parent, input={"customer_id": "c-7"})
    child = waiting_child(client, parent)
    # Not verified: the child's `decide` has no transition to take, and it FAILS.
    client.resume(child.workflow_id, input={"verified": False})
    assert wait_until(lambda: client.get(parent).state == "manual_review", timeout=30)
    why = context_of(client.get(parent))["why"]
    assert why["child"] == f"workflows/{child.workflow_id}"
    assert why["status"] == "FAILED"
    assert why["error"]["reason"] == "NO_TRANSITION_MATCHED"


def test_cancelling_the_parent_cancels_its_child_as_the_parent(
    client: Client, database: str
) -> None:
    parent = uid("onbcancel")
    client.start("onboarding", workflow_id=parent)
    child = waiting_child(client, parent)
    client.cancel(parent, reason="customer left")
    assert wait_until(lambda: client.get(child.workflow_id).status == CANCELLED, timeout=30)
    assert last_actor(database, child.workflow_id) == "statewright:parent"
    assert client.get(parent).status == CANCELLED


def test_a_map_of_children_starts_max_concurrency_at_once_and_joins_in_order(
    client: Client,
) -> None:
    household = uid("hh")
    people = ["ann", "bob", "cy", "dee", "eve"]
    client.start("household", workflow_id=household, input={"people": people})
    ids = [f"hh-{household}-{p}" for p in people]

    def live() -> list[str]:
        page = client.stub.ListWorkflows(
            pb.ListWorkflowsRequest(filter=f'parent = "workflows/{household}"'), timeout=10
        )
        return [w.workflow_id for w in page.workflows if w.status == WAITING]

    for _ in people:
        assert wait_until(lambda: len(live()) >= 1, timeout=30)
        waiting = live()
        assert len(waiting) <= 2, waiting  # max_concurrency
        first = sorted(waiting)[0]
        client.resume(first, input={"verified": True})
        assert wait_until(lambda w=first: client.get(w).status == COMPLETED, timeout=30)
    assert wait_until(lambda: client.get(household).status == COMPLETED, timeout=30)
    checks = context_of(client.get(household))["checks"]
    assert [c["id"] for c in checks] == ids  # in list order
    assert all(c["status"] == "COMPLETED" and c["context"]["verified"] for c in checks)


def started_once(database: str, parents: list[str]) -> None:
    """Each parent has one child link, and each child one first step."""
    with psycopg.connect(database) as conn:
        links = conn.execute(
            "SELECT parent_id, count(*) FROM workflow_children"
            " WHERE parent_id = ANY(%s) GROUP BY parent_id",
            (parents,),
        ).fetchall()
        starts = conn.execute(
            "SELECT count(*) FROM workflow_history WHERE workflow_id = ANY(%s) AND revision = 1",
            ([child_of(p) for p in parents],),
        ).fetchone()
    assert sorted(links) == sorted((p, 1) for p in parents)
    assert starts == (len(parents),)


def test_children_entered_before_a_kill_start_once_after_the_restart(
    database: str, definitions: Path, server: ServerProcess
) -> None:
    # The module's server is stopped first: only the replica killed here starts children.
    server.stop(timeout=15)
    parents = [uid("onbkill") for _ in range(PARENTS)]
    with (
        running_server(database, definitions, cwd=definitions.parent) as first,
        Client(first.target) as c,
    ):
        for parent in parents:
            c.start("onboarding", workflow_id=parent)
        first.signal(signal.SIGKILL)
        first.wait(timeout=15)
    with (
        running_server(database, definitions, cwd=definitions.parent) as second,
        Client(second.target) as c,
    ):
        for parent in parents:
            waiting_child(c, parent)
        started_once(database, parents)
        for parent in parents:
            c.resume(child_of(parent), input={"verified": True})
        assert wait_until(lambda: all(c.get(p).status == COMPLETED for p in parents), timeout=60)
        assert all(c.get(p).revision == 2 for p in parents), "one step per child outcome"
    assert "Traceback" not in second.log(), second.log()


def test_two_replicas_one_killed_while_children_start_and_while_they_finish(
    database: str, definitions: Path, server: ServerProcess
) -> None:
    """Replica A is SIGKILLed right after parents entered their states (B starts what A
    leased, once its lease lapses), and B right after the children were resumed (A,
    restarted, delivers their ends): every child starts once, every parent steps once."""
    server.stop(timeout=15)
    parents = [uid("onbtwo") for _ in range(PARENTS)]
    with (
        running_server(database, definitions, cwd=definitions.parent) as a,
        running_server(database, definitions, cwd=definitions.parent) as b,
        Client(a.target) as ca,
        Client(b.target) as cb,
    ):
        for i, parent in enumerate(parents):
            (ca if i % 2 else cb).start("onboarding", workflow_id=parent)
        a.signal(signal.SIGKILL)
        a.wait(timeout=15)
        for parent in parents:
            waiting_child(cb, parent)
        for parent in parents:
            cb.resume(child_of(parent), input={"verified": True})
        b.signal(signal.SIGKILL)
        b.wait(timeout=15)
    with (
        running_server(database, definitions, cwd=definitions.parent) as again,
        Client(again.target) as c,
    ):
        assert wait_until(lambda: all(c.get(p).status == COMPLETED for p in parents), timeout=90)
        assert all(c.get(p).revision == 2 for p in parents), "one step per child outcome"
        assert all(context_of(c.get(p))["kyc"]["verified"] for p in parents)
    started_once(database, parents)
    assert "Traceback" not in again.log(), again.log()
