"""Requests turned into the engine's commands, every field validated on the way.

A bad field raises ``InvalidArgument`` naming it, before anything touches workflow state.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from google.protobuf.message import Message
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.api import validation as v
from statewrightd.api.convert import DEFAULT_LIMITS, ValueLimits, struct_to_dict
from statewrightd.app.migrate import MigrationAsked
from statewrightd.config import Limits
from statewrightd.context import current_actor
from statewrightd.definitions.registry import Loaded
from statewrightd.domain import Status
from statewrightd.engine.commands import (
    CancelCommand,
    PauseCommand,
    RequestKey,
    ResetCommand,
    ResumeCommand,
    RetryCommand,
    SignalCommand,
    SignalWithStartCommand,
    StartCommand,
    UnpauseCommand,
)
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason

STATUS_FROM_PB: dict[int, Status] = {
    workflow_pb2.WORKFLOW_STATUS_RUNNING: Status.RUNNING,
    workflow_pb2.WORKFLOW_STATUS_WAITING: Status.WAITING,
    workflow_pb2.WORKFLOW_STATUS_COMPLETED: Status.COMPLETED,
    workflow_pb2.WORKFLOW_STATUS_FAILED: Status.FAILED,
    workflow_pb2.WORKFLOW_STATUS_CANCELLED: Status.CANCELLED,
}


def value_limits(limits: Limits) -> ValueLimits:
    """The server's configured limits on what a request's maps of values may hold."""
    return ValueLimits(
        nesting=limits.nesting,
        string_bytes=limits.string_bytes,
        list_items=limits.list_items,
        map_keys=limits.map_keys,
        total_bytes=limits.context_bytes,
    )


# A worker's trace context on CompleteTask / FailTask, left out of the request's digest.
_TRACE_FIELDS = ("traceparent", "tracestate")


def _copy(request: Message) -> Message:
    copied = type(request)()
    copied.CopyFrom(request)
    return copied


def request_key(method: str, request: Message, request_id: str) -> RequestKey | None:
    """The idempotency key of a request: its id, and a digest of everything it asks."""
    if not request_id:
        return None
    digest = hashlib.sha256(method.encode())
    traced = [f for f in _TRACE_FIELDS if f in request.DESCRIPTOR.fields_by_name]
    if traced and any(getattr(request, f) for f in traced):
        # Where a call came from is not what it asks: a retry sent from another span
        # (a worker's retry after a restart) is the same request.
        request = _copy(request)
        for name in traced:
            request.ClearField(name)
    digest.update(request.SerializeToString(deterministic=True))
    return RequestKey(request_id, method, digest.hexdigest())


# Names the ids of starts that name no instance but carry a request id.
_DERIVED_IDS = uuid.UUID("5f0b7a52-2c1e-4d59-9a57-6d7cf1a3e0b4")


def new_workflow_id(request_id: str) -> str:
    """The id of a started instance that its request does not name: derived from the
    request id when there is one, so that a retry of the start names the same instance
    (request ids are unique per instance), else a fresh one."""
    if request_id:
        return uuid.uuid5(_DERIVED_IDS, request_id).hex
    return uuid.uuid4().hex


def start_target(request: pb.StartWorkflowRequest) -> tuple[str, int | None]:
    """Validates a start; returns the definition name and version (None: the latest)."""
    v.definition_name(request.definition)
    v.non_negative("version", request.version)
    if request.workflow_id:
        v.workflow_id(request.workflow_id)
    v.request_id(request.request_id)
    v.one_of("if_exists", request.if_exists, pb.IfExistsPolicy.values())
    if request.HasField("start_delay"):
        v.delay("start_delay", request.start_delay)
    return request.definition, request.version or None


def recursion_limit(requested: int, loaded: Loaded) -> int | None:
    """A start's own recursion limit: None (the definition's) for zero; refused below zero
    or above the definition's, which the loader already bounds by the server's maximum,
    so that a start can only lower the bound its definition's author chose."""
    maximum = loaded.definition.recursion_limit
    meta = {"field": "recursion_limit", "requested": requested, "maximum": maximum}
    if requested < 0:
        raise InvalidArgument(
            f"recursion_limit must not be negative; got {requested}",
            reason=Reason.INVALID_RECURSION_LIMIT,
            metadata=meta,
        )
    if requested > maximum:
        raise InvalidArgument(
            f"recursion_limit {requested} is above the recursion_limit of "
            f"{loaded.definition.name} v{loaded.definition.version} ({maximum}): "
            "a start can only lower it",
            reason=Reason.RECURSION_LIMIT_TOO_HIGH,
            metadata=meta,
        )
    return requested or None


