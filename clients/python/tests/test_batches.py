"""Batch operations (BatchService) through Client and AsyncClient, against the scripted fake
server: the requests they send, and the models they make of the answers."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2
from statewright import (
    AsyncClient,
    BatchCancel,
    BatchDelete,
    BatchMigrate,
    BatchReset,
    BatchRetry,
    BatchSignal,
    BatchState,
    Client,
    FailedPrecondition,
    WorkflowNotFound,
)
from statewright.models import batch_action
from statewright.v1 import batch_service_pb2 as bpb
from statewright.values import to_struct

from tests.fakes import FakeServer, abort

RUNNING = bpb.BATCH_STATE_RUNNING
COMPLETED = bpb.BATCH_STATE_COMPLETED
CANCELLED = bpb.BATCH_STATE_CANCELLED


def batch(
    batch_id: str = "b1",
    *,
    state: int = RUNNING,
    matched: int = 10,
    done: int = 0,
    failed: int = 0,
) -> bpb.BatchOperation:
    message = bpb.BatchOperation(
        name=f"batches/{batch_id}" if batch_id else "",
        definition="payments",
        filter="status = FAILED",
        reason="bank is back",
        rate=20.0,
        state=state,  # type: ignore[arg-type]
        matched=matched,
        done=done,
        failed=failed,
        actor="ops@example.com",
    )
    message.retry.SetInParent()
    message.create_time.FromSeconds(1_767_225_600)
    return message


def _echo_start(request: Any, context: grpc.ServicerContext) -> bpb.StartBatchOperationResponse:
    """Answers a start with the batch it asked for, as the server would."""
    answer = batch(request.batch_id, matched=3)
    answer.ClearField("retry")
    answer.MergeFrom(
        bpb.BatchOperation(
            definition=request.definition,
            filter=request.filter,
            reason=request.reason,
            id_prefix=request.id_prefix,
        )
    )
    kind = request.WhichOneof("operation")
    getattr(answer, kind).CopyFrom(getattr(request, kind))
    return bpb.StartBatchOperationResponse(batch=answer, sample=["workflows/a", "workflows/b"])


def test_start_sends_the_operation_filter_and_a_made_batch_id(
    fake: FakeServer, client: Client
) -> None:
    fake.service.behaviours["StartBatchOperation"] = _echo_start
    started = client.start_batch_operation(
        BatchSignal("nudge", {"level": 2}),
        "wake them up",
        filter="status = WAITING",
        definition="tally",
        rate=5,
        id_prefix="order-",
    )
    (request,) = fake.service.calls("StartBatchOperation")
    assert (request.definition, request.filter, request.reason, request.rate) == (
        "tally",
        "status = WAITING",
        "wake them up",
        5.0,
    )
    assert request.id_prefix == "order-"
    assert started.batch.id_prefix == "order-"
    assert started.batch.to_dict()["id_prefix"] == "order-"
    assert request.signal.event == "nudge"
    assert request.signal.payload == to_struct({"level": 2})
    # A batch id is made when none is given, so that gRPC's retry answers the same batch.
    assert len(request.batch_id) == 32 and not request.dry_run
    assert started.batch.name == f"batches/{request.batch_id}"
    assert started.batch.batch_id == request.batch_id
    assert started.batch.action == BatchSignal("nudge", {"level": 2})
    assert started.sample == ("workflows/a", "workflows/b")
    assert not started.dry_run


@pytest.mark.parametrize(
    ("operation", "field", "expected"),
    [
        ("retry", "retry", bpb.BatchRetry()),
        ("CANCEL", "cancel", bpb.BatchCancel()),
        (BatchReset("review"), "reset", bpb.BatchReset(entered_state="review")),
        ("reset", "reset", bpb.BatchReset()),
        (BatchDelete(force=True), "delete", bpb.BatchDelete(force=True)),
        (
            BatchMigrate(2, {"review": "approval"}, {"tier": "'gold'"}),
            "migrate",
            bpb.BatchMigrate(
                to_version=2, state_map={"review": "approval"}, set={"tier": "'gold'"}
            ),
        ),
        ("pause", "pause", bpb.BatchPause()),
        ("unpause", "unpause", bpb.BatchUnpause()),
    ],
)
def test_each_operation_reaches_the_server_as_its_oneof(
    fake: FakeServer, client: Client, operation: Any, field: str, expected: Any
) -> None:
    fake.service.behaviours["StartBatchOperation"] = _echo_start
    started = client.start_batch_operation(operation, "why", batch_id="given")
    (request,) = fake.service.calls("StartBatchOperation")
    assert request.WhichOneof("operation") == field
    assert getattr(request, field) == expected
    assert request.batch_id == "given"
    assert started.batch.action == batch_action(operation)


def test_a_dry_run_makes_no_batch_id_and_reads_as_one(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["StartBatchOperation"] = lambda r, c: bpb.StartBatchOperationResponse(
        batch=batch("", state=bpb.BATCH_STATE_UNSPECIFIED, matched=7),
        sample=["workflows/x"],
    )
    started = client.start_batch_operation("retry", "try", dry_run=True)
    (request,) = fake.service.calls("StartBatchOperation")
    assert request.dry_run and request.batch_id == ""
    assert started.dry_run
    assert started.batch.state is BatchState.UNSPECIFIED
    assert started.batch.matched == 7


def test_an_operation_that_needs_parameters_or_does_not_exist_is_refused_before_a_call(
    fake: FakeServer, client: Client
) -> None:
    with pytest.raises(ValueError, match="BatchSignal"):
        client.start_batch_operation("signal", "why")
    with pytest.raises(ValueError, match="not a batch operation"):
        client.start_batch_operation("explode", "why")
    assert fake.service.requests == []


def test_get_reads_progress_and_failures_as_typed_errors(fake: FakeServer, client: Client) -> None:
    when = timestamp_pb2.Timestamp(seconds=1_767_225_700)
    failure = bpb.BatchItemFailure(
        workflow="workflows/o-7",
        code="NOT_FOUND",
        reason="WORKFLOW_NOT_FOUND",
        message="workflow o-7 not found",
        time=when,
    )
    fake.service.behaviours["GetBatchOperation"] = lambda r, c: bpb.GetBatchOperationResponse(
        batch=batch(done=6, failed=1), failures=[failure], next_failures_page_token="p2"
    )
    report = client.get_batch_operation("b1", failures_page_size=1, failures_page_token="p1")
    (request,) = fake.service.calls("GetBatchOperation")
    assert (request.name, request.failures_page_size, request.failures_page_token) == (
        "batches/b1",
        1,
        "p1",
    )
    assert report.batch.state is BatchState.RUNNING and not report.batch.finished
    assert (report.batch.matched, report.batch.done, report.batch.failed) == (10, 6, 1)
    assert report.batch.remaining == 3
    assert report.batch.action == BatchRetry()
    assert report.next_failures_page_token == "p2"
    (only,) = report.failures
    assert (only.workflow_id, only.code, only.reason) == ("o-7", "NOT_FOUND", "WORKFLOW_NOT_FOUND")
    assert isinstance(only.error, WorkflowNotFound)
    assert only.error.message == "workflow o-7 not found"
    assert only.to_dict()["time"] == "2026-01-01T00:01:40Z"
    assert report.batch.to_dict()["operation"] == {"retry": {}}


def test_list_follows_every_page_with_the_state(fake: FakeServer, client: Client) -> None:
    pages = {
        "": bpb.ListBatchOperationsResponse(
            batches=[batch("b3"), batch("b2")], next_page_token="n"
        ),
        "n": bpb.ListBatchOperationsResponse(batches=[batch("b1")]),
    }
    fake.service.behaviours["ListBatchOperations"] = lambda r, c: pages[r.page_token]
    found = list(client.list_batch_operations(state="running", page_size=2))
    assert [b.batch_id for b in found] == ["b3", "b2", "b1"]
    requests = fake.service.calls("ListBatchOperations")
    assert [(r.page_token, r.page_size, r.state) for r in requests] == [
        ("", 2, RUNNING),
        ("n", 2, RUNNING),
    ]
    with pytest.raises(ValueError, match="not a BatchState"):
        list(client.list_batch_operations(state="sleeping"))


def test_cancel_sends_the_reason_and_a_finished_batch_is_refused(
    fake: FakeServer, client: Client
) -> None:
    def cancel(request: Any, context: grpc.ServicerContext) -> bpb.CancelBatchOperationResponse:
        if request.name == "batches/done":
            abort(context, grpc.StatusCode.FAILED_PRECONDITION, "BATCH_FINISHED")
        answer = batch(request.name.removeprefix("batches/"), state=CANCELLED, done=4)
        answer.cancel_reason = request.reason
        return bpb.CancelBatchOperationResponse(batch=answer)

    fake.service.behaviours["CancelBatchOperation"] = cancel
    cancelled = client.cancel_batch_operation("batches/b1", "wrong filter")
    assert cancelled.state is BatchState.CANCELLED and cancelled.finished
    assert cancelled.cancel_reason == "wrong filter"
    with pytest.raises(FailedPrecondition) as caught:
        client.cancel_batch_operation("done", "too late")
    assert caught.value.reason == "BATCH_FINISHED"


def test_follow_yields_each_change_until_the_batch_ends(fake: FakeServer, client: Client) -> None:
    answers = iter(
        [
            batch(done=2),
            batch(done=2),  # no progress since the last read: not yielded again
            batch(done=8, failed=1),
            batch(state=COMPLETED, done=9, failed=1),
        ]
    )
    fake.service.behaviours["GetBatchOperation"] = lambda r, c: bpb.GetBatchOperationResponse(
        batch=next(answers)
    )
    seen = list(client.follow_batch_operation("b1", interval=0.01))
    assert [(b.state, b.done, b.failed) for b in seen] == [
        (BatchState.RUNNING, 2, 0),
        (BatchState.RUNNING, 8, 1),
        (BatchState.COMPLETED, 9, 1),
    ]
    assert len(fake.service.calls("GetBatchOperation")) == 4
    with pytest.raises(ValueError, match="interval"):
        list(client.follow_batch_operation("b1", interval=0))


async def test_the_async_client_makes_the_same_calls(fake: FakeServer) -> None:
    fake.service.behaviours["StartBatchOperation"] = _echo_start
    fake.service.behaviours["CancelBatchOperation"] = lambda r, c: bpb.CancelBatchOperationResponse(
        batch=batch(state=CANCELLED)
    )
    fake.service.behaviours["ListBatchOperations"] = lambda r, c: bpb.ListBatchOperationsResponse(
        batches=[batch()]
    )
    fake.service.behaviours["GetBatchOperation"] = lambda r, c: bpb.GetBatchOperationResponse(
        batch=batch(state=COMPLETED, done=10)
    )
    async with AsyncClient(fake.target) as client:
        started = await client.start_batch_operation(BatchCancel(), "stop them", batch_id="b1")
        listed = [b async for b in client.list_batch_operations()]
        report = await client.get_batch_operation("b1")
        followed = [b async for b in client.follow_batch_operation("b1")]
        cancelled = await client.cancel_batch_operation("b1", "enough")
    assert started.batch.action == BatchCancel()
    assert [b.name for b in listed] == ["batches/b1"]
    assert report.batch.done == 10
    assert [b.state for b in followed] == [BatchState.COMPLETED]
    assert cancelled.state is BatchState.CANCELLED


def test_batch_calls_have_the_service_configs_deadlines(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["StartBatchOperation"] = _echo_start
    fake.service.behaviours["GetBatchOperation"] = lambda r, c: bpb.GetBatchOperationResponse(
        batch=batch()
    )
    client.start_batch_operation("retry", "why")
    client.get_batch_operation("b1")
    write, read = (seconds or 0.0 for _, seconds in fake.service.remaining)
    assert 28.0 < write <= 30.5
    assert 8.0 < read <= 10.5
