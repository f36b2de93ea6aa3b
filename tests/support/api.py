"""A thin synchronous client over the generated stubs, and error assertions, for e2e tests."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import TracebackType
from typing import Any

import grpc
from google.protobuf import json_format, struct_pb2
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

DOMAIN = "statewright.dev"
DEFAULT_TIMEOUT = 15.0

RUNNING = workflow_pb2.WORKFLOW_STATUS_RUNNING
WAITING = workflow_pb2.WORKFLOW_STATUS_WAITING
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED
FAILED = workflow_pb2.WORKFLOW_STATUS_FAILED
CANCELLED = workflow_pb2.WORKFLOW_STATUS_CANCELLED


def uid(prefix: str = "wf") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def struct(values: Mapping[str, Any] | None) -> struct_pb2.Struct:
    message = struct_pb2.Struct()
    if values:
        message.update(values)
    return message


def context_of(workflow: workflow_pb2.Workflow) -> dict[str, Any]:
    return json_format.MessageToDict(workflow.context)


def error_info(err: grpc.RpcError) -> error_details_pb2.ErrorInfo:
    """The one ErrorInfo of a status; fails unless there is exactly one, in our domain."""
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None, f"no rich status on {err}"
    infos = []
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            infos.append(info)
    assert len(infos) == 1, f"expected exactly one ErrorInfo, got {infos}"
    assert infos[0].domain == DOMAIN, infos[0]
    return infos[0]


def rpc_failure(call: Callable[[], object]) -> tuple[grpc.StatusCode, error_details_pb2.ErrorInfo]:
    """Run ``call``, which must fail; return its code and its (checked) ErrorInfo."""
    try:
        result = call()
    except grpc.RpcError as err:
        return err.code(), error_info(err)
    raise AssertionError(f"expected an RPC error, got {result}")


def expect_error(
    call: Callable[[], object], code: grpc.StatusCode, reason: str
) -> error_details_pb2.ErrorInfo:
    actual_code, info = rpc_failure(call)
    assert (actual_code, info.reason) == (code, reason), (actual_code, info)
    return info


class Client:
    """One channel to one server; every call has a deadline."""

    def __init__(
        self, target: str, timeout: float = DEFAULT_TIMEOUT, channel: grpc.Channel | None = None
    ) -> None:
        self.target = target
        self.channel = channel if channel is not None else grpc.insecure_channel(target)
        self.stub = pb_grpc.WorkflowServiceStub(self.channel)
        self.timeout = timeout

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- steps -------------------------------------------------------------------------------

    def start(
        self,
        definition: str,
        *,
        workflow_id: str = "",
        version: int = 0,
        input: Mapping[str, Any] | None = None,
        request_id: str = "",
        if_exists: pb.IfExistsPolicy.ValueType = pb.IF_EXISTS_POLICY_UNSPECIFIED,
        timeout: float | None = None,
        start_delay: timedelta | None = None,
    ) -> pb.StartWorkflowResponse:
        request = pb.StartWorkflowRequest(
            definition=definition,
            version=version,
            workflow_id=workflow_id,
            input=struct(input),
            request_id=request_id,
            if_exists=if_exists,
        )
        if start_delay is not None:
            request.start_delay.FromTimedelta(start_delay)
        return self.stub.StartWorkflow(request, timeout=timeout or self.timeout)

    def resume(
        self,
        workflow_id: str,
        event: str = "",
        *,
        input: Mapping[str, Any] | None = None,
        expected_revision: int = 0,
        request_id: str = "",
        timeout: float | None = None,
    ) -> pb.ResumeWorkflowResponse:
        request = pb.ResumeWorkflowRequest(
            name=f"workflows/{workflow_id}",
            event=event,
            input=struct(input),
            expected_revision=expected_revision,
            request_id=request_id,
        )
        return self.stub.ResumeWorkflow(request, timeout=timeout or self.timeout)

    def signal(
        self,
        workflow_id: str,
        event: str,
        payload: Mapping[str, Any] | None = None,
        *,
        request_id: str = "",
        timeout: float | None = None,
    ) -> pb.SignalWorkflowResponse:
        request = pb.SignalWorkflowRequest(
            name=f"workflows/{workflow_id}",
            event=event,
            payload=struct(payload),
            request_id=request_id,
        )
        return self.stub.SignalWorkflow(request, timeout=timeout or self.timeout)

    def signal_with_start(
        self,
        definition: str,
        workflow_id: str,
        event: str,
        payload: Mapping[str, Any] | None = None,
        *,
        input: Mapping[str, Any] | None = None,
        request_id: str = "",
        if_finished: pb.IfFinishedPolicy.ValueType = pb.IF_FINISHED_POLICY_UNSPECIFIED,
        start_now: bool = False,
        timeout: float | None = None,
    ) -> pb.SignalWithStartWorkflowResponse:
        request = pb.SignalWithStartWorkflowRequest(
            definition=definition,
            workflow_id=workflow_id,
            event=event,
            payload=struct(payload),
            input=struct(input),
            request_id=request_id,
            if_finished=if_finished,
            start_now=start_now,
        )
        return self.stub.SignalWithStartWorkflow(request, timeout=timeout or self.timeout)

    def cancel(
        self,
        workflow_id: str,
        *,
        reason: str = "",
        expected_revision: int = 0,
        request_id: str = "",
    ) -> workflow_pb2.Workflow:
        request = pb.CancelWorkflowRequest(
            name=f"workflows/{workflow_id}",
            reason=reason,
            expected_revision=expected_revision,
            request_id=request_id,
        )
        return self.stub.CancelWorkflow(request, timeout=self.timeout).workflow

    # -- reads -------------------------------------------------------------------------------

    def get(self, workflow_id: str) -> workflow_pb2.Workflow:
        request = pb.GetWorkflowRequest(name=f"workflows/{workflow_id}")
        return self.stub.GetWorkflow(request, timeout=self.timeout).workflow

    def steps(self, workflow_id: str, last: int) -> list[pb.WatchWorkflowResponse]:
        """Every step of the instance from history, through revision ``last``."""
        request = pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}", after_revision=0)
        stream = self.stub.WatchWorkflow(request, timeout=self.timeout)
        steps = []
        for message in stream:
            steps.append(message)
            if message.revision >= last:
                break
        stream.cancel()
        return steps

    def list_page(
        self,
        *,
        definition: str = "",
        status: workflow_pb2.WorkflowStatus.ValueType = workflow_pb2.WORKFLOW_STATUS_UNSPECIFIED,
        page_size: int = 0,
        page_token: str = "",
    ) -> pb.ListWorkflowsResponse:
        request = pb.ListWorkflowsRequest(
            definition=definition, status=status, page_size=page_size, page_token=page_token
        )
        return self.stub.ListWorkflows(request, timeout=self.timeout)

    def list_all(
        self,
        *,
        definition: str = "",
        status: workflow_pb2.WorkflowStatus.ValueType = workflow_pb2.WORKFLOW_STATUS_UNSPECIFIED,
        page_size: int = 0,
        max_pages: int = 1000,
    ) -> list[workflow_pb2.Workflow]:
        """Every page, in order; fails on a listing that never ends."""
        items: list[workflow_pb2.Workflow] = []
        token = ""
        for _ in range(max_pages):
            page = self.list_page(
                definition=definition, status=status, page_size=page_size, page_token=token
            )
            items.extend(page.workflows)
            token = page.next_page_token
            if not token:
                return items
        raise AssertionError(f"listing did not end within {max_pages} pages")

    def diagnostics(self) -> pb.GetDiagnosticsResponse:
        return self.stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=self.timeout)

    def workflow_diagnostics(self, workflow_id: str) -> pb.GetWorkflowDiagnosticsResponse:
        request = pb.GetWorkflowDiagnosticsRequest(name=f"workflows/{workflow_id}")
        return self.stub.GetWorkflowDiagnostics(request, timeout=self.timeout)

    def definitions(self, definition: str = "", page_size: int = 0) -> pb.ListDefinitionsResponse:
        request = pb.ListDefinitionsRequest(definition=definition, page_size=page_size)
        return self.stub.ListDefinitions(request, timeout=self.timeout)

    def definition(self, name: str) -> pb.GetDefinitionResponse:
        return self.stub.GetDefinition(pb.GetDefinitionRequest(name=name), timeout=self.timeout)
