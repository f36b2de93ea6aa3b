"""A scripted in-process WorkflowService, TaskService and BatchService on loopback, for
client tests without statewrightd."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from statewright.v1 import (
    batch_service_pb2_grpc,
    task_pb2,
    task_service_pb2,
    task_service_pb2_grpc,
    workflow_pb2,
)
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
    *,
    retry_delay: float | None = None,
) -> None:
    """Ends the call as the real server does: one ErrorInfo in the status details, and a
    RetryInfo beside it with ``retry_delay`` (as RATE_LIMITED has)."""
    status = status_pb2.Status(code=code.value[0], message=message)
    if reason:
        detail = any_pb2.Any()
        detail.Pack(
            error_details_pb2.ErrorInfo(
                reason=reason, domain="statewright.dev", metadata=metadata or {}
            )
        )
        status.details.append(detail)
    if retry_delay is not None:
        retry = error_details_pb2.RetryInfo()
        retry.retry_delay.FromNanoseconds(round(retry_delay * 1e9))
        status.details.add().Pack(retry)
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


def _sans(context: grpc.ServicerContext) -> list[str]:
    """The subject alternative names of the client's certificate (none: no certificate)."""
    found: Any = context.auth_context().get("x509_subject_alternative_name", [])
    return [value.decode() for value in found]


