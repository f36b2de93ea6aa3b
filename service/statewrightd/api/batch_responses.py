"""BatchService answers: a stored batch as a BatchOperation, its failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from statewright.v1 import batch_service_pb2 as pb

from statewrightd.api.convert import dict_to_struct, timestamp
from statewrightd.app.batches import CANCELLED, COMPLETED, RUNNING
from statewrightd.store.records import BatchItemFailure, BatchRecord

STATE_PB: Final[dict[str, pb.BatchState.ValueType]] = {
    RUNNING: pb.BATCH_STATE_RUNNING,
    COMPLETED: pb.BATCH_STATE_COMPLETED,
    CANCELLED: pb.BATCH_STATE_CANCELLED,
}


def operation_into(
    message: pb.BatchOperation | pb.StartBatchOperationRequest, operation: Mapping[str, Any]
) -> None:
    """Set ``message``'s operation oneof from the plain data a batch stores."""
    kind = str(operation["kind"])
    getattr(message, kind).SetInParent()
    if kind == "signal":
        message.signal.event = str(operation.get("event", ""))
        message.signal.payload.CopyFrom(dict_to_struct(operation.get("payload") or {}))
    elif kind == "reset":
        message.reset.entered_state = str(operation.get("entered_state", ""))
    elif kind == "migrate":
        message.migrate.to_version = int(operation.get("to_version", 0))
        message.migrate.state_map.update(operation.get("state_map") or {})
        message.migrate.set.update(operation.get("set") or {})
    elif kind == "delete":
        message.delete.force = bool(operation.get("force"))


def cancel_reason(document: Mapping[str, Any]) -> str:
    """Who cancelled a batch, and why: ``{actor}: {reason}`` (empty: not cancelled)."""
    reason = document.get("cancel_reason")
    if reason is None:
        return ""
    return f"{document.get('cancelled_by') or 'anonymous'}: {reason}"


def batch_pb(record: BatchRecord) -> pb.BatchOperation:
    doc = record.document
    saved = record.state in STATE_PB
    out = pb.BatchOperation(
        name=f"batches/{record.batch_id}" if saved else "",
        definition=str(doc.get("definition") or ""),
        filter=str(doc.get("filter") or ""),
        id_prefix=str(doc.get("id_prefix") or ""),
        reason=str(doc.get("reason") or ""),
        rate=float(doc.get("rate") or 0.0),
        state=STATE_PB.get(record.state, pb.BATCH_STATE_UNSPECIFIED),
        matched=record.matched,
        done=record.done,
        failed=record.failed,
        actor=str(doc.get("actor") or ""),
        cancel_reason=cancel_reason(doc),
    )
    operation_into(out, doc["operation"])
    if saved:
        out.create_time.CopyFrom(timestamp(record.create_time))
        out.update_time.CopyFrom(timestamp(record.update_time))
    if record.end_time is not None:
        out.end_time.CopyFrom(timestamp(record.end_time))
    return out


def failure_pb(failure: BatchItemFailure) -> pb.BatchItemFailure:
    out = pb.BatchItemFailure(
        workflow=f"workflows/{failure.workflow_id}",
        code=failure.code,
        reason=failure.reason,
        message=failure.message,
    )
    out.time.CopyFrom(timestamp(failure.time))
    return out


def start_response(record: BatchRecord, sample: list[str]) -> pb.StartBatchOperationResponse:
    return pb.StartBatchOperationResponse(
        batch=batch_pb(record), sample=[f"workflows/{w}" for w in sample]
    )
