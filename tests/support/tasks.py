"""A thin synchronous client over the TaskService stubs, for e2e tests and worker
processes. Every call has a deadline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import grpc
from google.protobuf import duration_pb2
from statewright.v1 import task_pb2
from statewright.v1 import task_service_pb2 as pb
from statewright.v1 import task_service_pb2_grpc as pb_grpc

from tests.support.api import DEFAULT_TIMEOUT, struct

SCHEDULED = task_pb2.TASK_STATUS_SCHEDULED
LEASED = task_pb2.TASK_STATUS_LEASED
BACKOFF = task_pb2.TASK_STATUS_BACKOFF
COMPLETED = task_pb2.TASK_STATUS_COMPLETED
FAILED = task_pb2.TASK_STATUS_FAILED
CANCELLED = task_pb2.TASK_STATUS_CANCELLED
TIMED_OUT = task_pb2.TASK_STATUS_TIMED_OUT


def duration(seconds: float) -> duration_pb2.Duration:
    message = duration_pb2.Duration()
    message.FromNanoseconds(round(seconds * 1e9))
    return message


class Tasks:
    """TaskService calls on one channel (a test's ``Client.channel``, or its own)."""

    def __init__(self, channel: grpc.Channel, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.stub = pb_grpc.TaskServiceStub(channel)
        self.timeout = timeout

    def poll(
        self,
        queue: str,
        *,
        wait: float = 5.0,
        max_tasks: int = 1,
        identity: str = "e2e",
        max_bytes: int = 0,
    ) -> list[task_pb2.Task]:
        request = pb.PollTasksRequest(
            queue=queue,
            identity=identity,
            max_tasks=max_tasks,
            wait=duration(wait),
            max_bytes=max_bytes,
        )
        return list(self.stub.PollTasks(request, timeout=wait + self.timeout).tasks)

    def poll_one(self, queue: str, *, wait: float = 10.0, identity: str = "e2e") -> task_pb2.Task:
        tasks = self.poll(queue, wait=wait, identity=identity)
        assert len(tasks) == 1, f"expected one task on {queue} within {wait}s, got {tasks}"
        return tasks[0]

    def heartbeat(
        self, task: task_pb2.Task, details: Mapping[str, Any] | None = None
    ) -> pb.HeartbeatTaskResponse:
        request = pb.HeartbeatTaskRequest(name=task.name, lease_token=task.lease_token)
        if details is not None:
            request.details.CopyFrom(struct(details))
        return self.stub.HeartbeatTask(request, timeout=self.timeout)

    def complete(
        self,
        task: task_pb2.Task,
        result: Mapping[str, Any] | None = None,
        *,
        request_id: str = "",
        lease_token: str | None = None,
    ) -> pb.CompleteTaskResponse:
        request = pb.CompleteTaskRequest(
            name=task.name,
            lease_token=task.lease_token if lease_token is None else lease_token,
            result=struct(result),
            request_id=request_id,
        )
        return self.stub.CompleteTask(request, timeout=self.timeout)

    def fail(
        self,
        task: task_pb2.Task,
        error_type: str,
        message: str = "",
        *,
        details: Mapping[str, Any] | None = None,
        non_retryable: bool = False,
        retry_delay: float | None = None,
        request_id: str = "",
    ) -> pb.FailTaskResponse:
        request = pb.FailTaskRequest(
            name=task.name,
            lease_token=task.lease_token,
            error=task_pb2.TaskError(type=error_type, message=message, details=struct(details)),
            non_retryable=non_retryable,
            request_id=request_id,
        )
        if retry_delay is not None:
            request.retry_delay.CopyFrom(duration(retry_delay))
        return self.stub.FailTask(request, timeout=self.timeout)

    def get(self, name: str) -> task_pb2.Task:
        return self.stub.GetTask(pb.GetTaskRequest(name=name), timeout=self.timeout).task

    def list(
        self, *, queue: str = "", workflow: str = "", status: int = 0, page_size: int = 0
    ) -> list[task_pb2.Task]:
        """Every page of a listing."""
        found: list[task_pb2.Task] = []
        token = ""
        while True:
            request = pb.ListTasksRequest(
                queue=queue,
                workflow=workflow,
                status=status,  # type: ignore[arg-type]
                page_size=page_size,
                page_token=token,
            )
            page = self.stub.ListTasks(request, timeout=self.timeout)
            found.extend(page.tasks)
            token = page.next_page_token
            if not token:
                return found
