"""A scripted in-process WorkflowService and TaskService on loopback, for client tests
without statewrightd."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from statewright.v1 import task_pb2, task_service_pb2_grpc, workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc
from statewright.values import to_struct

Behaviour = Callable[[Any, grpc.ServicerContext], Any]


def abort(
    context: grpc.ServicerContext,
    code: grpc.StatusCode,
    reason: str = "",
    metadata: dict[str, str] | None = None,
    message: str = "scripted failure",
) -> None:
    """Ends the call as the real server does: one ErrorInfo in the status details."""
    status = status_pb2.Status(code=code.value[0], message=message)
    if reason:
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.ErrorInfo(
                reason=reason, domain="statewright.dev", metadata=metadata or {}
            )
        )
        status.details.append(detail)
    context.abort_with_status(rpc_status.to_status(status))


def workflow(
    workflow_id: str = "w",
    revision: int = 1,
    status: int = workflow_pb2.WORKFLOW_STATUS_WAITING,
    state: str = "awaiting_approval",
) -> workflow_pb2.Workflow:
    return workflow_pb2.Workflow(
        name=f"workflows/{workflow_id}",
        workflow_id=workflow_id,
        definition="mail-approval",
        version=1,
        state=state,
        status=status,  # type: ignore[arg-type]
        revision=revision,
    )


def task(
    workflow_id: str = "w",
    task_id: str = "t1",
    *,
    queue: str = "payments",
    input: dict[str, object] | None = None,
    attempt: int = 1,
    lease_token: str = "",
    status: int = task_pb2.TASK_STATUS_SCHEDULED,
) -> task_pb2.Task:
    message = task_pb2.Task(
        name=f"workflows/{workflow_id}/tasks/{task_id}",
        workflow=f"workflows/{workflow_id}",
        state="charge",
        queue=queue,
        attempt=attempt,
        lease_token=lease_token,
        status=status,  # type: ignore[arg-type]
        revision=1,
    )
    message.input.CopyFrom(to_struct(input or {}))
    return message


class FakeService(pb_grpc.WorkflowServiceServicer, task_service_pb2_grpc.TaskServiceServicer):
    """Answers each RPC of both services with the behaviour a test assigned; records requests
    and deadlines. Method names are unique across the services."""

    def __init__(self) -> None:
        self.behaviours: dict[str, Behaviour] = {}
        self.requests: list[tuple[str, Any]] = []
        self.remaining: list[tuple[str, float | None]] = []
        self._lock = threading.Lock()

    def _handle(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            self.requests.append((method, request))
            self.remaining.append((method, context.time_remaining()))
        behaviour = self.behaviours.get(method)
        if behaviour is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} not scripted")
        return behaviour(request, context)

    def calls(self, method: str) -> list[Any]:
        return [request for name, request in self.requests if name == method]

    def StartWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("StartWorkflow", request, context)

    def ResumeWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ResumeWorkflow", request, context)

    def SignalWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("SignalWorkflow", request, context)

    def GetWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetWorkflow", request, context)

    def ListWorkflows(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ListWorkflows", request, context)

    def CancelWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("CancelWorkflow", request, context)

    def GetDiagnostics(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetDiagnostics", request, context)

    def ListDefinitions(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ListDefinitions", request, context)

    def GetDefinition(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetDefinition", request, context)

    def GetWorkflowDiagnostics(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetWorkflowDiagnostics", request, context)

    def WatchWorkflow(
        self, request: Any, context: grpc.ServicerContext
    ) -> Iterator[pb.WatchWorkflowResponse]:
        result: Iterator[pb.WatchWorkflowResponse] = self._handle("WatchWorkflow", request, context)
        yield from result

    def PollTasks(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("PollTasks", request, context)

    def HeartbeatTask(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("HeartbeatTask", request, context)

    def CompleteTask(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("CompleteTask", request, context)

    def FailTask(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("FailTask", request, context)

    def GetTask(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetTask", request, context)

    def ListTasks(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ListTasks", request, context)


class FakeServer:
    """A grpc server on 127.0.0.1 with a :class:`FakeService`; use as a context manager."""

    def __init__(self, max_workers: int = 4) -> None:
        self.service = FakeService()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
        pb_grpc.add_WorkflowServiceServicer_to_server(self.service, self._server)
        task_service_pb2_grpc.add_TaskServiceServicer_to_server(self.service, self._server)
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self.target = f"127.0.0.1:{self.port}"

    def __enter__(self) -> FakeServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)
