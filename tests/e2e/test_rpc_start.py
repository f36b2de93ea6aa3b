"""StartWorkflow over real gRPC, on PostgreSQL and SQLite: ids, versions, input checks,
duplicates, if_exists and request_id idempotency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    COMPLETED,
    WAITING,
    Client,
    context_of,
    expect_error,
    uid,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def test_generated_id_and_the_instance_after_its_first_step(client: Client) -> None:
    first = client.start("mail-approval", input={"topic": "launch"})
    second = client.start("mail-approval", input={"topic": "launch"})
    wf = first.workflow
    assert first.created
    assert wf.workflow_id and wf.workflow_id != second.workflow.workflow_id
    assert wf.name == f"workflows/{wf.workflow_id}"
    assert (wf.definition, wf.version, wf.revision) == ("mail-approval", 2, 1)
    assert (wf.state, wf.status) == ("awaiting_approval", WAITING)
    assert list(wf.accepted_events) == ["approve", "reject"]
    assert context_of(wf)["draft"] == "Dear team: launch"
    assert [(t.from_state, t.to_state, t.event) for t in first.transitions] == [
        ("draft", "awaiting_approval", "")
    ]
    assert wf.etag and wf.etag != second.workflow.etag
    assert wf.create_time.seconds > 0 and wf.update_time == wf.create_time
    assert not wf.HasField("error")
    # What Start answered is what is stored.
    assert client.get(wf.workflow_id) == wf


def test_explicit_id_and_explicit_version(client: Client) -> None:
    wid = uid("explicit")
    response = client.start("order-pricing", workflow_id=wid, version=1, input={"items": ["a"]})
    wf = response.workflow
    assert (wf.workflow_id, wf.name, wf.version) == (wid, f"workflows/{wid}", 1)
    # An automatic chain runs to its end inside the first step; the instance shows the last
    # state it was in, and only the transition taken names __finish__.
    assert (wf.status, wf.state, wf.revision) == (COMPLETED, "shipped", 1)
    assert [t.to_state for t in response.transitions] == [
        "priced",
        "reserved",
        "shipped",
        "__finish__",
    ]
    assert list(wf.accepted_events) == []


def test_start_input_goes_through_the_reducers_before_the_first_step(client: Client) -> None:
    wf = client.start(
        "order-pricing",
        input={"items": ["a", "b"], "quantity": 2, "price": 300, "log": "ordered", "shipment": {}},
    ).workflow
    ctx = context_of(wf)
    # Input went through the reducers (append), then entry actions and guards read it.
    assert ctx["log"][:3] == ["ordered", "received", "priced at 600"]
    assert ctx["total"] == 600.0
    assert ctx["shipment"] == {"carrier": "express", "items": ["a", "b"]}
    assert wf.status == COMPLETED


def test_input_of_the_wrong_type_or_an_undeclared_field_is_refused(client: Client) -> None:
    wid = uid("bad-input")
    info = expect_error(
        lambda: client.start("mail-approval", workflow_id=wid, input={"approved": "yes"}),
        INVALID,
        "INPUT_TYPE_MISMATCH",
    )
    assert (info.metadata["field"], info.metadata["expected"]) == ("approved", "bool")
    info = expect_error(
        lambda: client.start("mail-approval", workflow_id=wid, input={"attempts": 3}),
        INVALID,
        "UNKNOWN_FIELD",
    )
    assert info.metadata["field"] == "attempts"
    expect_error(
        lambda: client.start("mail-approval", workflow_id=wid, input={"meta": [1, 2]}),
        INVALID,
        "INPUT_TYPE_MISMATCH",
    )
    # Nothing was created by any of them.
    expect_error(lambda: client.get(wid), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")


def test_unknown_definition_or_version_is_not_found(client: Client) -> None:
    info = expect_error(
        lambda: client.start("no-such-workflow"), grpc.StatusCode.NOT_FOUND, "DEFINITION_NOT_FOUND"
    )
    assert info.metadata["definition"] == "no-such-workflow"
    expect_error(
        lambda: client.start("mail-approval", version=42),
        grpc.StatusCode.NOT_FOUND,
        "DEFINITION_NOT_FOUND",
    )


def test_duplicate_id_is_already_exists_and_leaves_the_instance_alone(client: Client) -> None:
    wid = uid("dup")
    original = client.start("mail-approval", workflow_id=wid, input={"topic": "one"}).workflow
    info = expect_error(
        lambda: client.start("mail-approval", workflow_id=wid, input={"topic": "two"}),
        grpc.StatusCode.ALREADY_EXISTS,
        "WORKFLOW_ALREADY_EXISTS",
    )
    assert info.metadata["workflow_id"] == wid
    # Another definition under the same id is a duplicate too.
    expect_error(
        lambda: client.start("catalog", workflow_id=wid),
        grpc.StatusCode.ALREADY_EXISTS,
        "WORKFLOW_ALREADY_EXISTS",
    )
    assert client.get(wid) == original


def test_if_exists_return_existing_answers_the_stored_instance_unchanged(client: Client) -> None:
    wid = uid("existing")
    original = client.start("mail-approval", workflow_id=wid, input={"topic": "one"}).workflow
    client.resume(wid, "approve", input={"approver": "ann"})
    current = client.get(wid)
    again = client.start(
        "mail-approval",
        workflow_id=wid,
        input={"topic": "two"},
        if_exists=pb.IF_EXISTS_POLICY_RETURN_EXISTING,
    )
    assert not again.created
    assert again.workflow == current
    assert current.revision == original.revision + 1
    # The policy only matters for an id that exists: a new id is simply created.
    fresh = client.start(
        "mail-approval", workflow_id=uid("new"), if_exists=pb.IF_EXISTS_POLICY_RETURN_EXISTING
    )
    assert fresh.created and fresh.workflow.revision == 1


def test_request_id_retry_returns_the_identical_original_response(client: Client) -> None:
    rid = uid("req")
    first = client.start("mail-approval", input={"topic": "idempotent"}, request_id=rid)
    wid = first.workflow.workflow_id
    retry = client.start("mail-approval", input={"topic": "idempotent"}, request_id=rid)
    assert retry == first
    # Even after the instance moved on, the retry answers what the original answered.
    client.resume(wid, "reject")
    assert client.get(wid).revision == 2
    assert client.start("mail-approval", input={"topic": "idempotent"}, request_id=rid) == first


def test_request_id_with_explicit_id_is_a_retry_not_a_duplicate(client: Client) -> None:
    wid, rid = uid("rid-explicit"), uid("req")
    first = client.start("catalog", workflow_id=wid, input={"n": 1}, request_id=rid)
    assert client.start("catalog", workflow_id=wid, input={"n": 1}, request_id=rid) == first
    # Without the request id the same call is a duplicate.
    expect_error(
        lambda: client.start("catalog", workflow_id=wid, input={"n": 1}),
        grpc.StatusCode.ALREADY_EXISTS,
        "WORKFLOW_ALREADY_EXISTS",
    )


def test_concurrent_retries_with_one_request_id_start_one_instance(client: Client) -> None:
    before = len(client.list_all(definition="order-pricing", page_size=1000))
    rid = uid("req")

    def start(_: int) -> pb.StartWorkflowResponse:
        return client.start("order-pricing", input={"items": ["x"]}, request_id=rid)

    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(start, range(6)))
    assert all(r == responses[0] for r in responses), responses
    after = client.list_all(definition="order-pricing", page_size=1000)
    assert len(after) == before + 1
    assert after[-1].workflow_id == responses[0].workflow.workflow_id


def test_request_id_reused_for_different_content_is_invalid(client: Client) -> None:
    rid = uid("req")
    first = client.start("mail-approval", input={"topic": "a"}, request_id=rid).workflow
    info = expect_error(
        lambda: client.start("mail-approval", input={"topic": "b"}, request_id=rid),
        INVALID,
        "REQUEST_ID_REUSED",
    )
    assert info.metadata["request_id"] == rid
    expect_error(lambda: client.start("catalog", request_id=rid), INVALID, "REQUEST_ID_REUSED")
    # Reused by another method on the instance it started, it is just as wrong.
    expect_error(
        lambda: client.resume(first.workflow_id, request_id=rid), INVALID, "REQUEST_ID_REUSED"
    )
    assert client.get(first.workflow_id).revision == 1
    # On another instance it is another request: request ids are unique per instance.
    waiting = client.start("mail-approval").workflow.workflow_id
    client.resume(waiting, request_id=rid)
    assert client.get(waiting).revision == 2
