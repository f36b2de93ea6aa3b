"""The asyncio Statewright client, over ``grpc.aio``; the same API as :class:`Client`."""

# ASYNC109 prefers asyncio.timeout() to a `timeout` parameter. Here `timeout` is the gRPC
# deadline, sent to the server so that it stops working on an abandoned call too; a local
# cancel scope cannot do that, and the parameter keeps the API identical to Client's.
# ruff: noqa: ASYNC109

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import TypeVar

import grpc
import grpc.aio

from statewright import _common
from statewright._common import IfExists
from statewright.errors import StatewrightError, from_rpc_error
from statewright.models import (
    Definition,
    SignalResult,
    StepResult,
    WatchEvent,
    Workflow,
    WorkflowPage,
    WorkflowStatus,
    workflow_name,
)
from statewright.v1 import (
    diagnostics_pb2,
)
from statewright.v1 import (
    workflow_service_pb2 as pb,
)
from statewright.v1 import (
    workflow_service_pb2_grpc as pb_grpc,
)

__all__ = ["AsyncClient"]

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class AsyncClient:
    """An asyncio client for ``statewright.v1.WorkflowService``.

    Behaves like :class:`statewright.Client` (deadlines, UNAVAILABLE-only retries, typed
    errors, resuming watches); every call is a coroutine, and ``list``, ``list_pages``,
    ``watch`` and ``definitions`` are async iterators. Create it inside a running event
    loop and ``await client.close()`` (or use ``async with``).
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        channel: grpc.aio.Channel | None = None,
        timeout: float | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        options: Sequence[tuple[str, object]] = (),
    ) -> None:
        self.target = target or os.environ.get(_common.TARGET_ENV) or _common.DEFAULT_TARGET
        self._owns_channel = channel is None
        if channel is None:
            opts = _common.channel_options(options)
            channel = (
                grpc.aio.secure_channel(self.target, credentials, options=opts)
                if credentials is not None
                else grpc.aio.insecure_channel(self.target, options=opts)
            )
        self._channel = channel
        self._stub = pb_grpc.WorkflowServiceStub(channel)
        self._timeout = timeout
        self._metadata = grpc.aio.Metadata(*metadata)

    async def close(self) -> None:
        if self._owns_channel:
            await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _deadline(self, method: str, timeout: float | None) -> float | None:
        if timeout is not None:
            return timeout
        if self._timeout is not None:
            return self._timeout
        return _common.method_timeouts().get(method)

    async def _call(
        self,
        method: str,
        fn: grpc.aio.UnaryUnaryMultiCallable[_Request, _Response],
        request: _Request,
        timeout: float | None,
    ) -> _Response:
        try:
            return await fn(
                request, timeout=self._deadline(method, timeout), metadata=self._metadata
            )
        except grpc.aio.AioRpcError as exc:
            raise from_rpc_error(exc) from None

    async def start(
        self,
        definition: str,
        input: Mapping[str, object] | None = None,
        *,
        workflow_id: str | None = None,
        version: int | None = None,
        request_id: str | None = None,
        if_exists: IfExists | None = None,
        timeout: float | None = None,
    ) -> StepResult:
        """Starts an instance of ``definition`` (latest version unless ``version``)."""
        request = _common.start_request(
            definition,
            input=input,
            workflow_id=workflow_id,
            version=version,
            request_id=request_id,
            if_exists=if_exists,
        )
        response: pb.StartWorkflowResponse = await self._call(
            "StartWorkflow", self._stub.StartWorkflow, request, timeout
        )
        return _common.step_result(response.workflow, response.transitions, response.created)

    async def resume(
        self,
        name: str,
        event: str | None = None,
        input: Mapping[str, object] | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> StepResult:
        """Fires ``event`` (default: the wait state's first event) on a WAITING instance."""
        request = _common.resume_request(
            name,
            event=event,
            input=input,
            expected_revision=expected_revision,
            request_id=request_id,
        )
        response: pb.ResumeWorkflowResponse = await self._call(
            "ResumeWorkflow", self._stub.ResumeWorkflow, request, timeout
        )
        return _common.step_result(response.workflow, response.transitions)

    async def signal(
        self,
        name: str,
        event: str,
        payload: Mapping[str, object] | None = None,
        *,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> SignalResult:
        """Delivers ``event`` to a RUNNING instance; ``accepted`` means durably applied."""
        request = _common.signal_request(name, event, payload=payload, request_id=request_id)
        response: pb.SignalWorkflowResponse = await self._call(
            "SignalWorkflow", self._stub.SignalWorkflow, request, timeout
        )
        return _common.signal_result(response)

    async def get(self, name: str, *, timeout: float | None = None) -> Workflow:
        """Reads one instance at its latest revision."""
        request = pb.GetWorkflowRequest(name=workflow_name(name))
        response: pb.GetWorkflowResponse = await self._call(
            "GetWorkflow", self._stub.GetWorkflow, request, timeout
        )
        return Workflow.from_proto(response.workflow)

    async def cancel(
        self,
        name: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> Workflow:
        """Cancels an instance that has not ended; returns the CANCELLED instance."""
        request = _common.cancel_request(
            name, reason=reason, expected_revision=expected_revision, request_id=request_id
        )
        response: pb.CancelWorkflowResponse = await self._call(
            "CancelWorkflow", self._stub.CancelWorkflow, request, timeout
        )
        return Workflow.from_proto(response.workflow)

    async def list_pages(
        self,
        *,
        definition: str | None = None,
        status: WorkflowStatus | str | None = None,
        page_size: int | None = None,
        page_token: str = "",
        timeout: float | None = None,
    ) -> AsyncIterator[WorkflowPage]:
        """Yields pages of instances, following ``next_page_token`` until it is empty."""
        token = page_token
        while True:
            request = _common.list_request(
                definition=definition, status=status, page_size=page_size, page_token=token
            )
            response: pb.ListWorkflowsResponse = await self._call(
                "ListWorkflows", self._stub.ListWorkflows, request, timeout
            )
            yield WorkflowPage(
                workflows=tuple(Workflow.from_proto(w) for w in response.workflows),
                next_page_token=response.next_page_token,
            )
            if not response.next_page_token:
                return
            token = response.next_page_token

    async def list(
        self,
        *,
        definition: str | None = None,
        status: WorkflowStatus | str | None = None,
        page_size: int | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Workflow]:
        """Yields every matching instance, oldest first, across all pages."""
        async for page in self.list_pages(
            definition=definition, status=status, page_size=page_size, timeout=timeout
        ):
            for workflow in page.workflows:
                yield workflow

    async def watch(
        self,
        name: str,
        *,
        after_revision: int | None = None,
        timeout: float | None = None,
        reconnect_budget: float = 30.0,
    ) -> AsyncGenerator[WatchEvent, None]:
        """Yields every revision in order, resuming after drops; see :meth:`Client.watch`."""
        cursor = _common.WatchCursor(workflow_name(name), after_revision)
        backoff = _common.Backoff(budget=reconnect_budget)
        while True:
            failure: StatewrightError | None = None
            call = self._stub.WatchWorkflow(
                cursor.request(), timeout=timeout, metadata=self._metadata
            )
            try:
                async for message in call:
                    event = cursor.accept(message)
                    if event is None:
                        continue
                    backoff.reset()
                    yield event
                    if cursor.done:
                        return
            except grpc.aio.AioRpcError as exc:
                failure = from_rpc_error(exc)
                if not _common.resumable(failure):
                    raise failure from None
            finally:
                call.cancel()
            if failure is None and cursor.done:
                return
            if failure is None and cursor.finished_quietly(await self.get(cursor.name)):
                return
            delay = backoff.delay()
            if delay is None:
                raise failure or StatewrightError(
                    f"watch of {cursor.name} kept ending before a terminal revision",
                    code=grpc.StatusCode.UNAVAILABLE,
                )
            await asyncio.sleep(delay)

    async def diagnostics(self, *, timeout: float | None = None) -> pb.GetDiagnosticsResponse:
        """The runtime's measurements: EventLoop, admissions, persistence, watchers, build."""
        response: pb.GetDiagnosticsResponse = await self._call(
            "GetDiagnostics", self._stub.GetDiagnostics, pb.GetDiagnosticsRequest(), timeout
        )
        return response

    async def workflow_diagnostics(
        self, name: str, *, timeout: float | None = None
    ) -> diagnostics_pb2.WorkflowDiagnostics:
        """The runtime's view of one instance: admission state, cache, recent transitions."""
        request = pb.GetWorkflowDiagnosticsRequest(name=workflow_name(name))
        response: pb.GetWorkflowDiagnosticsResponse = await self._call(
            "GetWorkflowDiagnostics", self._stub.GetWorkflowDiagnostics, request, timeout
        )
        return response.diagnostics

    async def definitions(
        self,
        definition: str | None = None,
        *,
        page_size: int | None = None,
        timeout: float | None = None,
    ) -> AsyncIterator[Definition]:
        """Yields the definition versions the server knows, across all pages."""
        token = ""
        while True:
            request = pb.ListDefinitionsRequest(
                definition=definition or "", page_size=page_size or 0, page_token=token
            )
            response: pb.ListDefinitionsResponse = await self._call(
                "ListDefinitions", self._stub.ListDefinitions, request, timeout
            )
            for item in response.definitions:
                yield Definition.from_proto(item)
            if not response.next_page_token:
                return
            token = response.next_page_token

    async def definition(
        self, name: str, version: int | None = None, *, timeout: float | None = None
    ) -> Definition:
        """One definition version (the latest unless ``version``), with source and graph."""
        request = pb.GetDefinitionRequest(name=_common.definition_name(name, version))
        response: pb.GetDefinitionResponse = await self._call(
            "GetDefinition", self._stub.GetDefinition, request, timeout
        )
        return Definition.from_proto(response.definition)
