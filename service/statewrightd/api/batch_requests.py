"""BatchService requests: a batch as asked, and the single RPC's request for each item.

A batch's operation is checked when it starts by the single RPC's own request builder
(api/requests.py), on a request for a stand-in instance: a batch is refused exactly as
its every item would be (a reason too long, an event that is no event name, a migration
with too many entries), before it matches anything.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from google.protobuf.message import Message
from statewright.v1 import batch_service_pb2 as pb
from statewright.v1 import workflow_service_pb2 as wpb

from statewrightd.api import requests
from statewrightd.api import validation as v
from statewrightd.api.convert import ValueLimits, dict_to_struct, struct_to_dict
from statewrightd.app.batches import (
    BATCH_ID,
    COMPLETED,
    OPERATIONS,
    RUNNING,
    SINGLE_RPC,
    BatchAsked,
    batch_rate,
    request_id,
)
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason

STATE_FROM_PB: Final[dict[int, str | None]] = {
    pb.BATCH_STATE_UNSPECIFIED: None,
    pb.BATCH_STATE_RUNNING: RUNNING,
    pb.BATCH_STATE_COMPLETED: COMPLETED,
    pb.BATCH_STATE_CANCELLED: "CANCELLED",
}
MAX_STATE_NAME: Final = 128
# The instance a batch's operation is checked on when it starts: only its requests'
# shape is checked, no instance is read.
_STAND_IN: Final = "batch-check"


def batch_id_of(name: str, field: str = "name") -> str:
    """``batches/{batch_id}``'s id."""
    v.required(field, name)
    v.at_most(field, name, len("batches/") + 128)
    batch_id = name.removeprefix("batches/")
    if not name.startswith("batches/") or not BATCH_ID.match(batch_id):
        raise v.invalid(
            field,
            f"{field} must be 'batches/{{batch_id}}' where the id is 1 to 128 letters, "
            f"digits, '-', '_' or '.'; got {name!r}",
            value=name,
        )
    return batch_id


def operation_of(request: pb.StartBatchOperationRequest, limits: ValueLimits) -> dict[str, Any]:
    """The request's operation as plain data: its kind, and its arguments beside it."""
    kind = request.WhichOneof("operation")
    if kind is None:
        raise InvalidArgument(
            f"an operation is required: one of {', '.join(OPERATIONS)}",
            reason=Reason.FIELD_REQUIRED,
            metadata={"field": "operation"},
        )
    if kind == "signal":
        payload = struct_to_dict(request.signal.payload, "signal.payload", limits)
        return {"kind": kind, "event": request.signal.event, "payload": payload}
    if kind == "reset":
        state = v.at_most("reset.entered_state", request.reset.entered_state, MAX_STATE_NAME)
        return {"kind": kind, "entered_state": state}
    if kind == "migrate":
        migrate = request.migrate
        return {
            "kind": kind,
            "to_version": migrate.to_version,
            "state_map": dict(migrate.state_map),
            "set": dict(migrate.set),
        }
    if kind == "delete":
        return {"kind": kind, "force": request.delete.force}
    return {"kind": kind}


def item_request(
    operation: Mapping[str, Any], workflow_id: str, reason: str, batch_id: str, to_revision: int = 0
) -> tuple[str, Message]:
    """The single RPC (its method's name, and its request) a batch applies to one
    instance; a reset's revision is found before (app/batch_reset.py)."""
    kind = str(operation["kind"])
    method = SINGLE_RPC[kind]
    name, key = f"workflows/{workflow_id}", request_id(batch_id)
    if kind == "delete":
        # An instance already gone counts as deleted: the batch's item is done.
        return method, wpb.DeleteWorkflowRequest(
            name=name, force=bool(operation.get("force")), allow_missing=True
        )
    if kind == "signal":
        payload = dict_to_struct(operation.get("payload") or {})
        event = str(operation["event"])
        return method, wpb.SignalWorkflowRequest(
            name=name, event=event, payload=payload, request_id=key
        )
    if kind == "reset":
        return method, wpb.ResetWorkflowRequest(
            name=name, to_revision=to_revision, reason=reason, request_id=key
        )
    if kind == "migrate":
        return method, wpb.MigrateWorkflowRequest(
            name=name,
            to_version=int(operation["to_version"]),
            state_map=dict(operation.get("state_map") or {}),
            set=dict(operation.get("set") or {}),
            reason=reason,
            request_id=key,
        )
    single: Callable[..., Message] = {
        "cancel": wpb.CancelWorkflowRequest,
        "retry": wpb.RetryWorkflowRequest,
        "pause": wpb.PauseWorkflowRequest,
        "unpause": wpb.UnpauseWorkflowRequest,
    }[kind]
    return method, single(name=name, reason=reason, request_id=key)


