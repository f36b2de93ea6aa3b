"""The TaskService calls of Client and AsyncClient against the scripted fake server."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime
from typing import Any

import grpc
import pytest
from statewright import (
    AsyncClient,
    Client,
    FailedPrecondition,
    LeaseSuperseded,
    NotFound,
    TaskCancelled,
    TaskNotFound,
    TaskStatus,
    WorkflowStatus,
)
from statewright.v1 import task_pb2, workflow_pb2
from statewright.v1 import task_service_pb2 as tpb
from statewright.v1 import workflow_service_pb2 as pb

from tests.fakes import FakeServer, abort, task, workflow

LEASED = task_pb2.TASK_STATUS_LEASED


def _leased(task_id: str = "t1", **fields: Any) -> task_pb2.Task:
    message = task(task_id=task_id, lease_token=f"lease-{task_id}", status=LEASED, **fields)
    message.lease_expire_time.FromDatetime(datetime(2030, 1, 1, tzinfo=UTC))
    return message


def _refuse(code: grpc.StatusCode, reason: str) -> Any:
    def behaviour(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, code, reason, {"task": request.name})

    return behaviour


def test_poll_tasks_leases_and_converts(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["PollTasks"] = lambda r, c: tpb.PollTasksResponse(
        tasks=[_leased("t1", input={"order": "o-1", "amount": 12}), _leased("t2")]
    )
    tasks = client.poll_tasks("payments", max_tasks=3, wait=1.5)
    (request,) = fake.service.calls("PollTasks")
    assert request.queue == "payments"
    assert request.max_tasks == 3
    assert request.wait.ToTimedelta().total_seconds() == 1.5
    assert request.identity == f"{os.getpid()}@{socket.gethostname()}"
    assert request.max_bytes == 4 * 1024 * 1024, "gRPC's default receive limit"
    first = tasks[0]
    assert [t.name for t in tasks] == ["workflows/w/tasks/t1", "workflows/w/tasks/t2"]
    assert first.input == {"order": "o-1", "amount": 12}
    assert first.lease_token == "lease-t1"
    assert first.lease_expire_time == datetime(2030, 1, 1, tzinfo=UTC)
    assert first.status is TaskStatus.LEASED and not first.terminal
    assert first.workflow == "workflows/w" and first.queue == "payments"
    assert first.last_error is None
    # The long poll's deadline follows its wait: a few seconds more than 1.5 s.
    ((_, remaining),) = fake.service.remaining
    assert remaining is not None and 1.5 < remaining <= 7.0


def test_poll_tasks_asks_for_no_more_than_the_channel_receives(fake: FakeServer) -> None:
    fake.service.behaviours["PollTasks"] = lambda r, c: tpb.PollTasksResponse()
    limit = 1024 * 1024
    with Client(fake.target, options=[("grpc.max_receive_message_length", limit)]) as small:
        small.poll_tasks("payments", wait=0)
        small.poll_tasks("payments", wait=0, max_bytes=100_000)
    assert [r.max_bytes for r in fake.service.calls("PollTasks")] == [limit, 100_000]


def test_poll_tasks_checks_max_tasks(client: Client) -> None:
    with pytest.raises(ValueError, match="max_tasks"):
        client.poll_tasks("payments", max_tasks=0)
    with pytest.raises(ValueError, match="max_tasks"):
        client.poll_tasks("payments", max_tasks=101)


def test_heartbeat_sends_details_and_reads_cancellation(fake: FakeServer, client: Client) -> None:
    def beat(request: tpb.HeartbeatTaskRequest, context: grpc.ServicerContext) -> Any:
        response = tpb.HeartbeatTaskResponse(cancel_requested=request.lease_token == "old")
        response.lease_expire_time.FromDatetime(datetime(2030, 1, 1, 0, 5, tzinfo=UTC))
        return response

    fake.service.behaviours["HeartbeatTask"] = beat
    beat_one = client.heartbeat_task("workflows/w/tasks/t1", "lease-t1", {"done": 3})
    beat_two = client.heartbeat_task("workflows/w/tasks/t1", "old")
    first, second = fake.service.calls("HeartbeatTask")
    assert first.details.fields["done"].number_value == 3
    assert not second.HasField("details")
    assert beat_one.lease_expire_time == datetime(2030, 1, 1, 0, 5, tzinfo=UTC)
    assert not beat_one.cancel_requested and beat_two.cancel_requested


def test_complete_task_returns_task_and_instance(fake: FakeServer, client: Client) -> None:
    done = task(status=task_pb2.TASK_STATUS_COMPLETED)
    fake.service.behaviours["CompleteTask"] = lambda r, c: tpb.CompleteTaskResponse(
        task=done, workflow=workflow(revision=3, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED)
    )
    outcome = client.complete_task("workflows/w/tasks/t1", "lease-t1", {"id": "ch-1"})
    client.complete_task("workflows/w/tasks/t1", "lease-t1", request_id="mine")
    first, second = fake.service.calls("CompleteTask")
    assert first.result.fields["id"].string_value == "ch-1"
    assert first.lease_token == "lease-t1"
    assert first.request_id  # generated, so a retry is idempotent
    assert second.request_id == "mine"
    assert outcome.task.status is TaskStatus.COMPLETED and outcome.task.terminal
    assert outcome.workflow.status is WorkflowStatus.COMPLETED
    assert outcome.to_dict()["workflow"]["revision"] == 3  # type: ignore[index, call-overload]


def test_fail_task_sends_the_error_and_explicit_zero_delay(
    fake: FakeServer, client: Client
) -> None:
    fake.service.behaviours["FailTask"] = lambda r, c: tpb.FailTaskResponse(
        task=task(status=task_pb2.TASK_STATUS_BACKOFF), workflow=workflow()
    )
    outcome = client.fail_task(
        "workflows/w/tasks/t1",
        "lease-t1",
        "CARD_DECLINED",
        "declined",
        details={"code": 51},
        non_retryable=True,
        retry_delay=0,
    )
    client.fail_task("workflows/w/tasks/t1", "lease-t1", "FLAKY")
    declined, flaky = fake.service.calls("FailTask")
    assert declined.error.type == "CARD_DECLINED"
    assert declined.error.message == "declined"
    assert declined.error.details.fields["code"].number_value == 51
    assert declined.non_retryable
    assert declined.HasField("retry_delay")
    assert declined.retry_delay.ToTimedelta().total_seconds() == 0
    assert not flaky.HasField("retry_delay") and not flaky.non_retryable
    assert outcome.task.status is TaskStatus.BACKOFF
    with pytest.raises(ValueError, match="type"):
        client.fail_task("workflows/w/tasks/t1", "lease-t1", "")


def test_task_errors_arrive_typed_and_are_never_retried(fake: FakeServer, client: Client) -> None:
    precondition = grpc.StatusCode.FAILED_PRECONDITION
    fake.service.behaviours["HeartbeatTask"] = _refuse(precondition, "LEASE_SUPERSEDED")
    fake.service.behaviours["CompleteTask"] = _refuse(precondition, "TASK_CANCELLED")
    fake.service.behaviours["GetTask"] = _refuse(grpc.StatusCode.NOT_FOUND, "TASK_NOT_FOUND")
    name = "workflows/w/tasks/t1"
    with pytest.raises(LeaseSuperseded) as superseded:
        client.heartbeat_task(name, "x")
    with pytest.raises(TaskCancelled) as cancelled:
        client.complete_task(name, "x", {})
    with pytest.raises(TaskNotFound) as missing:
        client.get_task(name)
    assert isinstance(superseded.value, FailedPrecondition)
    assert isinstance(cancelled.value, FailedPrecondition)
    assert isinstance(missing.value, NotFound)
    assert missing.value.metadata == {"task": name}
    for method in ("HeartbeatTask", "CompleteTask", "GetTask"):
        assert len(fake.service.calls(method)) == 1, method


def test_get_and_list_tasks(fake: FakeServer, client: Client) -> None:
    failed = task(status=task_pb2.TASK_STATUS_FAILED, attempt=3)
    failed.last_error.type = "CARD_DECLINED"
    failed.last_error.details.update({"code": 51})
    fake.service.behaviours["GetTask"] = lambda r, c: tpb.GetTaskResponse(task=failed)

    def pages(request: tpb.ListTasksRequest, context: grpc.ServicerContext) -> Any:
        page = int(request.page_token or "0")
        return tpb.ListTasksResponse(
            tasks=[task(task_id=f"p{page}")], next_page_token="" if page else "1"
        )

    fake.service.behaviours["ListTasks"] = pages
    got = client.get_task("workflows/w/tasks/t1")
    assert got.last_error is not None and got.last_error.type == "CARD_DECLINED"
    assert got.last_error.details == {"code": 51}
    assert got.attempt == 3 and got.status is TaskStatus.FAILED
    names = [t.name for t in client.list_tasks(queue="payments", workflow="w", status="leased")]
    assert names == ["workflows/w/tasks/p0", "workflows/w/tasks/p1"]
    first = fake.service.calls("ListTasks")[0]
    assert first.queue == "payments"
    assert first.workflow == "workflows/w"
    assert first.status == LEASED
    assert got.to_dict()["last_error"] == {
        "type": "CARD_DECLINED",
        "message": "",
        "details": {"code": 51},
    }


def test_a_workflow_shows_its_pending_task(fake: FakeServer, client: Client) -> None:
    running = workflow(status=workflow_pb2.WORKFLOW_STATUS_RUNNING, state="charge")
    running.pending_task.CopyFrom(task(input={"order": "o-1"}))
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=running if r.name == "workflows/w" else workflow("idle")
    )
    got = client.get("w")
    assert got.pending_task is not None
    assert got.pending_task.input == {"order": "o-1"}
    assert got.pending_task.status is TaskStatus.SCHEDULED
    assert got.to_dict()["pending_task"]["queue"] == "payments"  # type: ignore[index, call-overload]
    idle = client.get("idle")
    assert idle.pending_task is None and idle.to_dict()["pending_task"] is None


async def test_async_task_calls(fake: FakeServer) -> None:
    fake.service.behaviours["PollTasks"] = lambda r, c: tpb.PollTasksResponse(tasks=[_leased()])
    fake.service.behaviours["CompleteTask"] = _refuse(
        grpc.StatusCode.FAILED_PRECONDITION, "LEASE_SUPERSEDED"
    )
    fake.service.behaviours["ListTasks"] = lambda r, c: tpb.ListTasksResponse(tasks=[task()])
    async with AsyncClient(fake.target) as client:
        (leased,) = await client.poll_tasks("payments", wait=0.5)
        with pytest.raises(LeaseSuperseded):
            await client.complete_task(leased.name, leased.lease_token, {"id": "x"})
        listed = [t.name async for t in client.list_tasks(queue="payments")]
    assert leased.lease_token == "lease-t1"
    assert listed == ["workflows/w/tasks/t1"]


def test_task_statuses_mirror_the_proto_enum() -> None:
    for name, number in task_pb2.TaskStatus.items():
        status = TaskStatus.from_proto(number)
        assert status.value == name.removeprefix("TASK_STATUS_")
        assert TaskStatus(status.value) is status
    assert len(TaskStatus) == len(task_pb2.TaskStatus.keys())
