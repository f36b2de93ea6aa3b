"""The WorkflowService servicer: validates each request, converts it, hands it on.

It never touches workflow state: step RPCs go to the EventLoop through the application,
reads go to the store; watch streams are fed by the watch hub and the history table.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import uuid
from collections.abc import AsyncIterator

import grpc
from google.protobuf import duration_pb2
from google.protobuf.timestamp_pb2 import Timestamp
from statewright.v1 import diagnostics_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd import __version__
from statewrightd.api import validation as v
from statewrightd.api.convert import (
    STATUS_FROM_PB,
    definition_pb,
    record_at,
    struct_to_dict,
    transitions_pb,
    workflow_pb,
)
from statewrightd.api.door import Door
from statewrightd.api.handlers import Context, server_stream, unary
from statewrightd.api.status import to_status_proto
from statewrightd.application import Application, Replayed, request_key
from statewrightd.engine.admission import AdmissionState
from statewrightd.engine.runtime import Outcome, Replay, RequestKey
from statewrightd.engine.snapshots import transitions_from_dicts
from statewrightd.engine.watch import StepEvent
from statewrightd.errors import (
    Aborted,
    InvalidArgument,
    OutOfRange,
    StatewrightError,
    Unavailable,
    Unknown,
)

# How long a failed step may spend finding out whether its request id was answered before.
REPLAY_BUDGET = 2.0

_TERMINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED"})
_HISTORY_PAGE = 256

_REJECTIONS = {
    "": pb.SIGNAL_REJECTION_UNSPECIFIED,
    "NOT_RUNNING": pb.SIGNAL_REJECTION_NOT_RUNNING,
    "PERSISTING": pb.SIGNAL_REJECTION_PERSISTING,
    "RECOVERY_REQUIRED": pb.SIGNAL_REJECTION_RECOVERY_REQUIRED,
    "SHUTTING_DOWN": pb.SIGNAL_REJECTION_SHUTTING_DOWN,
}

_ADMISSION = {
    None: diagnostics_pb2.ADMISSION_STATE_IDLE,
    AdmissionState.ADMITTING: diagnostics_pb2.ADMISSION_STATE_ADMITTING,
    AdmissionState.EXECUTING: diagnostics_pb2.ADMISSION_STATE_EXECUTING,
    AdmissionState.PERSISTING: diagnostics_pb2.ADMISSION_STATE_PERSISTING,
    AdmissionState.RECOVERY_REQUIRED: diagnostics_pb2.ADMISSION_STATE_RECOVERY_REQUIRED,
}


def _deadline(context: Context) -> float | None:
    remaining = context.time_remaining()
    return remaining if remaining is not None and remaining < 1e9 else None


def _duration(seconds: float) -> duration_pb2.Duration:
    message = duration_pb2.Duration()
    message.FromNanoseconds(int(seconds * 1e9))
    return message


def _wall(seconds: float) -> Timestamp:
    message = Timestamp()
    message.FromNanoseconds(int(seconds * 1e9))
    return message


class WorkflowServicer(pb_grpc.WorkflowServiceServicer):
    def __init__(self, app: Application, door: Door) -> None:
        self._app = app
        self.door = door

    async def _replayed(self, key: RequestKey | None) -> Replayed:
        assert key is not None
        replayed = await self._app.replay(key)
        if replayed is None:
            raise Aborted(
                "the original request with this request_id did not complete; retry",
                reason="REQUEST_IN_DOUBT",
                metadata={"request_id": key.request_id},
            )
        return replayed

    async def _lookup(self, key: RequestKey, context: Context) -> Replayed | None:
        """The stored answer to ``key``, bounded by the caller's deadline.

        Raises InvalidArgument (REQUEST_ID_REUSED) when the id answered other content.
        """
        remaining = _deadline(context)
        budget = REPLAY_BUDGET if remaining is None else min(REPLAY_BUDGET, remaining / 2)
        return await asyncio.wait_for(self._app.replay(key), budget)

    async def _step(
        self, key: RequestKey | None, context: Context, **fields: object
    ) -> Outcome | Replayed:
        """Run a step; a request id already answered gets the stored answer instead.

        There is no lookup before the step: a step that writes carries its request id
        into the same compare-and-swap, which refuses an id already recorded (the answer
        is then replayed). Only a step that writes nothing, or fails, looks the id up,
        since a retry may meet the state its original left behind.
        """
        try:
            result = await self._app.step(_deadline(context), request=key, **fields)
        except StatewrightError as exc:
            # An unknown outcome is the answer as it is: the request record shares its fate.
            if key is None or isinstance(exc, InvalidArgument | Unknown):
                raise
            try:
                replayed = await self._lookup(key, context)
            except InvalidArgument:
                raise
            except (StatewrightError, TimeoutError):
                raise exc from None  # the step's own error is the answer, not the lookup's
            if replayed is not None:
                return replayed
            raise
        if isinstance(result, Replay):
            return await self._replayed(key)
        if key is not None and not result.saved:
            try:
                replayed = await self._lookup(key, context)
            except InvalidArgument:
                raise
            except (StatewrightError, TimeoutError):
                replayed = None  # nothing written: this answer stands on its own
            if replayed is not None:
                return replayed
        return result

    @unary
    async def StartWorkflow(
        self, request: pb.StartWorkflowRequest, context: Context
    ) -> pb.StartWorkflowResponse:
        v.definition_name(request.definition)
        v.non_negative("version", request.version)
        if request.workflow_id:
            v.workflow_id(request.workflow_id)
        v.request_id(request.request_id)
        v.one_of("if_exists", request.if_exists, pb.IfExistsPolicy.values())
        key = request_key("StartWorkflow", request, request.request_id)
        loaded = await self._app.definition(request.definition, request.version or None)
        result = await self._step(
            key,
            context,
            kind="start",
            workflow_id=request.workflow_id or uuid.uuid4().hex,
            loaded=loaded,
            input=struct_to_dict(request.input, "input"),
            return_existing=request.if_exists == pb.IF_EXISTS_POLICY_RETURN_EXISTING,
        )
        return _start_response(result)

    @unary
    async def ResumeWorkflow(
        self, request: pb.ResumeWorkflowRequest, context: Context
    ) -> pb.ResumeWorkflowResponse:
        workflow_id = v.workflow_name(request.name)
        v.event_name(request.event, allow_empty=True)
        v.non_negative("expected_revision", request.expected_revision)
        v.request_id(request.request_id)
        key = request_key("ResumeWorkflow", request, request.request_id)
        result = await self._step(
            key,
            context,
            kind="resume",
            workflow_id=workflow_id,
            event=request.event,
            input=struct_to_dict(request.input, "input"),
            expected_revision=request.expected_revision,
        )
        return pb.ResumeWorkflowResponse(
            workflow=workflow_pb(result.record, result.loaded.definition),
            transitions=transitions_pb(result.transitions),
        )

    @unary
    async def SignalWorkflow(
        self, request: pb.SignalWorkflowRequest, context: Context
    ) -> pb.SignalWorkflowResponse:
        workflow_id = v.workflow_name(request.name)
        v.event_name(request.event)
        v.request_id(request.request_id)
        key = request_key("SignalWorkflow", request, request.request_id)
        result = await self._step(
            key,
            context,
            kind="signal",
            workflow_id=workflow_id,
            event=request.event,
            input=struct_to_dict(request.payload, "payload"),
        )
        accepted = result.accepted if isinstance(result, Outcome) else True
        rejection = result.rejection if isinstance(result, Outcome) else ""
        return pb.SignalWorkflowResponse(
            accepted=accepted,
            reason=_REJECTIONS[rejection],
            workflow=workflow_pb(result.record, result.loaded.definition),
            transitions=transitions_pb(result.transitions),
        )

    @unary
    async def GetWorkflow(
        self, request: pb.GetWorkflowRequest, context: Context
    ) -> pb.GetWorkflowResponse:
        workflow_id = v.workflow_name(request.name)
        record, loaded = await self._app.get(workflow_id)
        return pb.GetWorkflowResponse(workflow=workflow_pb(record, loaded.definition))

    @unary
    async def ListWorkflows(
        self, request: pb.ListWorkflowsRequest, context: Context
    ) -> pb.ListWorkflowsResponse:
        if request.definition:
            v.definition_name(request.definition)
        if request.status not in STATUS_FROM_PB and request.status != 0:
            raise v.invalid("status", f"unknown status {request.status}")
        page, loaded = await self._app.list_workflows(
            definition=request.definition or None,
            status=STATUS_FROM_PB.get(request.status),
            page_size=v.page_size(request.page_size),
            page_token=request.page_token,
        )
        return pb.ListWorkflowsResponse(
            workflows=[
                workflow_pb(record, item.definition)
                for record, item in zip(page.items, loaded, strict=True)
            ],
            next_page_token=page.next_page_token,
        )

    @unary
    async def CancelWorkflow(
        self, request: pb.CancelWorkflowRequest, context: Context
    ) -> pb.CancelWorkflowResponse:
        workflow_id = v.workflow_name(request.name)
        v.reason_text(request.reason)
        v.non_negative("expected_revision", request.expected_revision)
        v.request_id(request.request_id)
        key = request_key("CancelWorkflow", request, request.request_id)
        result = await self._step(
            key,
            context,
            kind="cancel",
            workflow_id=workflow_id,
            reason=request.reason,
            expected_revision=request.expected_revision,
        )
        return pb.CancelWorkflowResponse(
            workflow=workflow_pb(result.record, result.loaded.definition)
        )

    @server_stream
    async def WatchWorkflow(
        self, request: pb.WatchWorkflowRequest, context: Context
    ) -> AsyncIterator[pb.WatchWorkflowResponse]:
        workflow_id = v.workflow_name(request.name)
        after: int | None = None
        if request.HasField("after_revision"):
            after = v.non_negative("after_revision", request.after_revision)
        hub = self._app.watch_hub
        if hub.closed:
            raise _shutting_down()
        # Subscribe before reading anything, so that no step can fall between the read and
        # the subscription: whatever commits later is either in history or in the buffer.
        sub = hub.subscribe(workflow_id)
        try:
            current, loaded = await self._app.get(workflow_id)
            definition = loaded.definition
            if after is None:
                yield pb.WatchWorkflowResponse(
                    type=pb.WATCH_EVENT_TYPE_CURRENT,
                    revision=current.revision,
                    workflow=workflow_pb(current, definition),
                )
                last = current.revision
                if current.status in _TERMINAL:
                    return
            else:
                last = after
                if last > current.revision:
                    # A revision no step has written: no reader of this database can have
                    # seen it, so waiting for it would only hang a confused caller.
                    raise OutOfRange(
                        f"workflow {workflow_id} is at revision {current.revision}; "
                        f"after_revision {after} does not exist yet",
                        reason="REVISION_OUT_OF_RANGE",
                        metadata={
                            "workflow_id": workflow_id,
                            "after_revision": after,
                            "current_revision": current.revision,
                        },
                    )
                if current.status in _TERMINAL and last >= current.revision:
                    return
            catch_up = last < current.revision
            # History rows carry their own context: keep only what record_at needs of the
            # instance, not a context per idle watcher.
            current = dataclasses.replace(current, context={}, error=None)
            while True:
                if catch_up:
                    rows = await self._app.history_after(workflow_id, last, _HISTORY_PAGE)
                    for row in rows:
                        yield pb.WatchWorkflowResponse(
                            type=pb.WATCH_EVENT_TYPE_STEP,
                            revision=row.revision,
                            transitions=transitions_pb(transitions_from_dicts(row.transitions)),
                            workflow=workflow_pb(record_at(row, current), definition),
                            event=row.event or "",
                        )
                        last = row.revision
                        if row.status in _TERMINAL:
                            return
                    if len(rows) == _HISTORY_PAGE:
                        continue
                if sub.closed:
                    raise _shutting_down()
                await sub.wait(hub.recheck_after)
                events, catch_up = sub.take()
                for event in events:
                    revision = event.record.revision
                    if revision <= last:
                        continue  # already sent from history
                    if revision != last + 1:
                        catch_up = True  # a gap: history has what is missing
                        break
                    yield _step_message(event)
                    last = revision
                    if event.record.status in _TERMINAL:
                        return
        finally:
            hub.unsubscribe(sub)

    @unary
    async def GetDiagnostics(
        self, request: pb.GetDiagnosticsRequest, context: Context
    ) -> pb.GetDiagnosticsResponse:
        d = await self._app.diagnostics()
        loop, counts, writer = d.loop, d.counts, d.writer
        phase = diagnostics_pb2.EventLoopPhase.Value(f"EVENT_LOOP_PHASE_{loop.phase.value}")
        return pb.GetDiagnosticsResponse(
            event_loop=diagnostics_pb2.EventLoopDiagnostics(
                phase=phase,
                queue_depth=loop.queue_depth,
                max_queue_depth=loop.max_queue_depth,
                lag_last=_duration(loop.lag_last),
                lag_average=_duration(loop.lag_average),
                lag_max=_duration(loop.lag_max),
                dispatch_count=loop.dispatch_count,
                slow_dispatch_count=loop.slow_dispatch_count,
                slow_dispatch_threshold=_duration(loop.slow_dispatch_threshold),
            ),
            admissions=diagnostics_pb2.AdmissionDiagnostics(
                admitting=counts.admissions.get(AdmissionState.ADMITTING, 0),
                executing=counts.admissions.get(AdmissionState.EXECUTING, 0),
                persisting=counts.admissions.get(AdmissionState.PERSISTING, 0),
                recovery_required=counts.admissions.get(AdmissionState.RECOVERY_REQUIRED, 0),
                cached_sessions=counts.cached_sessions,
            ),
            persistence=diagnostics_pb2.PersistenceDiagnostics(
                backend=d.backend,
                queue_depth=writer.queue_depth,
                queue_capacity=d.writer_capacity,
                batches=writer.batches,
                mean_batch_size=writer.mean_batch_size,
                save_latency_p50=_duration(writer.latency_p50_ms / 1000),
                save_latency_p99=_duration(writer.latency_p99_ms / 1000),
                conflicts=writer.conflicts,
                unknown_outcomes=writer.unknown_outcomes,
                saves=writer.saves,
            ),
            watchers=diagnostics_pb2.WatcherDiagnostics(
                active_watchers=self._app.watch_hub.active(),
                catch_ups=self._app.watch_hub.catch_ups,
            ),
            definitions=d.definitions,
            build=diagnostics_pb2.BuildInfo(
                version=__version__,
                python_version=sys.version.split()[0],
                grpc_version=grpc.__version__,
            ),
            uptime=_duration(d.uptime),
        )

    @unary
    async def GetWorkflowDiagnostics(
        self, request: pb.GetWorkflowDiagnosticsRequest, context: Context
    ) -> pb.GetWorkflowDiagnosticsResponse:
        workflow_id = v.workflow_name(request.name)
        info = await self._app.workflow_info(workflow_id)
        revision = info.revision
        if not info.cached and info.admission is None:
            record, _ = await self._app.get(workflow_id)  # NOT_FOUND for unknown ids
            revision = record.revision
        diagnostics = diagnostics_pb2.WorkflowDiagnostics(
            name=request.name,
            admission_state=_ADMISSION[info.admission],
            cached=info.cached,
            revision=revision,
            recent_transitions=transitions_pb(info.recent),
        )
        if info.recovery is not None:
            recovery = info.recovery
            error = recovery.last_error
            diagnostics.recovery.CopyFrom(
                diagnostics_pb2.RecoveryInfo(
                    attempts=recovery.attempts,
                    next_attempt_time=_wall(recovery.next_attempt),
                    since_time=_wall(recovery.since),
                    last_error=to_status_proto(error)
                    if isinstance(error, StatewrightError)
                    else None,
                )
            )
        return pb.GetWorkflowDiagnosticsResponse(diagnostics=diagnostics)

    @unary
    async def ListDefinitions(
        self, request: pb.ListDefinitionsRequest, context: Context
    ) -> pb.ListDefinitionsResponse:
        if request.definition:
            v.definition_name(request.definition)
        size = v.page_size(request.page_size)
        items = [
            item
            for item in await self._app.definitions()
            if not request.definition or item.definition.name == request.definition
        ]
        offset = _offset_token(request.page_token, len(items))
        page = items[offset : offset + size]
        next_offset = offset + len(page)
        return pb.ListDefinitionsResponse(
            definitions=[definition_pb(item) for item in page],
            next_page_token=f"o{next_offset}" if next_offset < len(items) else "",
        )

    @unary
    async def GetDefinition(
        self, request: pb.GetDefinitionRequest, context: Context
    ) -> pb.GetDefinitionResponse:
        name, version = v.definition_resource(request.name)
        loaded = await self._app.definition(name, version)
        return pb.GetDefinitionResponse(definition=definition_pb(loaded))


def _offset_token(token: str, limit: int) -> int:
    # Definitions are few and immutable, ordered by (name, version): an offset is stable.
    if not token:
        return 0
    if not token.startswith("o") or not token[1:].isdigit() or int(token[1:]) > limit:
        raise v.bad_page_token()
    return int(token[1:])


def _shutting_down() -> Unavailable:
    return Unavailable(
        "the server is shutting down; reconnect with after_revision set to the last "
        "revision received",
        reason="SHUTTING_DOWN",
    )


def _step_message(event: StepEvent) -> pb.WatchWorkflowResponse:
    if event.message is None:
        event.message = pb.WatchWorkflowResponse(
            type=pb.WATCH_EVENT_TYPE_STEP,
            revision=event.record.revision,
            transitions=transitions_pb(event.transitions),
            workflow=workflow_pb(event.record, event.loaded.definition),
            event=event.event or "",
        )
    message: pb.WatchWorkflowResponse = event.message
    return message


def _start_response(result: Outcome | Replayed) -> pb.StartWorkflowResponse:
    created = result.created if isinstance(result, Outcome) else True
    return pb.StartWorkflowResponse(
        workflow=workflow_pb(result.record, result.loaded.definition),
        transitions=transitions_pb(result.transitions),
        created=created,
    )