def start_command(
    request: pb.StartWorkflowRequest, loaded: Loaded, limits: ValueLimits = DEFAULT_LIMITS
) -> StartCommand:
    """A start that ``start_target`` validated, of the definition version it named."""
    return StartCommand(
        actor=current_actor(),
        workflow_id=request.workflow_id or new_workflow_id(request.request_id),
        request=request_key("StartWorkflow", request, request.request_id),
        loaded=loaded,
        input=struct_to_dict(request.input, "input", limits),
        return_existing=request.if_exists == pb.IF_EXISTS_POLICY_RETURN_EXISTING,
        restart=request.if_exists == pb.IF_EXISTS_POLICY_RESTART,
        version=request.version or None,
        delay=request.start_delay.ToTimedelta() if request.HasField("start_delay") else None,
        recursion_limit=recursion_limit(request.recursion_limit, loaded),
    )


def signal_with_start_target(
    request: pb.SignalWithStartWorkflowRequest,
) -> tuple[str, int | None]:
    """Validates a signal-with-start; returns the definition name and version (None: the
    latest) of the instance it would start."""
    v.definition_name(request.definition)
    v.non_negative("version", request.version)
    v.required("workflow_id", request.workflow_id)
    v.workflow_id(request.workflow_id)
    v.event_name(request.event)
    v.request_id(request.request_id)
    v.one_of("if_finished", request.if_finished, pb.IfFinishedPolicy.values())
    return request.definition, request.version or None


def signal_with_start_command(
    request: pb.SignalWithStartWorkflowRequest,
    loaded: Loaded,
    limits: ValueLimits = DEFAULT_LIMITS,
) -> SignalWithStartCommand:
    """A signal-with-start that ``signal_with_start_target`` validated."""
    return SignalWithStartCommand(
        actor=current_actor(),
        workflow_id=request.workflow_id,
        request=request_key("SignalWithStartWorkflow", request, request.request_id),
        loaded=loaded,
        input=struct_to_dict(request.input, "input", limits),
        event=request.event,
        payload=struct_to_dict(request.payload, "payload", limits),
        start_now=request.start_now,
        recursion_limit=recursion_limit(request.recursion_limit, loaded),
    )


def _asked(
    workflow_id: str,
    method: str,
    request: pb.ResumeWorkflowRequest
    | pb.SignalWorkflowRequest
    | pb.CancelWorkflowRequest
    | pb.RetryWorkflowRequest
    | pb.ResetWorkflowRequest
    | pb.MigrateWorkflowRequest
    | pb.PauseWorkflowRequest
    | pb.UnpauseWorkflowRequest,
) -> dict[str, Any]:
    """What every step a caller asks of an instance carries: who asks, the instance, and
    the request's idempotency key (its request id validated here)."""
    v.request_id(request.request_id)
    return {
        "actor": current_actor(),
        "workflow_id": workflow_id,
        "request": request_key(method, request, request.request_id),
    }


def resume_command(
    request: pb.ResumeWorkflowRequest, limits: ValueLimits = DEFAULT_LIMITS
) -> ResumeCommand:
    workflow_id = v.workflow_name(request.name)
    v.event_name(request.event, allow_empty=True)
    v.non_negative("expected_revision", request.expected_revision)
    return ResumeCommand(
        **_asked(workflow_id, "ResumeWorkflow", request),
        event=request.event,
        input=struct_to_dict(request.input, "input", limits),
        expected_revision=request.expected_revision,
    )


def signal_command(
    request: pb.SignalWorkflowRequest, limits: ValueLimits = DEFAULT_LIMITS
) -> SignalCommand:
    workflow_id = v.workflow_name(request.name)
    v.event_name(request.event)
    return SignalCommand(
        **_asked(workflow_id, "SignalWorkflow", request),
        event=request.event,
        payload=struct_to_dict(request.payload, "payload", limits),
    )


def cancel_command(request: pb.CancelWorkflowRequest) -> CancelCommand:
    workflow_id = _operator_target(request)
    return CancelCommand(
        **_asked(workflow_id, "CancelWorkflow", request),
        reason=request.reason,
        expected_revision=request.expected_revision,
    )


def retry_command(request: pb.RetryWorkflowRequest) -> RetryCommand:
    return RetryCommand(**_operator_step("RetryWorkflow", request))


def reset_command(request: pb.ResetWorkflowRequest) -> ResetCommand:
    """A reset as asked: the state and context of its revision are read from history
    before it runs."""
    workflow_id = _operator_target(request)
    if request.to_revision < 1:
        raise v.invalid(
            "to_revision",
            f"to_revision must name a saved revision (1 or more); got {request.to_revision}",
            value=request.to_revision,
        )
    asked = _asked(workflow_id, "ResetWorkflow", request)
    return ResetCommand(
        **_repair(asked, request.dry_run),
        to_revision=request.to_revision,
        reason=request.reason,
        expected_revision=request.expected_revision,
    )


# How many entries a migration's state_map or set may hold, and how long each may be.
MAX_MIGRATION_ENTRIES = 200
MAX_MIGRATION_TEXT = 4096


