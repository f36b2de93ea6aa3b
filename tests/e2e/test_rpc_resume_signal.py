"""ResumeWorkflow and SignalWorkflow over real gRPC, on PostgreSQL and SQLite: status checks,
default events, input merging, guards, expected revisions, durable acceptance and request_id
idempotency."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import grpc
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    COMPLETED,
    RUNNING,
    WAITING,
    Client,
    context_of,
    expect_error,
    uid,
)
from tests.support.databases import read_history

PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _gated(client: Client) -> str:
    wid = uid("gated")
    wf = client.start("gated-approval", workflow_id=wid).workflow
    assert (wf.state, wf.status, wf.revision) == ("pending", WAITING, 1)
    assert list(wf.accepted_events) == ["approve", "reject", "revise"]
    return wid


def _tally(client: Client, **input: int) -> str:
    wid = uid("tally")
    wf = client.start("tally", workflow_id=wid, input=input).workflow
    assert (wf.state, wf.status, wf.revision) == ("open", RUNNING, 1)
    return wid


def _steps(
    response: pb.ResumeWorkflowResponse | pb.SignalWorkflowResponse,
) -> list[tuple[str, ...]]:
    return [(t.from_state, t.to_state, t.event) for t in response.transitions]


# -- ResumeWorkflow ----------------------------------------------------------------------------


def test_resume_with_empty_event_fires_the_first_declared_with_input_merged_first(
    client: Client,
) -> None:
    wid = _gated(client)
    response = client.resume(wid, input={"amount": 5, "approver": "ann", "notes": "memo"})
    wf = response.workflow
    # The guard read the merged amount and the transition's set read the merged approver;
    # the append reducer added the input's note before the transition's.
    assert (wf.state, wf.status, wf.revision) == ("approved", COMPLETED, 2)
    assert _steps(response) == [("pending", "approved", "approve")]
    assert context_of(wf) == {
        "amount": 5,
        "approver": "ann",
        "notes": ["received", "memo", "approved by ann"],
    }
    assert client.get(wid) == wf


def test_resume_alias_is_the_first_declared_event_and_guards_run_in_order(
    client: Client,
) -> None:
    wid = _gated(client)
    response = client.resume(wid, "resume", input={"amount": 5000, "approver": "boss"})
    # approve's first guard (amount < 1000) is false, its second (approver == boss) true.
    assert _steps(response) == [("pending", "escalated", "approve")]
    assert response.workflow.status == COMPLETED


def test_resume_when_every_guard_rejects_saves_nothing(client: Client) -> None:
    wid = _gated(client)
    before = client.get(wid)
    info = expect_error(
        lambda: client.resume(wid, "approve", input={"amount": 5000, "approver": "eve"}),
        PRECONDITION,
        "GUARD_REJECTED",
    )
    assert (info.metadata["event"], info.metadata["state"]) == ("approve", "pending")
    # Neither the step nor the merged input was saved.
    assert client.get(wid) == before
    # The instance is still waiting and resumable.
    assert client.resume(wid, "reject").workflow.state == "rejected"


def test_resume_refuses_unknown_events_and_events_of_other_states(client: Client) -> None:
    wid = _gated(client)
    info = expect_error(lambda: client.resume(wid, "explode"), INVALID, "UNKNOWN_EVENT")
    assert info.metadata["event"] == "explode"
    info = expect_error(lambda: client.resume(wid, "resubmit"), PRECONDITION, "EVENT_NOT_ALLOWED")
    assert (info.metadata["event"], info.metadata["state"]) == ("resubmit", "pending")
    assert client.get(wid).revision == 1


def test_resume_input_is_checked_against_the_declared_fields(client: Client) -> None:
    wid = _gated(client)
    for bad, reason in (
        ({"amount": "lots"}, "INPUT_TYPE_MISMATCH"),
        ({"amount": 5.5}, "INPUT_TYPE_MISMATCH"),
        ({"approver": ["a"]}, "INPUT_TYPE_MISMATCH"),
        ({"budget": 5}, "UNKNOWN_FIELD"),
    ):
        info = expect_error(lambda b=bad: client.resume(wid, input=b), INVALID, reason)  # type: ignore[misc]
        assert info.metadata["field"] == next(iter(bad))
    assert client.get(wid).revision == 1


def test_resume_works_only_on_waiting_instances(client: Client) -> None:
    running = _tally(client)
    info = expect_error(lambda: client.resume(running, "tick"), PRECONDITION, "NOT_WAITING")
    assert info.metadata["status"] == "RUNNING"
    done = client.start("order-pricing", input={"items": ["a"]}).workflow.workflow_id
    info = expect_error(lambda: client.resume(done), PRECONDITION, "NOT_WAITING")
    assert info.metadata["status"] == "COMPLETED"
    expect_error(
        lambda: client.resume(uid("missing")), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND"
    )


def test_resume_with_a_stale_expected_revision_is_aborted_with_the_stored_revision(
    client: Client,
) -> None:
    wid = _gated(client)
    client.resume(wid, "revise")
    client.signal(wid, "resubmit")
    assert client.get(wid).revision == 3
    info = expect_error(
        lambda: client.resume(wid, "reject", expected_revision=2),
        grpc.StatusCode.ABORTED,
        "REVISION_MISMATCH",
    )
    assert (info.metadata["actual_revision"], info.metadata["expected_revision"]) == ("3", "2")
    assert client.get(wid).revision == 3
    response = client.resume(wid, "reject", expected_revision=3)
    assert (response.workflow.state, response.workflow.revision) == ("rejected", 4)


def test_resume_request_id_retry_returns_the_original_response(client: Client) -> None:
    wid, rid = _gated(client), uid("req")
    first = client.resume(wid, "revise", request_id=rid)
    assert first.workflow.status == RUNNING
    assert client.resume(wid, "revise", request_id=rid) == first
    # The instance moves on and waits again; the retry still answers the original.
    client.signal(wid, "resubmit")
    assert client.get(wid).status == WAITING
    assert client.resume(wid, "revise", request_id=rid) == first
    assert client.get(wid).revision == 3
    expect_error(lambda: client.resume(wid, "reject", request_id=rid), INVALID, "REQUEST_ID_REUSED")


# -- SignalWorkflow ----------------------------------------------------------------------------


def test_accepted_signal_is_durably_saved(client: Client, module_database_url: str) -> None:
    wid = _tally(client)
    response = client.signal(wid, "tick", {"id": "a"})
    assert response.accepted
    assert response.reason == pb.SIGNAL_REJECTION_UNSPECIFIED
    wf = response.workflow
    assert (wf.state, wf.status, wf.revision) == ("open", RUNNING, 2)
    assert context_of(wf)["seen"] == ["a"]
    assert _steps(response) == [("open", "open", "tick")]
    assert client.get(wid) == wf
    history = read_history(module_database_url, wid)
    assert [(h.revision, h.event) for h in history] == [(1, None), (2, "tick")]
    assert history[-1].context["seen"] == ["a"]


def test_signal_whose_guards_are_all_false_is_accepted_and_changes_nothing(
    client: Client, module_database_url: str
) -> None:
    wid = _tally(client, limit=0)
    before = client.get(wid)
    response = client.signal(wid, "tick", {"id": "a"})
    assert response.accepted
    assert list(response.transitions) == []
    assert response.workflow == before
    assert client.get(wid) == before
    assert [h.revision for h in read_history(module_database_url, wid)] == [1]


def test_signal_refuses_unknown_events_and_events_of_other_states(client: Client) -> None:
    wid = _tally(client)
    info = expect_error(lambda: client.signal(wid, "explode"), INVALID, "UNKNOWN_EVENT")
    assert info.metadata["event"] == "explode"
    gated = _gated(client)
    client.resume(gated, "revise")
    assert client.get(gated).status == RUNNING
    info = expect_error(lambda: client.signal(gated, "approve"), PRECONDITION, "EVENT_NOT_ALLOWED")
    assert info.metadata["state"] == "revising"
    review = client.start("review-loop").workflow.workflow_id
    expect_error(lambda: client.signal(review, "revised"), PRECONDITION, "EVENT_NOT_ALLOWED")
    assert client.get(wid).revision == 1 and client.get(review).revision == 1
    expect_error(
        lambda: client.signal(uid("missing"), "tick"),
        grpc.StatusCode.NOT_FOUND,
        "WORKFLOW_NOT_FOUND",
    )


def test_signal_to_an_instance_that_is_not_running_is_not_accepted(client: Client) -> None:
    waiting = client.start("mail-approval").workflow
    response = client.signal(waiting.workflow_id, "approve")
    assert not response.accepted
    assert response.reason == pb.SIGNAL_REJECTION_NOT_RUNNING
    assert response.workflow == waiting
    closed = _tally(client)
    assert client.signal(closed, "close").workflow.status == COMPLETED
    response = client.signal(closed, "tick", {"id": "late"})
    assert (response.accepted, response.reason) == (False, pb.SIGNAL_REJECTION_NOT_RUNNING)
    assert response.workflow.revision == 2
    assert client.get(closed).revision == 2


def test_signal_request_id_retry_is_applied_once(client: Client) -> None:
    wid, rid = _tally(client), uid("req")
    first = client.signal(wid, "tick", {"id": "once"}, request_id=rid)
    assert first.accepted
    assert client.signal(wid, "tick", {"id": "once"}, request_id=rid) == first
    client.signal(wid, "tick", {"id": "next"})
    assert client.signal(wid, "tick", {"id": "once"}, request_id=rid) == first
    assert context_of(client.get(wid))["seen"] == ["once", "next"]
    expect_error(
        lambda: client.signal(wid, "tick", {"id": "other"}, request_id=rid),
        INVALID,
        "REQUEST_ID_REUSED",
    )


def test_review_loop_runs_to_completion_on_signals(client: Client) -> None:
    wid = client.start("review-loop", input={"document": "v1"}).workflow.workflow_id
    low = client.signal(wid, "score", {"score": 0.4})
    assert _steps(low) == [("evaluating", "improving", "score")]
    assert list(low.workflow.accepted_events) == ["revised"]
    revised = client.signal(wid, "revised", {"document": "v2"})
    assert revised.workflow.state == "evaluating"
    done = client.signal(wid, "score", {"score": 0.9})
    wf = done.workflow
    assert (wf.status, wf.state, wf.revision) == (COMPLETED, "accepted", 4)
    assert _steps(done) == [("evaluating", "accepted", "score"), ("accepted", "__finish__", "")]
    ctx = context_of(wf)
    assert (ctx["document"], ctx["score"], ctx["iterations"]) == ("v2", 0.9, 1)
    assert ctx["history"] == [{"score": 0.4}, "accepted"]


def test_concurrent_signals_to_one_instance_are_each_applied_once(
    client: Client, module_database_url: str
) -> None:
    wid = _tally(client)
    ids = [f"s{i}" for i in range(30)]

    def tick(signal_id: str) -> pb.SignalWorkflowResponse:
        return client.signal(wid, "tick", {"id": signal_id})

    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(tick, ids))
    assert all(r.accepted for r in responses)
    # Each answer is a distinct saved revision, and the final one holds every signal once.
    assert sorted(r.workflow.revision for r in responses) == list(range(2, 32))
    wf = client.get(wid)
    assert wf.revision == 31
    assert sorted(context_of(wf)["seen"]) == sorted(ids)
    history = read_history(module_database_url, wid)
    assert [h.revision for h in history] == list(range(1, 32))
    for response in responses:
        row = history[response.workflow.revision - 1]
        assert row.context == context_of(response.workflow)


# -- values that cannot be stored --------------------------------------------------------------


def test_input_the_store_cannot_hold_is_refused_and_nothing_is_saved(client: Client) -> None:
    wid = uid("nul")
    expect_error(
        lambda: client.start("mail-approval", workflow_id=wid, input={"topic": "a\x00b"}),
        INVALID,
        "UNSERIALIZABLE_VALUE",
    )
    expect_error(lambda: client.get(wid), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")
    gated = _gated(client)
    expect_error(
        lambda: client.resume(gated, "reject", input={"approver": "x\x00y"}),
        INVALID,
        "UNSERIALIZABLE_VALUE",
    )
    assert client.get(gated).revision == 1


def test_a_payload_string_is_never_silently_altered(client: Client) -> None:
    wid = _tally(client)
    try:
        response = client.signal(wid, "tick", {"id": "a\x00b"})
    except grpc.RpcError as err:
        assert err.code() is INVALID  # refusing it outright is fine
        assert client.get(wid).revision == 1
        return
    assert context_of(response.workflow)["seen"] == ["a\x00b"]
