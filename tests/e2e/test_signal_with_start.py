"""SignalWithStartWorkflow over real gRPC (and HTTP) on PostgreSQL and SQLite: an absent
instance started with its event at revision 1, a present one signalled, a finished one
refused or started anew, request id replays; and 20 callers racing on one id through two
replicas of one PostgreSQL database: one instance, every event applied once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    RUNNING,
    Client,
    context_of,
    error_info,
    expect_error,
    uid,
)
from tests.support.console import Http, console_url
from tests.support.databases import PostgresDatabases, read_history
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

RACERS = 20
NOT_RUNNING = pb.SIGNAL_REJECTION_NOT_RUNNING


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("sws")
    definitions = definitions_dir(root / "definitions")
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(module_database_url, definitions, cwd=root, extra_args=args) as s:
        yield s
    assert "Traceback" not in s.log(), s.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def test_an_absent_instance_starts_with_the_event_in_its_first_revision(
    client: Client,
) -> None:
    wid = uid("sws")
    answer = client.signal_with_start("tally", wid, "tick", {"id": "a"}, input={"limit": 3})
    assert answer.started and answer.accepted
    assert answer.reason == pb.SIGNAL_REJECTION_UNSPECIFIED
    workflow = answer.workflow
    assert (workflow.revision, workflow.status) == (1, RUNNING)
    assert context_of(workflow)["seen"] == ["a"] and context_of(workflow)["limit"] == 3
    assert [t.event for t in answer.transitions] == ["tick"]
    # A watcher from the beginning sees no revision without the event.
    stream = client.stub.WatchWorkflow(
        pb.WatchWorkflowRequest(name=workflow.name, after_revision=0), timeout=10
    )
    first = next(stream)
    stream.cancel()
    assert first.revision == 1 and context_of(first.workflow)["seen"] == ["a"]


def test_a_present_instance_is_signalled(client: Client) -> None:
    wid = uid("sws")
    client.start("tally", workflow_id=wid)
    answer = client.signal_with_start("tally", wid, "tick", {"id": "b"}, input={"limit": 0})
    assert answer.accepted and not answer.started
    assert answer.workflow.revision == 2
    assert context_of(answer.workflow)["seen"] == ["b"]
    assert context_of(answer.workflow)["limit"] == 1000000  # input only starts an instance


def test_a_waiting_instance_answers_not_running_like_a_signal(client: Client) -> None:
    wid = uid("sws")
    client.start("gated-approval", workflow_id=wid)
    answer = client.signal_with_start("gated-approval", wid, "resubmit")
    assert not answer.accepted and not answer.started
    assert answer.reason == NOT_RUNNING and answer.workflow.revision == 1


def test_a_finished_instance_is_refused_or_started_anew(client: Client) -> None:
    wid = uid("sws")
    client.signal_with_start("tally", wid, "tick", {"id": "old"})
    client.signal(wid, "close")
    info = expect_error(
        lambda: client.signal_with_start("tally", wid, "tick", {"id": "late"}),
        grpc.StatusCode.FAILED_PRECONDITION,
        "ALREADY_TERMINAL",
    )
    assert info.metadata["status"] == "COMPLETED"
    assert client.get(wid).revision == 2
    anew = client.signal_with_start(
        "tally", wid, "tick", {"id": "new"}, if_finished=pb.IF_FINISHED_POLICY_START_NEW
    )
    assert anew.started and anew.accepted
    assert (anew.workflow.revision, anew.workflow.status) == (1, RUNNING)
    assert context_of(client.get(wid))["seen"] == ["new"]


def test_a_request_id_replays_its_answer(client: Client) -> None:
    wid = uid("sws")
    first = client.signal_with_start("tally", wid, "tick", {"id": "r"}, request_id="rid-1")
    again = client.signal_with_start("tally", wid, "tick", {"id": "r"}, request_id="rid-1")
    assert again == first
    assert again.started  # the replay of the start says so, as the original did
    later = client.signal_with_start("tally", wid, "tick", {"id": "s"}, request_id="rid-2")
    assert later.workflow.revision == 2 and not later.started
    assert client.signal_with_start("tally", wid, "tick", {"id": "s"}, request_id="rid-2") == later
    assert context_of(client.get(wid))["seen"] == ["r", "s"]
    expect_error(
        lambda: client.signal_with_start("tally", wid, "tick", {"id": "t"}, request_id="rid-1"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "REQUEST_ID_REUSED",
    )


def test_bad_requests_are_refused_at_the_door_and_create_nothing(client: Client) -> None:
    wid = uid("sws")
    info = expect_error(
        lambda: client.signal_with_start("tally", "", "tick"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "FIELD_REQUIRED",
    )
    assert info.metadata["field"] == "workflow_id"
    expect_error(
        lambda: client.signal_with_start("tally", wid, "tock"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "UNKNOWN_EVENT",
    )
    expect_error(
        lambda: client.signal_with_start("mail-approval", wid, "approve"),
        grpc.StatusCode.FAILED_PRECONDITION,
        "SIGNAL_NOT_DELIVERABLE",
    )
    expect_error(lambda: client.get(wid), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")


def test_http_transcodes_signal_with_start(server: ServerProcess, client: Client) -> None:
    http = Http(console_url(server))
    wid = uid("sws-http")
    body = {"definition": "tally", "workflowId": wid, "event": "tick", "payload": {"id": "h"}}
    answer = http.post("/api/v1/workflows:signalWithStart", body)
    assert answer.status == 200, answer.body
    assert answer.body["started"] is True and answer.body["accepted"] is True
    assert answer.body["workflow"]["revision"] == "1"
    again = http.post("/api/v1/workflows:signalWithStart", {**body, "payload": {"id": "i"}})
    assert again.body["started"] is False and again.body["workflow"]["revision"] == "2"
    assert context_of(client.get(wid))["seen"] == ["h", "i"]


# -- two replicas, one PostgreSQL ----------------------------------------------------------


@dataclass
class Replicas:
    database_url: str
    a: Client
    b: Client


@pytest.fixture(scope="module")
def replicas(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Replicas]:
    root = tmp_path_factory.mktemp("sws-replicas")
    url = postgres_databases.create()
    definitions = definitions_dir(root / "definitions")
    with (
        running_server(url, definitions, cwd=root) as first,
        running_server(url, definitions, cwd=root) as second,
        Client(first.target) as a,
        Client(second.target) as b,
    ):
        yield Replicas(url, a, b)
        for s in (first, second):
            assert "Traceback" not in s.log(), s.log()
    postgres_databases.drop_soon(url)


def _applied(client: Client, wid: str, tick: str) -> pb.SignalWithStartWorkflowResponse:
    """One caller's event, retried under its request id until its fate is known (a
    conflict retry budget spent, an instance busy: answers that say it was not applied)."""
    for _ in range(50):
        try:
            answer = client.signal_with_start(
                "tally", wid, "tick", {"id": tick}, request_id=f"rid-{tick}"
            )
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.ABORTED:
                raise AssertionError(f"{tick}: {err.code()} {error_info(err)}") from err
            continue
        if answer.accepted:
            return answer
        assert answer.reason == pb.SIGNAL_REJECTION_PERSISTING, answer
    raise AssertionError(f"{tick} was never applied")


def test_callers_racing_through_two_replicas_make_one_instance(replicas: Replicas) -> None:
    wid = uid("sws-race")
    ticks = [f"t{i}" for i in range(RACERS)]
    barrier = threading.Barrier(RACERS)

    def call(i: int) -> pb.SignalWithStartWorkflowResponse:
        barrier.wait(timeout=30)
        return _applied((replicas.a, replicas.b)[i % 2], wid, ticks[i])

    with ThreadPoolExecutor(RACERS) as pool:
        answers = list(pool.map(call, range(RACERS)))
    assert sum(a.started for a in answers) == 1
    assert sorted(a.workflow.revision for a in answers) == list(range(1, RACERS + 1))
    final = replicas.a.get(wid)
    assert final.revision == RACERS
    assert sorted(context_of(final)["seen"]) == sorted(ticks)
    rows = read_history(replicas.database_url, wid)
    assert [h.revision for h in rows] == list(range(1, RACERS + 1))
    assert all(h.event == "tick" for h in rows)
