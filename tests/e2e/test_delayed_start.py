"""StartWorkflow with start_delay over real gRPC, on PostgreSQL and SQLite: visible at
once (WAITING, START_DELAYED, its start timer), started by the timer, cancelled before it
starts, started early only by a signal-with-start that asks; and a server stopped before
the delay passes and started again runs the first step once."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import CANCELLED, RUNNING, WAITING, Client, context_of, expect_error, uid
from tests.support.databases import read_history
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

LATER = timedelta(hours=1)
SOON = timedelta(milliseconds=300)


@pytest.fixture
def client(module_server: ServerProcess) -> Iterator[Client]:
    with Client(module_server.target) as c:
        yield c


def _started(client: Client, wid: str) -> bool:
    return client.get(wid).revision > 1


def test_a_delayed_instance_is_visible_at_once_and_starts_on_its_timer(client: Client) -> None:
    wid = uid("delay")
    answer = client.start("tally", workflow_id=wid, input={"limit": 4}, start_delay=SOON)
    workflow = answer.workflow
    assert (workflow.revision, workflow.status, workflow.state) == (1, WAITING, "open")
    assert workflow.error.details and "START_DELAYED" in str(workflow.error)
    (timer,) = workflow.timers
    assert timer.after.startswith("start_delay") and timer.target_state == "open"
    assert list(workflow.accepted_events) == []
    assert answer.transitions == [] and answer.created
    assert wait_until(lambda: _started(client, wid), 30)
    started = client.get(wid)
    assert (started.revision, started.status) == (2, RUNNING)
    assert not started.HasField("error") and list(started.timers) == []
    assert context_of(started)["limit"] == 4
    assert client.signal(wid, "tick", {"id": "x"}).accepted


def test_a_delayed_instance_takes_no_event_and_is_cancelled(client: Client) -> None:
    wid = uid("delay")
    client.start("gated-approval", workflow_id=wid, start_delay=LATER)
    expect_error(
        lambda: client.resume(wid, "revise"), grpc.StatusCode.FAILED_PRECONDITION, "START_DELAYED"
    )
    refused = client.signal(wid, "resubmit")
    assert not refused.accepted and refused.reason == pb.SIGNAL_REJECTION_NOT_RUNNING
    cancelled = client.cancel(wid, reason="not needed")
    assert cancelled.status == CANCELLED and list(cancelled.timers) == []


def test_signal_with_start_starts_it_early_only_when_asked(client: Client) -> None:
    wid = uid("delay")
    client.start("tally", workflow_id=wid, start_delay=LATER)
    read = client.get(wid)  # read back from the store: its start timer with it
    assert [t.after for t in read.timers] == ["start_delay 3600s"]
    assert "START_DELAYED" in str(read.error)
    early = client.signal_with_start("tally", wid, "tick", {"id": "early"})
    assert not early.accepted and early.reason == pb.SIGNAL_REJECTION_NOT_RUNNING
    assert early.workflow.revision == 1
    now = client.signal_with_start("tally", wid, "tick", {"id": "now"}, start_now=True)
    assert now.accepted and not now.started
    assert (now.workflow.revision, now.workflow.status) == (2, RUNNING)
    assert context_of(now.workflow)["seen"] == ["now"] and list(now.workflow.timers) == []


def test_a_bad_start_delay_is_refused(client: Client) -> None:
    request = pb.StartWorkflowRequest(definition="tally")
    request.start_delay.FromTimedelta(timedelta(seconds=-1))
    info = expect_error(
        lambda: client.stub.StartWorkflow(request, timeout=10),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FIELD",
    )
    assert info.metadata["field"] == "start_delay"


def test_a_restart_before_the_delay_passes_still_starts_it_once(
    database_url: str, tmp_path: Path
) -> None:
    definitions = definitions_dir(tmp_path / "definitions")
    wid = uid("delay-restart")
    with (
        running_server(database_url, definitions, cwd=tmp_path) as first,
        Client(first.target) as client,
    ):
        client.start("tally", workflow_id=wid, start_delay=timedelta(seconds=2))
        assert client.get(wid).revision == 1
    with (
        running_server(database_url, definitions, cwd=tmp_path) as second,
        Client(second.target) as client,
    ):
        assert wait_until(lambda: _started(client, wid), 30)
        assert client.get(wid).status == RUNNING
        assert "Traceback" not in second.log(), second.log()
    rows = read_history(database_url, wid)
    assert [(h.revision, h.status) for h in rows] == [(1, "WAITING"), (2, "RUNNING")]
