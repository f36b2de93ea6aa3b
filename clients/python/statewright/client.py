"""The synchronous Statewright client."""

from __future__ import annotations

import os
import time
from collections.abc import Generator, Iterator, Mapping, Sequence
from types import TracebackType
from typing import TypeVar

import grpc

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

__all__ = ["Client"]

_Request = TypeVar("_Request")
_Response = TypeVar("_Response")


class Client:
    """A blocking client for ``statewright.v1.WorkflowService``.

    Every unary call has a deadline (``timeout`` seconds, else the service config's
    per-method timeout) and is retried by gRPC itself, with backoff, only when it fails with
    UNAVAILABLE; mutating calls carry a generated ``request_id`` so such a retry is
    idempotent. Failures raise :class:`statewright.errors.StatewrightError` subclasses typed by
    the ErrorInfo reason.

    ``target`` defaults to ``$STATEWRIGHT_TARGET`` or ``127.0.0.1:50051``. Pass
    ``credentials`` for TLS, or a ready ``channel`` (which the client then does not close).
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        credentials: grpc.ChannelCredentials | None = None,
        channel: grpc.Channel | None = None,
        timeout: float | None = None,
        metadata: Sequence[tuple[str, str]] = (),
        options: Sequence[tuple[str, object]] = (),
    ) -> None:
        self.target = target or os.environ.get(_common.TARGET_ENV) or _common.DEFAULT_TARGET
        self._owns_channel = channel is None
        if channel is None:
            opts = _common.channel_options(options)
            channel = (
                grpc.secure_channel(self.target, credentials, options=opts)
                if credentials is not None
                else grpc.insecure_channel(self.target, options=opts)
            )
        self._channel = channel
        self._stub = pb_grpc.WorkflowServiceStub(channel)
        self._timeout = timeout
        self._metadata = tuple(metadata)

    # --- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        if self._owns_channel:
            self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- plumbing -----------------------------------------------------------------------

    def _deadline(self, method: str, timeout: float | None) -> float | None:
        if timeout is not None:
            return timeout
        if self._timeout is not None:
            return self._timeout
        return _common.method_timeouts().get(method)

    def _call(
        self,
        method: str,
        fn: grpc.UnaryUnaryMultiCallable[_Request, _Response],
        request: _Request,
        timeout: float | None,
    ) -> _Response:
        try:
            return fn(request, timeout=self._deadline(method, timeout), metadata=self._metadata)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None

    # --- workflows ----------------------------------------------------------------------

    def start(
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
        response: pb.StartWorkflowResponse = self._call(
            "StartWorkflow", self._stub.StartWorkflow, request, timeout
        )
        return _common.step_result(response.workflow, response.transitions, response.created)

    def resume(
        self,
        name: str,
        event: str | None = None,
        input: Mapping[str, object] | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> StepResult:
        """Fires ``event`` (default: the wait state's first event) on a WAITING instance.

        With ``expected_revision`` the step runs only at that revision; otherwise
        :class:`~statewright.errors.RevisionMismatch` carries the ``actual_revision``.
        """
        request = _common.resume_request(
            name,
            event=event,
            input=input,
            expected_revision=expected_revision,
            request_id=request_id,
        )
        response: pb.ResumeWorkflowResponse = self._call(
            "ResumeWorkflow", self._stub.ResumeWorkflow, request, timeout
        )
        return _common.step_result(response.workflow, response.transitions)

    def signal(
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
        response: pb.SignalWorkflowResponse = self._call(
            "SignalWorkflow", self._stub.SignalWorkflow, request, timeout
        )
        return _common.signal_result(response)

    def get(self, name: str, *, timeout: float | None = None) -> Workflow:
        """Reads one instance at its latest revision."""
        request = pb.GetWorkflowRequest(name=workflow_name(name))
        response: pb.GetWorkflowResponse = self._call(
            "GetWorkflow", self._stub.GetWorkflow, request, timeout
        )
        return Workflow.from_proto(response.workflow)

    def cancel(
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
        response: pb.CancelWorkflowResponse = self._call(
            "CancelWorkflow", self._stub.CancelWorkflow, request, timeout
        )
        return Workflow.from_proto(response.workflow)

    def list_pages(
        self,
        *,
        definition: str | None = None,
        status: WorkflowStatus | str | None = None,
        page_size: int | None = None,
        page_token: str = "",
        timeout: float | None = None,
    ) -> Iterator[WorkflowPage]:
        """Yields pages of instances, following ``next_page_token`` until it is empty.

        Each page is fetched lazily with its own deadline.
        """
        token = page_token
        while True:
            request = _common.list_request(
                definition=definition, status=status, page_size=page_size, page_token=token
            )
            response: pb.ListWorkflowsResponse = self._call(
                "ListWorkflows", self._stub.ListWorkflows, request, timeout
            )
            yield WorkflowPage(
                workflows=tuple(Workflow.from_proto(w) for w in response.workflows),
                next_page_token=response.next_page_token,
            )
            if not response.next_page_token:
                return
            token = response.next_page_token

    def list(
        self,
        *,
        definition: str | None = None,
        status: WorkflowStatus | str | None = None,
        page_size: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[Workflow]:
        """Yields every matching instance, oldest first, across all pages."""
        for page in self.list_pages(
            definition=definition, status=status, page_size=page_size, timeout=timeout
        ):
            yield from page.workflows

    def watch(
        self,
        name: str,
        *,
        after_revision: int | None = None,
        timeout: float | None = None,
        reconnect_budget: float = 30.0,
    ) -> Generator[WatchEvent, None, None]:
        """Yields every revision of an instance in order, and stops after a terminal one.

        Without ``after_revision`` the first event is CURRENT (the instance now), then one
        STEP per new revision. With it, every revision after it is replayed first. If the
        connection drops or the server restarts, the watch resumes after the last revision
        it yielded, so each revision is seen exactly once; it gives up (raising the last
        error) after ``reconnect_budget`` seconds without progress. ``timeout`` bounds one
        stream; by default a watch has no deadline, since it lasts as long as the instance.
        Call ``close()`` on the generator (or stop iterating and drop it) to end the stream.
        """
        cursor = _common.WatchCursor(workflow_name(name), after_revision)
        backoff = _common.Backoff(budget=reconnect_budget)
        while True:
            failure: StatewrightError | None = None
            call = self._stub.WatchWorkflow(
                cursor.request(), timeout=timeout, metadata=self._metadata
            )
            try:
                for message in call:
                    event = cursor.accept(message)
                    if event is None:
                        continue
                    backoff.reset()
                    yield event
                    if cursor.done:
                        return
            except grpc.RpcError as exc:
                failure = from_rpc_error(exc)
                if not _common.resumable(failure):
                    raise failure from None
            finally:
                # Also runs when the consumer stops iterating: release the stream.
                call.cancel()
            if failure is None and cursor.done:
                return
            if failure is None and cursor.finished_quietly(self.get(cursor.name)):
                return
            delay = backoff.delay()
            if delay is None:
                raise failure or StatewrightError(
                    f"watch of {cursor.name} kept ending before a terminal revision",
                    code=grpc.StatusCode.UNAVAILABLE,
                )
            time.sleep(delay)

    # --- diagnostics and definitions ----------------------------------------------------

    def diagnostics(self, *, timeout: float | None = None) -> pb.GetDiagnosticsResponse:
        """The runtime's measurements: EventLoop, admissions, persistence, watchers, build."""
        response: pb.GetDiagnosticsResponse = self._call(
            "GetDiagnostics", self._stub.GetDiagnostics, pb.GetDiagnosticsRequest(), timeout
        )
        return response

    def workflow_diagnostics(
        self, name: str, *, timeout: float | None = None
    ) -> diagnostics_pb2.WorkflowDiagnostics:
        """The runtime's view of one instance: admission state, cache, recent transitions."""
        request = pb.GetWorkflowDiagnosticsRequest(name=workflow_name(name))
        response: pb.GetWorkflowDiagnosticsResponse = self._call(
            "GetWorkflowDiagnostics", self._stub.GetWorkflowDiagnostics, request, timeout
        )
        return response.diagnostics

    def definitions(
        self,
        definition: str | None = None,
        *,
        page_size: int | None = None,
        timeout: float | None = None,
    ) -> Iterator[Definition]:
        """Yields the definition versions the server knows, across all pages."""
        token = ""
        while True:
            request = pb.ListDefinitionsRequest(
                definition=definition or "", page_size=page_size or 0, page_token=token
            )
            response: pb.ListDefinitionsResponse = self._call(
                "ListDefinitions", self._stub.ListDefinitions, request, timeout
            )
            yield from (Definition.from_proto(d) for d in response.definitions)
            if not response.next_page_token:
                return
            token = response.next_page_token

    def definition(
        self, name: str, version: int | None = None, *, timeout: float | None = None
    ) -> Definition:
        """One definition version (the latest unless ``version``), with source and graph.

        ``name`` is a definition name or a ``definitions/...`` resource name.
        """
        request = pb.GetDefinitionRequest(name=_common.definition_name(name, version))
        response: pb.GetDefinitionResponse = self._call(
            "GetDefinition", self._stub.GetDefinition, request, timeout
        )
        return Definition.from_proto(response.definition)
