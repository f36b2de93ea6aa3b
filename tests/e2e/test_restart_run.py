"""StartWorkflow with if_exists RESTART over real gRPC (the Python client) and HTTP, on
PostgreSQL and SQLite: a finished instance starts a new run from its entry point with its
stored fields and the new input over them, the old run's history stays readable, a retry
with the same request_id makes no third run, and a live instance is not restarted."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from statewright import Client, WorkflowStatus
from statewright.errors import FailedPrecondition, InvalidArgument, WorkflowAlreadyExists
from statewright.models import WatchEvent

from tests.support.api import uid
from tests.support.console import Http, console_url
from tests.support.deployment import definitions_dir, running_server
from tests.support.restarts import RERUN
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("restart")
    definitions = definitions_dir(root / "definitions", extra={"rerun.yaml": RERUN})
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(module_database_url, definitions, cwd=root, extra_args=args) as s:
        yield s
    assert "Traceback" not in s.log(), s.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def _history(client: Client, wid: str) -> list[WatchEvent]:
    """Every saved step: a client's watch ends at a terminal revision, each run's last
    one among them, so the next run is watched after it (as `statewright history` does)."""
    latest = client.get(wid).revision
    steps: list[WatchEvent] = []
    for _ in range(latest):
        after = steps[-1].revision if steps else 0
        if after >= latest:
            break
        watch = client.watch(wid, after_revision=after, timeout=30)
        try:
            steps.extend(watch)
        finally:
            watch.close()
    return steps


def test_a_finished_instance_restarts_as_a_new_run(client: Client) -> None:
    wid = uid("rerun")
    first = client.start("rerun", {"customer": "ada", "amount": 5}, workflow_id=wid)
    assert (first.workflow.run, first.workflow.revision) == (1, 1)
    assert client.resume(wid, "approve").workflow.status is WorkflowStatus.COMPLETED

    request_id = uid("restart-request")
    restarted = client.start(
        "rerun", {"amount": 7}, workflow_id=wid, if_exists="restart", request_id=request_id
    )
    w = restarted.workflow
    assert restarted.created
    assert (w.run, w.revision, w.status, w.state) == (2, 3, WorkflowStatus.WAITING, "waiting")
    # From the entry point (its entry action ran again), the stored fields under the input.
    assert w.context == {"customer": "ada", "amount": 7, "starts": 2, "notes": []}
    assert w.name == f"workflows/{wid}"

    # A retry while run 2 waits answers the original response; so does one after run 2
    # has finished (which a restart would otherwise take): no run 3.
    again = client.start(
        "rerun", {"amount": 7}, workflow_id=wid, if_exists="restart", request_id=request_id
    )
    assert (again.workflow.run, again.workflow.revision, again.created) == (2, 3, True)
    assert client.resume(wid, "approve").workflow.revision == 4
    late = client.start(
        "rerun", {"amount": 7}, workflow_id=wid, if_exists="restart", request_id=request_id
    )
    assert (late.workflow.run, late.workflow.revision, late.created) == (2, 3, True)
    now = client.get(wid)
    assert (now.run, now.revision, now.status) == (2, 4, WorkflowStatus.COMPLETED)

    # Run 1's history is still there, each revision saying its run.
    steps = _history(client, wid)
    assert [(s.revision, s.workflow.run) for s in steps] == [(1, 1), (2, 1), (3, 2), (4, 2)]
    assert [s.workflow.status for s in steps][1] is WorkflowStatus.COMPLETED
    assert steps[2].event == "restart" and steps[2].input == {"amount": 7}
    assert steps[1].workflow.context == {"customer": "ada", "amount": 5, "starts": 1, "notes": []}


def test_a_live_instance_is_not_restarted(client: Client) -> None:
    wid = uid("rerun")
    client.start("rerun", {"customer": "bo"}, workflow_id=wid)
    with pytest.raises(WorkflowAlreadyExists) as refused:
        client.start("rerun", {"amount": 1}, workflow_id=wid, if_exists="restart")
    assert refused.value.metadata["status"] == "WAITING"
    still = client.get(wid)
    assert (still.run, still.revision, still.context["amount"]) == (1, 1, 0)


def test_a_restart_checks_its_input_and_definition(client: Client) -> None:
    wid = uid("rerun")
    client.start("rerun", workflow_id=wid)
    client.resume(wid, "approve")
    with pytest.raises(InvalidArgument) as bad:
        client.start("rerun", {"amount": "seven"}, workflow_id=wid, if_exists="restart")
    assert bad.value.reason == "INPUT_TYPE_MISMATCH"
    with pytest.raises(FailedPrecondition) as other:
        client.start("tally", workflow_id=wid, if_exists="restart")
    assert other.value.reason == "DEFINITION_DIFFERS"
    assert client.get(wid).revision == 2
    # A start of an id that is free creates the instance, run 1, as any start.
    fresh = client.start("rerun", workflow_id=uid("rerun"), if_exists="restart")
    assert (fresh.created, fresh.workflow.run) == (True, 1)


def test_the_http_door_restarts(client: Client, server: ServerProcess) -> None:
    wid = uid("rerun")
    client.start("rerun", {"customer": "cy"}, workflow_id=wid)
    client.resume(wid, "approve")
    http = Http(console_url(server))
    body = {"definition": "rerun", "workflowId": wid, "ifExists": "IF_EXISTS_POLICY_RESTART"}
    answer = http.post("/api/v1/workflows", {**body, "input": {"amount": 3}})
    assert answer.status == 200, answer.body
    workflow = answer.body["workflow"]
    assert (workflow["run"], workflow["revision"], answer.body["created"]) == (2, "3", True)
    assert workflow["context"]["customer"] == "cy"
