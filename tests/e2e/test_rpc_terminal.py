"""How instances end, over real gRPC on PostgreSQL and SQLite: failed steps (the
RPC succeeds and returns the FAILED instance) and CancelWorkflow."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    CANCELLED,
    COMPLETED,
    FAILED,
    RUNNING,
    WAITING,
    Client,
    context_of,
    expect_error,
    uid,
)
from tests.support.databases import read_history

PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


def _reason(status: status_pb2.Status) -> error_details_pb2.ErrorInfo:
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    assert len(infos) == 1, status
    assert infos[0].domain == "statewright.dev"
    return infos[0]


def _assert_failed(wf: workflow_pb2.Workflow, state: str, reason: str, code: int) -> None:
    assert (wf.status, wf.state) == (FAILED, state), wf
    assert wf.HasField("error")
    assert wf.error.code == code, wf.error
    assert wf.error.message
    assert _reason(wf.error).reason == reason
    assert list(wf.accepted_events) == []


# -- failed steps ------------------------------------------------------------------------------


def test_cel_error_in_the_first_step_returns_the_failed_instance(client: Client) -> None:
    response = client.start("fragile", input={"mode": "compute", "divisor": 0})
    wf = response.workflow
    _assert_failed(wf, "compute", "EVALUATION_ERROR", code_pb2.INVALID_ARGUMENT)
    assert _reason(wf.error).metadata["path"] == "transitions[4].guard"
    assert wf.revision == 1
    assert [(t.from_state, t.to_state) for t in response.transitions] == [("begin", "compute")]
    assert client.get(wf.workflow_id) == wf


def test_no_matching_automatic_transition_fails_the_instance(client: Client) -> None:
    at_start = client.start("fragile", input={"mode": "unknown"}).workflow
    _assert_failed(at_start, "begin", "NO_TRANSITION_MATCHED", code_pb2.FAILED_PRECONDITION)
    later = client.start("fragile", input={"mode": "compute", "divisor": 1000}).workflow
    _assert_failed(later, "compute", "NO_TRANSITION_MATCHED", code_pb2.FAILED_PRECONDITION)


def test_recursion_limit_fails_the_instance(client: Client) -> None:
    wf = client.start("fragile", input={"mode": "loop"}).workflow
    _assert_failed(wf, wf.state, "RECURSION_LIMIT", code_pb2.RESOURCE_EXHAUSTED)
    assert _reason(wf.error).metadata["limit"] == "5"


def test_failed_resume_step_is_saved_and_returned(client: Client, module_database_url: str) -> None:
    wid = uid("fragile")
    assert client.start("fragile", workflow_id=wid).workflow.status == WAITING
    response = client.resume(wid, "go", input={"divisor": 0})
    wf = response.workflow
    _assert_failed(wf, "compute", "EVALUATION_ERROR", code_pb2.INVALID_ARGUMENT)
    assert wf.revision == 2 and context_of(wf)["divisor"] == 0
    assert client.get(wid) == wf
    history = read_history(module_database_url, wid)
    assert [(h.revision, h.status) for h in history] == [(1, "WAITING"), (2, "FAILED")]


def test_failed_signal_step_is_accepted_and_returned(client: Client) -> None:
    wid = uid("fragile")
    start = client.start("fragile", workflow_id=wid, input={"mode": "live", "divisor": 0})
    assert start.workflow.status == RUNNING
    response = client.signal(wid, "go")
    assert response.accepted
    _assert_failed(response.workflow, "compute", "EVALUATION_ERROR", code_pb2.INVALID_ARGUMENT)
    assert client.get(wid) == response.workflow


def test_a_failed_instance_takes_no_more_steps(client: Client) -> None:
    wid = uid("fragile")
    failed = client.start("fragile", workflow_id=wid, input={"mode": "unknown"}).workflow
    assert failed.status == FAILED
    expect_error(lambda: client.resume(wid, "go"), PRECONDITION, "NOT_WAITING")
    response = client.signal(wid, "go")
    assert (response.accepted, response.reason) == (False, pb.SIGNAL_REJECTION_NOT_RUNNING)
    expect_error(lambda: client.cancel(wid), PRECONDITION, "ALREADY_TERMINAL")
    assert client.get(wid) == failed


# -- CancelWorkflow ----------------------------------------------------------------------------


def test_cancel_a_waiting_instance(client: Client, module_database_url: str) -> None:
    wid = uid("cancel")
    started = client.start("mail-approval", workflow_id=wid, input={"topic": "t"}).workflow
    wf = client.cancel(wid, reason="changed my mind")
    assert (wf.status, wf.state, wf.revision) == (CANCELLED, "awaiting_approval", 2)
    assert context_of(wf) == context_of(started)
    assert list(wf.accepted_events) == []
    assert wf.error.code == code_pb2.CANCELLED
    assert wf.error.message == "changed my mind"
    assert _reason(wf.error).reason == "CANCELLED"
    assert client.get(wid) == wf
    assert [h.status for h in read_history(module_database_url, wid)] == ["WAITING", "CANCELLED"]
    expect_error(lambda: client.resume(wid), PRECONDITION, "NOT_WAITING")


def test_cancel_a_running_instance_stops_its_signals(client: Client) -> None:
    wid = uid("cancel")
    client.start("tally", workflow_id=wid)
    client.signal(wid, "tick", {"id": "a"})
    wf = client.cancel(wid)
    assert (wf.status, wf.revision) == (CANCELLED, 3)
    response = client.signal(wid, "tick", {"id": "b"})
    assert (response.accepted, response.reason) == (False, pb.SIGNAL_REJECTION_NOT_RUNNING)
    assert context_of(client.get(wid))["seen"] == ["a"]


def test_cancel_with_expected_revision(client: Client) -> None:
    wid = uid("cancel")
    client.start("tally", workflow_id=wid)
    client.signal(wid, "tick", {"id": "a"})
    info = expect_error(
        lambda: client.cancel(wid, expected_revision=1),
        grpc.StatusCode.ABORTED,
        "REVISION_MISMATCH",
    )
    assert info.metadata["actual_revision"] == "2"
    assert client.get(wid).status == RUNNING
    assert client.cancel(wid, expected_revision=2).status == CANCELLED


def test_cancel_of_an_ended_instance_is_already_terminal(client: Client) -> None:
    completed = client.start("order-pricing", input={"items": ["a"]}).workflow
    assert completed.status == COMPLETED
    info = expect_error(
        lambda: client.cancel(completed.workflow_id), PRECONDITION, "ALREADY_TERMINAL"
    )
    assert info.metadata["status"] == "COMPLETED"
    cancelled = client.start("catalog").workflow.workflow_id
    client.cancel(cancelled)
    info = expect_error(lambda: client.cancel(cancelled), PRECONDITION, "ALREADY_TERMINAL")
    assert info.metadata["status"] == "CANCELLED"
    expect_error(
        lambda: client.cancel(uid("missing")), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND"
    )


def test_cancel_request_id_retry_returns_the_original_answer(client: Client) -> None:
    wid, rid = client.start("catalog").workflow.workflow_id, uid("req")
    first = client.cancel(wid, reason="dup", request_id=rid)
    # Without the request id this would now be ALREADY_TERMINAL.
    assert client.cancel(wid, reason="dup", request_id=rid) == first
    expect_error(
        lambda: client.cancel(wid, reason="other", request_id=rid),
        grpc.StatusCode.INVALID_ARGUMENT,
        "REQUEST_ID_REUSED",
    )