class FakeService(
    pb_grpc.WorkflowServiceServicer,
    task_service_pb2_grpc.TaskServiceServicer,
    batch_service_pb2_grpc.BatchServiceServicer,
):
    """Answers each RPC of the services with the behaviour a test assigned; records requests
    and deadlines. Method names are unique across the services."""

    def __init__(self) -> None:
        self.behaviours: dict[str, Behaviour] = {}
        self.requests: list[tuple[str, Any]] = []
        self.remaining: list[tuple[str, float | None]] = []
        # Per call: its invocation metadata, and the SANs of the client's certificate.
        self.metadata: list[tuple[str, dict[str, str]]] = []
        self.peers: list[tuple[str, list[str]]] = []
        self._lock = threading.Lock()

    def _handle(self, method: str, request: Any, context: grpc.ServicerContext) -> Any:
        with self._lock:
            self.requests.append((method, request))
            self.remaining.append((method, context.time_remaining()))
            sent = {
                key: value for key, value in context.invocation_metadata() if isinstance(value, str)
            }
            self.metadata.append((method, sent))
            self.peers.append((method, _sans(context)))
        behaviour = self.behaviours.get(method)
        if behaviour is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, f"{method} not scripted")
        return behaviour(request, context)

    def calls(self, method: str) -> list[Any]:
        return [request for name, request in self.requests if name == method]

    def authorizations(self) -> list[tuple[str, str | None]]:
        """Each call's method and its ``authorization`` metadata (None: none sent)."""
        with self._lock:
            return [(method, sent.get("authorization")) for method, sent in self.metadata]

    def StartWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("StartWorkflow", request, context)

    def ResumeWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ResumeWorkflow", request, context)

    def SignalWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("SignalWorkflow", request, context)

    def SignalWithStartWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("SignalWithStartWorkflow", request, context)

    def GetWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetWorkflow", request, context)

    def ListWorkflows(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ListWorkflows", request, context)

    def CancelWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("CancelWorkflow", request, context)

    def RetryWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("RetryWorkflow", request, context)

    def ResetWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ResetWorkflow", request, context)

    def MigrateWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("MigrateWorkflow", request, context)

    def PauseWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("PauseWorkflow", request, context)

    def UnpauseWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("UnpauseWorkflow", request, context)

    def CountWorkflows(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("CountWorkflows", request, context)

    def DeleteWorkflow(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("DeleteWorkflow", request, context)

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

    def SetQueueConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("SetQueueConfig", request, context)

    def GetQueueConfig(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetQueueConfig", request, context)

    def ListQueues(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ListQueues", request, context)

    def StartBatchOperation(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("StartBatchOperation", request, context)

    def GetBatchOperation(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("GetBatchOperation", request, context)

    def ListBatchOperations(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("ListBatchOperations", request, context)

    def CancelBatchOperation(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._handle("CancelBatchOperation", request, context)


@dataclass(frozen=True)
class ServerTls:
    """The fake server's TLS: its key and certificate (PEM), and a client CA (PEM) that
    makes client certificates required (mTLS)."""

    key: bytes
    cert: bytes
    client_ca: bytes | None = None


class FakeServer:
    """A grpc server on 127.0.0.1 with a :class:`FakeService`; use as a context manager.
    Plaintext, or TLS (and mTLS) with ``tls``."""

    def __init__(self, max_workers: int = 4, *, tls: ServerTls | None = None) -> None:
        self.service = FakeService()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
        pb_grpc.add_WorkflowServiceServicer_to_server(self.service, self._server)
        task_service_pb2_grpc.add_TaskServiceServicer_to_server(self.service, self._server)
        batch_service_pb2_grpc.add_BatchServiceServicer_to_server(self.service, self._server)
        if tls is None:
            self.port = self._server.add_insecure_port("127.0.0.1:0")
        else:
            credentials = grpc.ssl_server_credentials(
                [(tls.key, tls.cert)],
                root_certificates=tls.client_ca,
                require_client_auth=tls.client_ca is not None,
            )
            self.port = self._server.add_secure_port("127.0.0.1:0", credentials)
        self.target = f"127.0.0.1:{self.port}"

    def __enter__(self) -> FakeServer:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop(grace=None)


class FakeTasks:
    """An in-memory task queue behind the fake TaskService, strict about leases as the real
    server is: a heartbeat, completion or failure must present the current, unexpired lease
    (else LEASE_SUPERSEDED); a cancelled task answers ``cancel_requested`` to heartbeats and
    TASK_CANCELLED to completions. Polls honour ``max_tasks`` and ``wait`` (ending early when
    the caller abandons them). Tests script failures by wrapping ``service.behaviours``.
    """

    def __init__(
        self,
        service: FakeService,
        *,
        first_lease: float = 30.0,
        lease: float = 60.0,
        max_per_poll: int = 100,
    ) -> None:
        self.service = service
        self.first_lease = first_lease
        self.lease = lease
        self.max_per_poll = max_per_poll
        self.ready: list[task_pb2.Task] = []
        self.leases: dict[str, tuple[str, float]] = {}  # name -> (token, wall-clock expiry)
        self.cancelled: set[str] = set()
        self.completed: dict[str, Any] = {}
        self.failed: dict[str, Any] = {}
        self.heartbeats: list[Any] = []
        self.abandoned_polls = 0
        self.condition = threading.Condition()
        service.behaviours.update(
            PollTasks=self.poll,
            HeartbeatTask=self.heartbeat,
            CompleteTask=self.complete,
            FailTask=self.fail,
        )

    def add(self, task_id: str, input: dict[str, object], queue: str = "payments") -> str:
        message = task(task_id, task_id, queue=queue, input=input, attempt=0)
        with self.condition:
            self.ready.append(message)
            self.condition.notify_all()
        return message.name

    def cancel(self, name: str) -> None:
        with self.condition:
            self.cancelled.add(name)

    def supersede(self, name: str) -> None:
        """The lease expired and the task went to another worker."""
        with self.condition:
            self.leases[name] = ("someone-else", time.time() + 60)

    def wait_until(self, predicate: Callable[[], bool], seconds: float = 15.0) -> bool:
        with self.condition:
            return self.condition.wait_for(predicate, seconds)

    def poll(self, request: Any, context: grpc.ServicerContext) -> Any:
        deadline = time.monotonic() + request.wait.ToTimedelta().total_seconds()
        with self.condition:
            while True:
                if not context.is_active():
                    self.abandoned_polls += 1
                    self.condition.notify_all()
                    return task_service_pb2.PollTasksResponse()
                matching = [t for t in self.ready if t.queue == request.queue]
                if matching or time.monotonic() >= deadline:
                    break
                self.condition.wait(0.02)
            leased = matching[: min(max(1, request.max_tasks), self.max_per_poll)]
            for message in leased:
                self.ready.remove(message)
                message.attempt += 1
                message.status = task_pb2.TASK_STATUS_LEASED
                message.lease_token = f"{message.name}@{message.attempt}"
                expires = time.time() + self.first_lease
                message.lease_expire_time.FromNanoseconds(int(expires * 1e9))
                self.leases[message.name] = (message.lease_token, expires)
            self.condition.notify_all()
            return task_service_pb2.PollTasksResponse(tasks=leased)

    def _check_lease(self, request: Any, context: grpc.ServicerContext) -> None:
        token, expires = self.leases.get(request.name, ("", 0.0))
        if request.lease_token != token or time.time() > expires:
            abort(context, grpc.StatusCode.FAILED_PRECONDITION, "LEASE_SUPERSEDED")

    def heartbeat(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.condition:
            self._check_lease(request, context)
            self.heartbeats.append(request)
            self.condition.notify_all()
            response = task_service_pb2.HeartbeatTaskResponse(
                cancel_requested=request.name in self.cancelled
            )
            token, _ = self.leases[request.name]
            expires = time.time() + self.lease
            self.leases[request.name] = (token, expires)
            response.lease_expire_time.FromNanoseconds(int(expires * 1e9))
            return response

    def complete(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.condition:
            if request.name in self.cancelled:
                abort(context, grpc.StatusCode.FAILED_PRECONDITION, "TASK_CANCELLED")
            self._check_lease(request, context)
            self.completed[request.name] = request
            del self.leases[request.name]
            self.condition.notify_all()
            done = task_pb2.Task(name=request.name, status=task_pb2.TASK_STATUS_COMPLETED)
            return task_service_pb2.CompleteTaskResponse(task=done, workflow=workflow())

    def fail(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.condition:
            self._check_lease(request, context)
            self.failed[request.name] = request
            del self.leases[request.name]
            self.condition.notify_all()
            status = (
                task_pb2.TASK_STATUS_FAILED
                if request.non_retryable
                else task_pb2.TASK_STATUS_BACKOFF
            )
            failed = task_pb2.Task(name=request.name, status=status)
            return task_service_pb2.FailTaskResponse(task=failed, workflow=workflow())