def migration_asked(request: pb.MigrateWorkflowRequest) -> MigrationAsked:
    """A migration as asked; the planner checks its states and fields against both
    versions when it runs (every problem at once)."""
    workflow_id = _operator_target(request)
    if request.to_version < 1:
        raise v.invalid(
            "to_version",
            f"to_version must name a version of the definition (1 or more); got "
            f"{request.to_version}",
            value=request.to_version,
        )
    for field, entries in (("state_map", request.state_map), ("set", request.set)):
        if len(entries) > MAX_MIGRATION_ENTRIES:
            raise v.invalid(
                field, f"{field} holds {len(entries)} entries, over {MAX_MIGRATION_ENTRIES}"
            )
        for key, value in entries.items():
            v.required(f"{field}[{key}]", value)
            v.at_most(f"{field}[{key}]", value, MAX_MIGRATION_TEXT)
            v.at_most(field, key, MAX_MIGRATION_TEXT)
    asked = _repair(_asked(workflow_id, "MigrateWorkflow", request), request.dry_run)
    return MigrationAsked(
        workflow_id=workflow_id,
        to_version=request.to_version,
        state_map=dict(request.state_map),
        sets=dict(request.set),
        reason=request.reason,
        expected_revision=request.expected_revision,
        request=asked["request"],
        actor=asked["actor"],
    )


def pause_command(request: pb.PauseWorkflowRequest) -> PauseCommand:
    return PauseCommand(**_operator_step("PauseWorkflow", request))


def unpause_command(request: pb.UnpauseWorkflowRequest) -> UnpauseCommand:
    return UnpauseCommand(**_operator_step("UnpauseWorkflow", request))


def _operator_step(
    method: str,
    request: pb.RetryWorkflowRequest | pb.PauseWorkflowRequest | pb.UnpauseWorkflowRequest,
) -> dict[str, Any]:
    """What a retry, a pause and an unpause are asked with: the instance, a reason, the
    revision the caller saw, and (unless a dry run) the request's idempotency key."""
    workflow_id = _operator_target(request)
    asked = _asked(workflow_id, method, request)
    return {
        **_repair(asked, request.dry_run),
        "reason": request.reason,
        "expected_revision": request.expected_revision,
    }


def _operator_target(
    request: pb.CancelWorkflowRequest
    | pb.RetryWorkflowRequest
    | pb.ResetWorkflowRequest
    | pb.MigrateWorkflowRequest
    | pb.PauseWorkflowRequest
    | pb.UnpauseWorkflowRequest,
) -> str:
    """The instance a cancel or an operator's step names, its reason and the revision the
    caller saw checked."""
    workflow_id = v.workflow_name(request.name)
    v.reason_text(request.reason)
    v.non_negative("expected_revision", request.expected_revision)
    return workflow_id


def _repair(asked: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """A dry run saves nothing, so its request id is no idempotency key."""
    return {**asked, "request": None} if dry_run else asked


def status_filter(status: int) -> Status | None:
    """A list filter's status (0: any); an unknown value is refused."""
    if status == 0:
        return None
    if status not in STATUS_FROM_PB:
        raise v.invalid("status", f"unknown status {status}")
    return STATUS_FROM_PB[status]


def watch_start(request: pb.WatchWorkflowRequest) -> tuple[str, int | None]:
    """The workflow a watch follows, and the revision it starts after (None: now)."""
    workflow_id = v.workflow_name(request.name)
    if not request.HasField("after_revision"):
        return workflow_id, None
    return workflow_id, v.non_negative("after_revision", request.after_revision)


def delete_target(request: pb.DeleteWorkflowRequest) -> tuple[str, int]:
    """The instance a delete names, and the revision it must be at (0: any), from its
    ``expected_revision`` and its ``etag`` (the Workflow.etag the caller saw)."""
    workflow_id = v.workflow_name(request.name)
    expected = v.non_negative("expected_revision", request.expected_revision)
    if not request.etag:
        return workflow_id, expected
    tagged = etag_revision(request.etag, workflow_id)
    if expected and tagged != expected:
        raise v.invalid(
            "etag",
            f"etag names revision {tagged} and expected_revision {expected}: give one, or "
            "both for the same revision",
        )
    return workflow_id, tagged


def etag_revision(etag: str, workflow_id: str) -> int:
    """The revision a Workflow.etag of ``workflow_id`` stands for (etags are opaque to
    callers, but the server reads its own): ``"{workflow_id}/{revision}"``."""
    body = etag[1:-1] if len(etag) >= 2 and etag[0] == etag[-1] == '"' else ""
    tagged_id, _, revision = body.rpartition("/")
    if (
        tagged_id != workflow_id
        or not (revision.isascii() and revision.isdigit())
        or int(revision) < 1
    ):
        raise v.invalid("etag", "etag is not one this server gave for this workflow")
    return int(revision)
