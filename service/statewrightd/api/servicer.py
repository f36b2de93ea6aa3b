"""The WorkflowService servicer: each handler converts a request, calls its use case (the
application core), and converts the answer. It holds no workflow state and makes no
decisions of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator

from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd.api import requests, responses
from statewrightd.api import validation as v
from statewrightd.api.convert import definition_pb
from statewrightd.api.definitions_page import list_definitions
from statewrightd.api.diagnostics import diagnostics_response, workflow_diagnostics
from statewrightd.api.door import Door
from statewrightd.api.handlers import Context, budget, server_stream, unary
from statewrightd.app.reads import WorkflowFilter
from statewrightd.app.wiring import Application
from statewrightd.errors import NotFound


class WorkflowServicer(pb_grpc.WorkflowServiceServicer):
    def __init__(self, app: Application, door: Door) -> None:
        self._app = app
        self.door = door
        self._watch_message = responses.WatchMessages()
        self._limits = requests.value_limits(app.config.limits)

    @unary
    async def StartWorkflow(
        self, request: pb.StartWorkflowRequest, context: Context
    ) -> pb.StartWorkflowResponse:
        loaded = await self._app.reads.definition(*requests.start_target(request))
        command = requests.start_command(request, loaded, self._limits)
        return responses.start_response(await self._app.workflows.step(command, budget(context)))

    @unary
    async def ResumeWorkflow(
        self, request: pb.ResumeWorkflowRequest, context: Context
    ) -> pb.ResumeWorkflowResponse:
        command = requests.resume_command(request, self._limits)
        return responses.resume_response(await self._app.workflows.step(command, budget(context)))

    @unary
    async def SignalWorkflow(
        self, request: pb.SignalWorkflowRequest, context: Context
    ) -> pb.SignalWorkflowResponse:
        command = requests.signal_command(request, self._limits)
        return responses.signal_response(await self._app.workflows.step(command, budget(context)))

    @unary
    async def SignalWithStartWorkflow(
        self, request: pb.SignalWithStartWorkflowRequest, context: Context
    ) -> pb.SignalWithStartWorkflowResponse:
        target = requests.signal_with_start_target(request)
        loaded = await self._app.reads.definition(*target)
        command = requests.signal_with_start_command(request, loaded, self._limits)
        start_new = request.if_finished == pb.IF_FINISHED_POLICY_START_NEW
        outcome = await self._app.workflows.signal_with_start(
            command, start_new=start_new, budget=budget(context)
        )
        return responses.signal_with_start_response(outcome)

    @unary
    async def CancelWorkflow(
        self, request: pb.CancelWorkflowRequest, context: Context
    ) -> pb.CancelWorkflowResponse:
        command = requests.cancel_command(request)
        return responses.cancel_response(await self._app.workflows.step(command, budget(context)))

    @unary
    async def RetryWorkflow(
        self, request: pb.RetryWorkflowRequest, context: Context
    ) -> pb.RetryWorkflowResponse:
        command = requests.retry_command(request)
        repaired = await self._app.repairs.retry(
            command, dry_run=request.dry_run, budget=budget(context)
        )
        return responses.retry_response(repaired)

    @unary
    async def ResetWorkflow(
        self, request: pb.ResetWorkflowRequest, context: Context
    ) -> pb.ResetWorkflowResponse:
        command = requests.reset_command(request)
        repaired = await self._app.repairs.reset(
            command, dry_run=request.dry_run, budget=budget(context)
        )
        return responses.reset_response(repaired)

    @unary
    async def MigrateWorkflow(
        self, request: pb.MigrateWorkflowRequest, context: Context
    ) -> pb.MigrateWorkflowResponse:
        asked = requests.migration_asked(request)
        migrated = await self._app.migrations.migrate(
            asked, dry_run=request.dry_run, budget=budget(context)
        )
        return responses.migrate_response(migrated)

    @unary
    async def PauseWorkflow(
        self, request: pb.PauseWorkflowRequest, context: Context
    ) -> pb.PauseWorkflowResponse:
        command = requests.pause_command(request)
        repaired = await self._app.repairs.pause(
            command, dry_run=request.dry_run, budget=budget(context)
        )
        return responses.pause_response(repaired)

    @unary
    async def UnpauseWorkflow(
        self, request: pb.UnpauseWorkflowRequest, context: Context
    ) -> pb.UnpauseWorkflowResponse:
        command = requests.unpause_command(request)
        repaired = await self._app.repairs.unpause(
            command, dry_run=request.dry_run, budget=budget(context)
        )
        return responses.unpause_response(repaired)

    @unary
    async def DeleteWorkflow(
        self, request: pb.DeleteWorkflowRequest, context: Context
    ) -> pb.DeleteWorkflowResponse:
        workflow_id, expected = requests.delete_target(request)
        try:
            deleted = await self._app.workflows.delete(
                workflow_id, expected, force=request.force, budget=budget(context)
            )
        except NotFound:
            if not request.allow_missing:
                raise
            return responses.delete_response(None)
        return responses.delete_response(deleted)

    @unary
    async def GetWorkflow(
        self, request: pb.GetWorkflowRequest, context: Context
    ) -> pb.GetWorkflowResponse:
        return responses.get_response(await self._app.reads.get(v.workflow_name(request.name)))

    @unary
    async def ListWorkflows(
        self, request: pb.ListWorkflowsRequest, context: Context
    ) -> pb.ListWorkflowsResponse:
        if request.definition:
            v.definition_name(request.definition)
        status = requests.status_filter(request.status)
        order = v.list_order(request.order_by)
        page, found = await self._app.reads.list_workflows(
            WorkflowFilter(
                request.definition or None,
                status,
                v.id_prefix(request.id_prefix),
                v.list_filter(request.filter),
            ),
            v.page_size(request.page_size),
            request.page_token,
            order,
        )
        return responses.list_response(page, found)

    @server_stream
    async def WatchWorkflow(
        self, request: pb.WatchWorkflowRequest, context: Context
    ) -> AsyncIterator[pb.WatchWorkflowResponse]:
        async for event in self._app.workflows.watch(*requests.watch_start(request)):
            yield self._watch_message(event)

    @unary
    async def GetDiagnostics(
        self, request: pb.GetDiagnosticsRequest, context: Context
    ) -> pb.GetDiagnosticsResponse:
        return diagnostics_response(await self._app.diagnostics.runtime())

    @unary
    async def GetWorkflowDiagnostics(
        self, request: pb.GetWorkflowDiagnosticsRequest, context: Context
    ) -> pb.GetWorkflowDiagnosticsResponse:
        return await workflow_diagnostics(self._app, request.name)

    @unary
    async def CountWorkflows(
        self, request: pb.CountWorkflowsRequest, context: Context
    ) -> pb.CountWorkflowsResponse:
        counts = await self._app.reads.count_by_status(v.list_filter(request.filter))
        return responses.count_response(counts)

    @unary
    async def ListDefinitions(
        self, request: pb.ListDefinitionsRequest, context: Context
    ) -> pb.ListDefinitionsResponse:
        return await list_definitions(self._app, request)

    @unary
    async def GetDefinition(
        self, request: pb.GetDefinitionRequest, context: Context
    ) -> pb.GetDefinitionResponse:
        loaded = await self._app.reads.definition(*v.definition_resource(request.name))
        return pb.GetDefinitionResponse(definition=definition_pb(loaded))