def _checks(limits: ValueLimits) -> dict[str, Callable[[Any], object]]:
    """Each single RPC's request builder, as its servicer calls it."""
    return {
        "CancelWorkflow": requests.cancel_command,
        "SignalWorkflow": lambda r: requests.signal_command(r, limits),
        "ResetWorkflow": requests.reset_command,
        "RetryWorkflow": requests.retry_command,
        "MigrateWorkflow": requests.migration_asked,
        "PauseWorkflow": requests.pause_command,
        "UnpauseWorkflow": requests.unpause_command,
        "DeleteWorkflow": requests.delete_target,
    }


def batch_asked(request: pb.StartBatchOperationRequest, limits: ValueLimits) -> BatchAsked:
    """A start, every field checked."""
    if request.batch_id and not BATCH_ID.match(request.batch_id):
        raise v.invalid(
            "batch_id",
            "batch_id must be 1 to 128 letters, digits, '-', '_' or '.'; got "
            f"{request.batch_id[:200]!r}",
        )
    if request.definition:
        v.definition_name(request.definition)
    v.list_filter(request.filter)
    v.id_prefix(request.id_prefix)
    v.required("reason", request.reason)
    v.reason_text(request.reason)
    rate = batch_rate(request.rate)
    operation = operation_of(request, limits)
    if operation["kind"] == "migrate" and not request.definition:
        raise InvalidArgument(
            "definition is required for a migrate: to_version is a version of one definition",
            reason=Reason.FIELD_REQUIRED,
            metadata={"field": "definition"},
        )
    method, single = item_request(operation, _STAND_IN, request.reason, request.batch_id, 1)
    _checks(limits)[method](single)
    return BatchAsked(
        batch_id=request.batch_id,
        definition=request.definition,
        filter=request.filter,
        id_prefix=request.id_prefix,
        operation=operation,
        reason=request.reason,
        rate=rate,
        dry_run=request.dry_run,
    )


def list_after(token: str) -> tuple[datetime, str] | None:
    """Where a page of ListBatchOperations starts: after (create time, id)."""
    if not token:
        return None
    try:
        text = base64.urlsafe_b64decode(token.encode("ascii") + b"==").decode()
        created, batch_id = json.loads(text)
        after = datetime.fromisoformat(created)
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        raise v.bad_page_token() from None
    if after.tzinfo is None or not isinstance(batch_id, str) or not BATCH_ID.match(batch_id):
        raise v.bad_page_token()
    return after, batch_id


def list_token(after: tuple[datetime, str] | None) -> str:
    if after is None:
        return ""
    text = json.dumps([after[0].isoformat(), after[1]], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode("ascii").rstrip("=")


def failures_after(token: str) -> str:
    """Where a page of a batch's failures starts: after this workflow id."""
    if token and not v.WORKFLOW_ID.match(token):
        raise v.bad_page_token("failures_page_token")
    return token


def state_of(state: int) -> str | None:
    """A list's state filter (None: any); an unknown value is refused."""
    if state not in STATE_FROM_PB:
        raise v.invalid("state", f"unknown state {state}", value=state)
    return STATE_FROM_PB[state]
