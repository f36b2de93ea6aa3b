"""PauseWorkflow and UnpauseWorkflow over real gRPC, on both backends: while an instance is
paused a timer that comes due waits and fires after the unpause, a signal is answered
WORKFLOW_PAUSED, a resume is refused, and its task is not offered until the unpause. Each
is one saved step with its actor and reason in history; a dry run saves nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import grpc
import pytest
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as wpb

from tests.support.api import (
    COMPLETED,
    RUNNING,
    WAITING,
    Client,
    expect_error,
    uid,
)
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess
from tests.support.tasks import Tasks

PAUSABLE = """
name: pausable
version: 1
context:
  route: {type: string, default: listen}
states:
  begin: {}
  listening: {}
  review:
    wait: true
  working:
    task: {queue: e2e.pause.work}
  expired: {}
  done: {}
transitions:
  - {from: begin, to: working, guard: "context.route == 'work'"}
  - {from: begin, to: review, guard: "context.route == 'review'"}
  - {from: begin, to: listening}
  - {from: listening, on: poke, to: done}
  - {from: listening, after: 2s, to: expired}
  - {from: review, on: approve, to: done}
  - {from: working, to: done}
"""
QUEUE = "e2e.pause.work"
WAIT = 15.0  # the most any wait below may take (a loaded machine), never asserted


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("pause")
    definitions = definitions_dir(
        root / "definitions", examples=False, extra={"pausable.yaml": PAUSABLE}
    )
    with running_server(module_database_url, definitions, cwd=root) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def _pause(client: Client, wid: str, **fields: object) -> wpb.PauseWorkflowResponse:
    request = wpb.PauseWorkflowRequest(name=f"workflows/{wid}", **fields)  # type: ignore[arg-type]
    return client.stub.PauseWorkflow(request, timeout=10)


def _unpause(client: Client, wid: str, **fields: object) -> wpb.UnpauseWorkflowResponse:
    request = wpb.UnpauseWorkflowRequest(name=f"workflows/{wid}", **fields)  # type: ignore[arg-type]
    return client.stub.UnpauseWorkflow(request, timeout=10)


def _until(client: Client, wid: str, state: str) -> workflow_pb2.Workflow:
    deadline = time.monotonic() + WAIT
    while True:
        workflow = client.get(wid)
        if workflow.state == state or time.monotonic() > deadline:
            return workflow
        time.sleep(0.1)


def test_a_timer_due_while_paused_fires_after_the_unpause(client: Client) -> None:
    wid = uid("pause-timer")
    started = client.start("pausable", workflow_id=wid).workflow
    assert (started.status, started.state, started.revision) == (RUNNING, "listening", 1)
    (timer,) = started.timers
    due = timer.due_time.ToDatetime(tzinfo=UTC)

    dry = _pause(client, wid, reason="incident 7", dry_run=True)
    assert dry.dry_run and dry.workflow.paused and dry.workflow.revision == 2
    assert not client.get(wid).paused, "a dry run saves nothing"

    paused = _pause(client, wid, reason="incident 7", expected_revision=1).workflow
    assert (paused.status, paused.state, paused.revision, paused.paused) == (
        RUNNING,
        "listening",
        2,
        True,
    )
    assert (paused.pause.reason, paused.pause.actor) == ("incident 7", "anonymous")
    assert paused.pause.HasField("pause_time") and len(paused.timers) == 1

    # A signal is answered, not applied; a second pause is refused.
    signalled = client.signal(wid, "poke")
    assert not signalled.accepted
    assert signalled.reason == wpb.SIGNAL_REJECTION_WORKFLOW_PAUSED
    expect_error(lambda: _pause(client, wid), grpc.StatusCode.FAILED_PRECONDITION, "ALREADY_PAUSED")

    # The timer comes due while paused, and waits.
    while datetime.now(UTC) < due:
        time.sleep(0.1)
    time.sleep(1.5)  # several claim rounds past its due time
    held = client.get(wid)
    assert (held.state, held.revision, held.paused, len(held.timers)) == ("listening", 2, True, 1)

    unpaused = _unpause(client, wid, reason="incident over").workflow
    assert (unpaused.revision, unpaused.paused, unpaused.HasField("pause")) == (3, False, False)
    fired = _until(client, wid, "expired")
    assert (fired.state, fired.status, fired.revision) == ("expired", COMPLETED, 4)

    steps = client.steps(wid, 4)
    assert [s.event for s in steps] == ["", "pause", "unpause", "after"]
    assert [s.workflow.paused for s in steps] == [False, True, False, False]
    assert dict(steps[1].input) == {"reason": "incident 7"}
    assert dict(steps[2].input) == {"reason": "incident over"}
    assert steps[1].actor == steps[2].actor == "anonymous"
    assert steps[1].workflow.pause.reason == "incident 7"

    # Only a live instance is paused, and only a paused one unpaused.
    expect_error(
        lambda: _pause(client, wid), grpc.StatusCode.FAILED_PRECONDITION, "ALREADY_TERMINAL"
    )
    expect_error(lambda: _unpause(client, wid), grpc.StatusCode.FAILED_PRECONDITION, "NOT_PAUSED")


def test_a_resume_of_a_paused_instance_is_refused(client: Client) -> None:
    wid = uid("pause-resume")
    client.start("pausable", workflow_id=wid, input={"route": "review"})
    paused = _pause(client, wid).workflow
    assert (paused.status, paused.paused) == (WAITING, True)
    info = expect_error(
        lambda: client.resume(wid, "approve"),
        grpc.StatusCode.FAILED_PRECONDITION,
        "WORKFLOW_PAUSED",
    )
    assert info.metadata["workflow_id"] == wid
    assert client.get(wid).revision == 2, "nothing was saved"
    _unpause(client, wid)
    assert client.resume(wid, "approve").workflow.status == COMPLETED


def test_a_paused_instance_s_task_is_offered_after_the_unpause(client: Client) -> None:
    tasks = Tasks(client.channel)
    wid = uid("pause-task")
    started = client.start("pausable", workflow_id=wid, input={"route": "work"}).workflow
    assert started.pending_task.name
    _pause(client, wid)
    assert tasks.poll(QUEUE, wait=1.0) == [], "a paused instance's task is not offered"
    _unpause(client, wid)
    task = tasks.poll_one(QUEUE)
    assert task.name == started.pending_task.name

    # A task leased before the pause: its completion waits for the unpause.
    _pause(client, wid)
    tasks.heartbeat(task)
    expect_error(
        lambda: tasks.complete(task, {}), grpc.StatusCode.FAILED_PRECONDITION, "WORKFLOW_PAUSED"
    )
    assert client.get(wid).state == "working"
    _unpause(client, wid)
    tasks.complete(task, {})
    assert client.get(wid).status == COMPLETED


def test_a_cancel_ends_a_paused_instance(client: Client) -> None:
    wid = uid("pause-cancel")
    client.start("pausable", workflow_id=wid)
    _pause(client, wid)
    cancelled = client.stub.CancelWorkflow(
        wpb.CancelWorkflowRequest(name=f"workflows/{wid}", reason="not wanted"), timeout=10
    ).workflow
    assert (cancelled.status, cancelled.paused, list(cancelled.timers)) == (
        workflow_pb2.WORKFLOW_STATUS_CANCELLED,
        False,
        [],
    )
