"""Repair over real gRPC, on both backends: retry a FAILED instance, reset one to a saved
revision. Each is one saved step with its actor and reason in history; a dry run saves
nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as wpb

from tests.support.api import (
    COMPLETED,
    FAILED,
    RUNNING,
    WAITING,
    Client,
    context_of,
    expect_error,
    uid,
)
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess
from tests.support.tasks import SCHEDULED, Tasks

REPAIRABLE = """
name: repairable
version: 1
context:
  route: {type: string, default: review}
  notes: {type: list, reducer: append, default: []}
  by:    {type: string, default: ""}
states:
  begin: {}
  charging:
    task:
      queue: e2e.repair.charge
      retry: {max_attempts: 1}
      apply: {by: "string(result.by)"}
  intake:
    wait: true
  review:
    wait: true
    entry: [{set: {notes: "'in review'"}}]
  escalated: {}
  done: {}
transitions:
  - {from: begin, to: charging, guard: "context.route == 'charge'"}
  - {from: begin, to: intake}
  - {from: charging, to: done}
  - {from: intake, on: submit, to: review}
  - {from: review, on: approve, to: done, set: {by: "'approver'"}}
  - {from: review, after: 1h, to: escalated}
"""


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("repair")
    definitions = definitions_dir(
        root / "definitions", examples=False, extra={"repairable.yaml": REPAIRABLE}
    )
    with running_server(module_database_url, definitions, cwd=root) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def test_retry_after_a_task_gave_up_offers_it_again_and_completes(client: Client) -> None:
    tasks = Tasks(client.channel)
    wid = uid("retry")
    client.start("repairable", workflow_id=wid, input={"route": "charge"})
    first = tasks.poll_one("e2e.repair.charge")
    tasks.fail(first, "DOWNSTREAM", "the bank did not answer")
    failed = client.get(wid)
    assert (failed.status, failed.state, failed.revision) == (FAILED, "charging", 2)

    name = f"workflows/{wid}"
    dry = client.stub.RetryWorkflow(
        wpb.RetryWorkflowRequest(name=name, reason="bank is back", dry_run=True), timeout=10
    )
    assert dry.dry_run and dry.workflow.status == RUNNING and dry.workflow.revision == 3
    assert dry.workflow.pending_task.status == SCHEDULED
    assert client.get(wid).revision == 2, "a dry run saves nothing"

    retried = client.stub.RetryWorkflow(
        wpb.RetryWorkflowRequest(name=name, reason="bank is back", expected_revision=2),
        timeout=10,
    ).workflow
    assert (retried.status, retried.state, retried.revision) == (RUNNING, "charging", 3)
    again = tasks.poll_one("e2e.repair.charge")
    assert again.name != first.name and again.attempt == 1
    tasks.complete(again, {"by": "bank"})
    done = client.get(wid)
    assert (done.status, context_of(done)["by"]) == (COMPLETED, "bank")

    steps = client.steps(wid, done.revision)
    # The give-up fired no transition: its step names no event.
    assert [s.event for s in steps] == ["", "", "retry", "task_completed"]
    assert [s.workflow.status for s in steps] == [RUNNING, FAILED, RUNNING, COMPLETED]
    assert steps[2].actor == "anonymous"
    assert dict(steps[2].input) == {"reason": "bank is back"}

    # Only a failed instance is retried.
    expect_error(
        lambda: client.stub.RetryWorkflow(wpb.RetryWorkflowRequest(name=name), timeout=10),
        grpc.StatusCode.FAILED_PRECONDITION,
        "NOT_FAILED",
    )


def test_reset_of_a_completed_instance_to_a_wait_state_rearms_its_timer(client: Client) -> None:
    wid = uid("reset")
    client.start("repairable", workflow_id=wid)
    review = client.resume(wid, "submit").workflow
    assert (review.status, review.state, review.revision) == (WAITING, "review", 2)
    done = client.resume(wid, "approve").workflow
    assert (done.status, done.revision, list(done.timers)) == (COMPLETED, 3, [])

    name = f"workflows/{wid}"
    request = wpb.ResetWorkflowRequest(
        name=name, to_revision=2, reason="approved by mistake", request_id=uid("key")
    )
    dry_request = wpb.ResetWorkflowRequest()
    dry_request.CopyFrom(request)
    dry_request.dry_run = True
    dry = client.stub.ResetWorkflow(dry_request, timeout=10)
    assert dry.dry_run and (dry.workflow.status, dry.workflow.state) == (WAITING, "review")
    (change,) = dry.context_changes
    assert (change.field, change.before.string_value, change.after.string_value) == (
        "by",
        "approver",
        "",
    )
    assert [t.after for t in dry.workflow.timers] == ["1h"]
    assert client.get(wid).status == COMPLETED, "a dry run saves nothing"

    before = datetime.now(UTC)
    reset = client.stub.ResetWorkflow(request, timeout=10)
    workflow = reset.workflow
    assert (workflow.status, workflow.state, workflow.revision) == (WAITING, "review", 4)
    (timer,) = workflow.timers
    assert timer.due_time.ToDatetime(tzinfo=UTC) >= before + timedelta(minutes=59)
    assert context_of(workflow)["notes"] == ["in review"], "no entry action ran again"
    assert "approve" in workflow.accepted_events
    assert not reset.dry_run and list(reset.context_changes) == list(dry.context_changes)
    # The same request id again: the same answer, and no second step.
    again = client.stub.ResetWorkflow(request, timeout=10)
    assert again.workflow.revision == 4 and list(again.context_changes) == list(dry.context_changes)

    resumed = client.resume(wid, "approve").workflow
    assert (resumed.status, resumed.revision) == (COMPLETED, 5)
    steps = client.steps(wid, 5)
    assert [s.event for s in steps] == ["", "submit", "approve", "reset", "approve"]
    assert steps[3].workflow.state == "review"
    # The finished revision keeps its own context in history after the instance moved on.
    assert context_of(steps[2].workflow)["by"] == "approver"
    assert context_of(steps[3].workflow)["by"] == ""
    assert dict(steps[3].input) == {"reason": "approved by mistake", "to_revision": 2}

    expect_error(
        lambda: client.stub.ResetWorkflow(
            wpb.ResetWorkflowRequest(name=name, to_revision=9), timeout=10
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "REVISION_NOT_FOUND",
    )
    expect_error(
        lambda: client.stub.ResetWorkflow(
            wpb.ResetWorkflowRequest(name=name, to_revision=2, expected_revision=3), timeout=10
        ),
        grpc.StatusCode.ABORTED,
        "REVISION_MISMATCH",
    )


def test_reset_of_a_live_instance_cancels_its_open_task(client: Client) -> None:
    tasks = Tasks(client.channel)
    wid = uid("reset-live")
    started = client.start("repairable", workflow_id=wid, input={"route": "charge"}).workflow
    assert started.pending_task.status == SCHEDULED
    reset = client.stub.ResetWorkflow(
        wpb.ResetWorkflowRequest(name=f"workflows/{wid}", to_revision=1), timeout=10
    ).workflow
    assert (reset.status, reset.revision) == (RUNNING, 2)
    assert reset.pending_task.name == f"workflows/{wid}/tasks/2"
    listed = {t.name: t.status for t in tasks.list(workflow=f"workflows/{wid}")}
    assert listed[started.pending_task.name] != SCHEDULED  # the old one was cancelled
    task = tasks.poll_one("e2e.repair.charge")
    assert task.name == reset.pending_task.name
    tasks.complete(task, {"by": "after reset"})
    assert client.get(wid).status == COMPLETED
