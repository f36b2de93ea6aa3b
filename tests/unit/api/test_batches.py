"""The pure parts of batch operations: a start's request checked and turned into plain
data and back, each item's single request, the reset's target revision found in history,
the pace of starts, how an item's error ends it, and who may start which batch."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest
from google.protobuf import struct_pb2
from statewright.v1 import batch_service_pb2 as pb
from statewright.v1 import workflow_service_pb2 as wpb

from statewrightd import errors
from statewrightd.api.batch_items import BatchItems, item_end
from statewrightd.api.batch_requests import (
    batch_asked,
    batch_id_of,
    item_request,
    list_after,
    list_token,
    state_of,
)
from statewrightd.api.batch_responses import batch_pb, cancel_reason
from statewrightd.api.convert import DEFAULT_LIMITS
from statewrightd.app.batch_reset import target_revision
from statewrightd.app.batch_runner import GROUP_WINDOW, MAX_IN_FLIGHT, Pacer, page_size
from statewrightd.app.batches import DEFAULT_RATE, BatchAsked
from statewrightd.app.reads import Reads
from statewrightd.domain import Status
from statewrightd.reasons import Reason
from statewrightd.security.roles import METHOD_RULES, MethodRule, Role, Scope, request_rule
from statewrightd.store.records import BatchRecord, HistoryRecord

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _start(**fields: object) -> pb.StartBatchOperationRequest:
    request = pb.StartBatchOperationRequest(**{"reason": "bank is back", **fields})  # type: ignore[arg-type]
    if request.WhichOneof("operation") is None:
        request.retry.SetInParent()
    return request


def _refused(request: pb.StartBatchOperationRequest) -> errors.StatewrightError:
    with pytest.raises(errors.StatewrightError) as caught:
        batch_asked(request, DEFAULT_LIMITS)
    return caught.value


def test_a_start_becomes_plain_data_and_its_rate_defaults() -> None:
    request = _start(definition="orders", filter='status = "FAILED"')
    request.signal.event = "nudge"
    request.signal.payload.update({"n": 1})
    asked = batch_asked(request, DEFAULT_LIMITS)
    assert asked.operation == {"kind": "signal", "event": "nudge", "payload": {"n": 1}}
    assert (asked.definition, asked.filter, asked.rate) == ("orders", 'status = "FAILED"', 50.0)
    assert asked.rate == DEFAULT_RATE
    migrate = _start(definition="orders", rate=1000)
    migrate.migrate.to_version = 2
    migrate.migrate.state_map["old"] = "new"
    migrate.migrate.set["n"] = "1"
    assert batch_asked(migrate, DEFAULT_LIMITS).operation == {
        "kind": "migrate",
        "to_version": 2,
        "state_map": {"old": "new"},
        "set": {"n": "1"},
    }
    reset = _start()
    reset.reset.entered_state = "charging"
    assert batch_asked(reset, DEFAULT_LIMITS).operation == {
        "kind": "reset",
        "entered_state": "charging",
    }
    delete = _start()
    delete.delete.force = True
    assert batch_asked(delete, DEFAULT_LIMITS).operation == {"kind": "delete", "force": True}


def test_a_start_is_refused_as_its_single_rpc_would_be() -> None:
    none = pb.StartBatchOperationRequest(reason="why")
    assert _refused(none).reason == Reason.FIELD_REQUIRED
    assert _refused(_start(reason="")).metadata == {"field": "reason"}
    for rate in (-1.0, 1000.5, math.nan):
        assert _refused(_start(rate=rate)).metadata["field"] == "rate"
    assert _refused(_start(batch_id="has space")).metadata["field"] == "batch_id"
    assert _refused(_start(definition="Not_A_Name")).metadata["field"] == "definition"
    bad_event = _start()
    bad_event.signal.event = "no spaces allowed"
    assert _refused(bad_event).metadata["field"] == "event"
    no_version = _start(definition="orders")
    no_version.migrate.SetInParent()
    assert _refused(no_version).metadata["field"] == "to_version"
    no_definition = _start()
    no_definition.migrate.to_version = 2
    assert _refused(no_definition).metadata == {"field": "definition"}
    too_long = _start(reason="x" * 1025)
    assert _refused(too_long).metadata["field"] == "reason"


def test_the_same_request_has_the_same_fingerprint() -> None:
    one = batch_asked(_start(batch_id="b1", definition="orders"), DEFAULT_LIMITS)
    again = batch_asked(_start(batch_id="b1", definition="orders", dry_run=True), DEFAULT_LIMITS)
    other = batch_asked(_start(batch_id="b1", definition="orders", rate=10), DEFAULT_LIMITS)
    assert one.fingerprint() == again.fingerprint() != other.fingerprint()
    narrowed = batch_asked(
        _start(batch_id="b1", definition="orders", id_prefix="o-"), DEFAULT_LIMITS
    )
    assert narrowed.fingerprint() not in {one.fingerprint(), other.fingerprint()}


def test_a_start_without_an_id_prefix_keeps_the_fingerprint_it_had_before_there_was_one() -> None:
    # What a batch saved before id prefixes existed holds, and a retry of its start matches.
    asked = batch_asked(_start(batch_id="b1", definition="orders"), DEFAULT_LIMITS)
    before = {
        "definition": "orders",
        "filter": asked.filter,
        "operation": dict(asked.operation),
        "reason": asked.reason,
        "rate": asked.rate,
    }
    text = json.dumps(before, sort_keys=True, separators=(",", ":"))
    assert asked.fingerprint() == hashlib.sha256(text.encode()).hexdigest()


def test_each_item_is_the_single_rpc_s_request_with_the_batch_s_request_id() -> None:
    method, request = item_request({"kind": "retry"}, "wf-1", "why", "b1")
    assert method == "RetryWorkflow"
    assert request == wpb.RetryWorkflowRequest(
        name="workflows/wf-1", reason="why", request_id="batch-b1"
    )
    method, request = item_request({"kind": "reset", "entered_state": "x"}, "wf-1", "why", "b1", 4)
    assert (method, request) == (
        "ResetWorkflow",
        wpb.ResetWorkflowRequest(
            name="workflows/wf-1", to_revision=4, reason="why", request_id="batch-b1"
        ),
    )
    payload = struct_pb2.Struct()
    payload.update({"k": "v"})
    method, request = item_request(
        {"kind": "signal", "event": "go", "payload": {"k": "v"}}, "wf-1", "why", "b1"
    )
    assert (method, request) == (
        "SignalWorkflow",
        wpb.SignalWorkflowRequest(
            name="workflows/wf-1", event="go", payload=payload, request_id="batch-b1"
        ),
    )
    method, request = item_request({"kind": "delete", "force": False}, "wf-1", "why", "b1")
    assert (method, request) == (
        "DeleteWorkflow",
        wpb.DeleteWorkflowRequest(name="workflows/wf-1", allow_missing=True),
    )
    for kind, rpc in (("cancel", "Cancel"), ("pause", "Pause"), ("unpause", "Unpause")):
        assert item_request({"kind": kind}, "wf-1", "why", "b1")[0] == f"{rpc}Workflow"


def _row(
    revision: int, state: str, status: Status = Status.RUNNING, error: str = ""
) -> HistoryRecord:
    return HistoryRecord(
        workflow_id="wf",
        revision=revision,
        event=None,
        transitions=[],
        state=state,
        status=status,
        context={},
        error={"reason": error} if error else None,
        time=T0,
    )


def test_a_reset_finds_the_latest_revision_that_entered_the_state() -> None:
    rows = [
        _row(1, "begin"),
        _row(2, "charging"),
        _row(3, "charging", Status.FAILED),
        _row(4, "charging"),  # a retry: it stayed, entered nothing
        _row(5, "review"),
        _row(6, "charging"),
        _row(7, "charging", Status.FAILED),
    ]
    assert target_revision(rows, "charging", complete=True) == 6
    assert target_revision(rows[:5], "charging", complete=True) == 2
    assert target_revision(rows, "begin", complete=True) == 1
    # The first row of a window that is not the run's first decides nothing on its own.
    assert target_revision(rows[1:4], "charging", complete=False) is None
    assert target_revision(rows[1:4], "charging", complete=True) == 2
    assert target_revision(rows, "nowhere", complete=True) is None


def test_a_reset_without_a_state_finds_the_last_revision_before_the_failure() -> None:
    rows = [_row(1, "begin"), _row(2, "charging"), _row(3, "charging", Status.FAILED)]
    assert target_revision(rows, "", complete=True) == 2
    retried_and_failed = [*rows, _row(4, "charging", Status.FAILED)]
    assert target_revision(retried_and_failed, "", complete=True) == 2
    assert target_revision([_row(1, "compute", Status.FAILED)], "", complete=True) is None
    delayed = _row(1, "begin", error=Reason.START_DELAYED)
    assert target_revision([delayed, _row(2, "x", Status.FAILED)], "", complete=True) is None
    assert target_revision([delayed, _row(2, "begin")], "begin", complete=True) == 2


def test_the_pacer_never_starts_more_than_the_rate_in_a_second() -> None:
    pacer = Pacer(4.0, 100.0)
    starts = []
    now = 100.0
    for _ in range(9):
        now = pacer.due(now)
        pacer.took(now)
        starts.append(now)
    assert starts == [100.0 + i * 0.25 for i in range(9)]
    assert all(sum(1 for s in starts if t <= s < t + 1) <= 4 for t in starts)
    # Idle time earns no burst: the bucket holds one token.
    later = pacer.due(200.0)
    pacer.took(later)
    assert (later, pacer.due(200.0)) == (200.0, 200.25)


def test_a_group_reads_as_many_items_as_its_window_may_start() -> None:
    assert page_size(1000.0) == int(1000 * GROUP_WINDOW) + 1
    assert page_size(1.0) == MAX_IN_FLIGHT
    assert page_size(1000.0) <= 1000


def test_an_item_s_error_ends_it_failed_or_leaves_it_for_later() -> None:
    assert item_end("wf", None) == item_end("wf", None)
    done = item_end("wf", None)
    assert done is not None and not done.failed
    failed = item_end("wf", errors.FailedPrecondition("not failed", reason=Reason.NOT_FAILED))
    assert failed is not None
    assert (failed.failed, failed.code, failed.reason, failed.message) == (
        True,
        "FAILED_PRECONDITION",
        "NOT_FAILED",
        "not failed",
    )
    for transient in (
        errors.StorageUnavailable("down"),
        errors.Overloaded("busy"),
        errors.Aborted("busy", reason=Reason.WORKFLOW_BUSY),
        errors.DeadlineExceeded("late"),
        errors.OutcomeUnknown("lost"),
    ):
        assert item_end("wf", transient) is None, transient


def test_a_batch_start_needs_the_role_of_its_operation() -> None:
    rule = METHOD_RULES["/statewright.v1.BatchService/StartBatchOperation"]
    assert rule.scope is Scope.DEFINITION
    roles = {
        "cancel": Role.CLIENT,
        "signal": Role.CLIENT,
        "reset": Role.OPERATOR,
        "retry": Role.OPERATOR,
        "migrate": Role.OPERATOR,
        "pause": Role.OPERATOR,
        "unpause": Role.OPERATOR,
        "delete": Role.ADMIN,
    }
    for kind, role in roles.items():
        request = pb.StartBatchOperationRequest()
        getattr(request, kind).SetInParent()
        assert request_rule("StartBatchOperation", request, rule) == MethodRule(
            role, Scope.DEFINITION
        )
    # Other calls keep their method's rule.
    other = METHOD_RULES["/statewright.v1.BatchService/GetBatchOperation"]
    assert other == MethodRule(Role.OPERATOR, Scope.NONE)
    assert request_rule("GetBatchOperation", pb.GetBatchOperationRequest(), other) == other


def test_names_tokens_and_states_are_checked() -> None:
    assert batch_id_of("batches/b-1.x_y") == "b-1.x_y"
    for bad in ("b-1", "batches/", "batches/a b", "workflows/x", "batches/" + "x" * 129):
        with pytest.raises(errors.InvalidArgument):
            batch_id_of(bad)
    after = (T0 + timedelta(seconds=1.5), "b-1")
    assert list_after(list_token(after)) == after
    assert list_after("") is None and list_token(None) == ""
    for bad in ("garbage", "eyJ4IjoxfQ", list_token((T0, "b-1"))[:-3]):
        with pytest.raises(errors.InvalidArgument) as caught:
            list_after(bad)
        assert caught.value.reason == Reason.INVALID_PAGE_TOKEN
    assert state_of(pb.BATCH_STATE_RUNNING) == "RUNNING" and state_of(0) is None
    with pytest.raises(errors.InvalidArgument):
        state_of(9)


def test_a_stored_batch_is_answered_with_its_operation_and_who_cancelled_it() -> None:
    asked = BatchAsked("b1", "orders", "", {"kind": "delete", "force": True}, "why", 5.0)
    document = {
        "operation": dict(asked.operation),
        "definition": "orders",
        "filter": "",
        "reason": "why",
        "rate": 5.0,
        "actor": "key:ops",
        "cancel_reason": "wrong filter",
        "cancelled_by": "key:lead",
    }
    record = BatchRecord("b1", document, "CANCELLED", 3, 1, 1, 4, T0, T0, T0)
    out = batch_pb(record)
    assert out.name == "batches/b1" and out.state == pb.BATCH_STATE_CANCELLED
    assert out.WhichOneof("operation") == "delete" and out.delete.force
    assert (out.matched, out.done, out.failed, out.actor) == (3, 1, 1, "key:ops")
    assert out.cancel_reason == cancel_reason(document) == "key:lead: wrong filter"
    dry = batch_pb(BatchRecord("", document, "", 3, 0, 0, 0, T0, T0))
    assert dry.name == "" and dry.state == pb.BATCH_STATE_UNSPECIFIED
    assert not dry.HasField("create_time")


class _Answers:
    """A WorkflowService whose SignalWorkflow answers as told."""

    def __init__(self, answer: wpb.SignalWorkflowResponse) -> None:
        self.answer = answer

    async def SignalWorkflow(
        self, request: wpb.SignalWorkflowRequest, context: object
    ) -> wpb.SignalWorkflowResponse:
        return self.answer


@pytest.mark.parametrize(
    ("rejection", "ends"),
    [
        (wpb.SIGNAL_REJECTION_UNSPECIFIED, "done"),
        (wpb.SIGNAL_REJECTION_PERSISTING, "again"),
        (wpb.SIGNAL_REJECTION_RECOVERY_REQUIRED, "again"),
        (wpb.SIGNAL_REJECTION_SHUTTING_DOWN, "again"),
        (wpb.SIGNAL_REJECTION_NOT_RUNNING, "NOT_RUNNING"),
        (wpb.SIGNAL_REJECTION_WORKFLOW_PAUSED, "WORKFLOW_PAUSED"),
    ],
)
def test_a_signal_not_accepted_is_tried_again_or_fails_by_its_rejection(
    rejection: wpb.SignalRejection.ValueType, ends: str
) -> None:
    accepted = rejection == wpb.SIGNAL_REJECTION_UNSPECIFIED
    servicer = _Answers(wpb.SignalWorkflowResponse(accepted=accepted, reason=rejection))
    batch = BatchRecord(
        "b",
        {"operation": {"kind": "signal", "event": "bump"}, "reason": "r"},
        "RUNNING",
        1,
        0,
        0,
        1,
        T0,
        T0,
    )
    end = asyncio.run(BatchItems(servicer, cast(Reads, None))(batch, "wf"))
    if ends == "again":
        assert end is None
    elif ends == "done":
        assert end is not None and not end.failed
    else:
        assert end is not None
        assert (end.failed, end.code, end.reason) == (True, "FAILED_PRECONDITION", ends)
        assert "did not accept the signal" in end.message
