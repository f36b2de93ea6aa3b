"""The WorkflowService servicer: validates each request, then hands it to the runtime.

It never touches workflow state itself. Until the runtime lands, every RPC that passes
validation answers UNIMPLEMENTED with an ErrorInfo: nothing pretends to work.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd.api import validation as v
from statewrightd.api.handlers import Context, server_stream, unary
from statewrightd.errors import Unimplemented


def _unimplemented(method: str) -> Unimplemented:
    return Unimplemented(
        f"{method} is not implemented by this server version",
        reason="NOT_IMPLEMENTED",
        metadata={"method": f"statewright.v1.WorkflowService/{method}"},
    )


class WorkflowServicer(pb_grpc.WorkflowServiceServicer):
    @unary
    async def StartWorkflow(
        self, request: pb.StartWorkflowRequest, context: Context
    ) -> pb.StartWorkflowResponse:
        v.definition_name(request.definition)
        v.non_negative("version", request.version)
        if request.workflow_id:
            v.workflow_id(request.workflow_id)
        v.request_id(request.request_id)
        raise _unimplemented("StartWorkflow")

    @unary
    async def ResumeWorkflow(
        self, request: pb.ResumeWorkflowRequest, context: Context
    ) -> pb.ResumeWorkflowResponse:
        v.workflow_name(request.name)
        v.event_name(request.event, allow_empty=True)
        v.non_negative("expected_revision", request.expected_revision)
        v.request_id(request.request_id)
        raise _unimplemented("ResumeWorkflow")

    @unary
    async def SignalWorkflow(
        self, request: pb.SignalWorkflowRequest, context: Context
    ) -> pb.SignalWorkflowResponse:
        v.workflow_name(request.name)
        v.event_name(request.event)
        v.request_id(request.request_id)
        raise _unimplemented("SignalWorkflow")

    @unary
    async def GetWorkflow(
        self, request: pb.GetWorkflowRequest, context: Context
    ) -> pb.GetWorkflowResponse:
        v.workflow_name(request.name)
        raise _unimplemented("GetWorkflow")

    @unary
    async def ListWorkflows(
        self, request: pb.ListWorkflowsRequest, context: Context
    ) -> pb.ListWorkflowsResponse:
        if request.definition:
            v.definition_name(request.definition)
        v.page_size(request.page_size)
        raise _unimplemented("ListWorkflows")

    @unary
    async def CancelWorkflow(
        self, request: pb.CancelWorkflowRequest, context: Context
    ) -> pb.CancelWorkflowResponse:
        v.workflow_name(request.name)
        v.reason_text(request.reason)
        v.non_negative("expected_revision", request.expected_revision)
        v.request_id(request.request_id)
        raise _unimplemented("CancelWorkflow")

    @server_stream
    async def WatchWorkflow(
        self, request: pb.WatchWorkflowRequest, context: Context
    ) -> AsyncIterator[pb.WatchWorkflowResponse]:
        v.workflow_name(request.name)
        if request.HasField("after_revision"):
            v.non_negative("after_revision", request.after_revision)
        raise _unimplemented("WatchWorkflow")
        yield  # an async generator: the stream handler shape the server expects

    @unary
    async def GetDiagnostics(
        self, request: pb.GetDiagnosticsRequest, context: Context
    ) -> pb.GetDiagnosticsResponse:
        raise _unimplemented("GetDiagnostics")

    @unary
    async def GetWorkflowDiagnostics(
        self, request: pb.GetWorkflowDiagnosticsRequest, context: Context
    ) -> pb.GetWorkflowDiagnosticsResponse:
        v.workflow_name(request.name)
        raise _unimplemented("GetWorkflowDiagnostics")

    @unary
    async def ListDefinitions(
        self, request: pb.ListDefinitionsRequest, context: Context
    ) -> pb.ListDefinitionsResponse:
        if request.definition:
            v.definition_name(request.definition)
        v.page_size(request.page_size)
        raise _unimplemented("ListDefinitions")

    @unary
    async def GetDefinition(
        self, request: pb.GetDefinitionRequest, context: Context
    ) -> pb.GetDefinitionResponse:
        v.definition_resource(request.name)
        raise _unimplemented("GetDefinition")
