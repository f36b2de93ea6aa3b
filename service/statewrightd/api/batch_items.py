"""One item of a batch: its operation applied to one instance, as the single RPC does it.

The item's request is the single RPC's (api/batch_requests.py), handed to that RPC's
handler of the WorkflowService servicer, as the HTTP door hands it its requests: the same
request builder and the same use case, with the request id ``batch-<batch_id>``. The
handler runs in the runner's task, which carries the batch's actor and view.

How it ended is told by the error's gRPC code, through the one map from errors to codes
(api/status.py): a refusal of the moment (storage down, the server busy, out of time, a
conflict) leaves the item pending, to be tried again; any other ends it failed, with the
code's name, the ErrorInfo reason and the message. A signal is answered rather than
refused (``accepted`` false, with a rejection): a rejection of the moment (another step
being saved, a recovery pending, the replica draining) leaves the item pending too, and
one that the instance's own status explains (not running, paused) ends it failed, as the
error of the same name would.
"""

from __future__ import annotations

import logging
import time
from typing import Final

import grpc
from statewright.v1 import workflow_service_pb2 as wpb

from statewrightd import errors
from statewrightd.api.batch_requests import item_request
from statewrightd.api.handlers import undecorated
from statewrightd.api.status import grpc_code
from statewrightd.app.batch_reset import reset_revision
from statewrightd.app.batch_runner import ITEM_BUDGET
from statewrightd.app.batches import request_id
from statewrightd.app.reads import Reads
from statewrightd.store.records import BatchItemEnd, BatchRecord

_log = logging.getLogger(__name__)

# The codes of refusals that say nothing of the instance: its item is tried again later.
TRANSIENT: Final = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.UNKNOWN,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
    }
)


# The signal rejections an instance gives only for the moment: its item is tried again.
RETRIED_REJECTIONS: Final = frozenset(
    {
        wpb.SignalRejection.SIGNAL_REJECTION_PERSISTING,
        wpb.SignalRejection.SIGNAL_REJECTION_RECOVERY_REQUIRED,
        wpb.SignalRejection.SIGNAL_REJECTION_SHUTTING_DOWN,
    }
)


class _Retry(Exception):
    """The item is to be tried again (a signal rejected for the moment)."""


class _ItemCall:
    """The call context a handler reads: the item's time."""

    def __init__(self, budget: float) -> None:
        self._deadline = time.monotonic() + budget

    def time_remaining(self) -> float | None:
        return max(0.0, self._deadline - time.monotonic())


def item_end(workflow_id: str, error: errors.StatewrightError | None) -> BatchItemEnd | None:
    """How an item ended: done (no error), failed, or None when it is to be tried again."""
    if error is None:
        return BatchItemEnd(workflow_id)
    code = grpc_code(error)
    if code in TRANSIENT:
        return None
    return BatchItemEnd(
        workflow_id, failed=True, code=code.name, reason=str(error.reason), message=error.message
    )


class BatchItems:
    """What the batch runner applies each item with (app/batch_runner.Apply)."""

    def __init__(self, workflows: object, reads: Reads) -> None:
        """``workflows``: the WorkflowService servicer whose handlers apply the items."""
        self._servicer = workflows
        self._reads = reads

    async def __call__(self, batch: BatchRecord, workflow_id: str) -> BatchItemEnd | None:
        try:
            await self._apply(batch, workflow_id)
        except _Retry:
            return None
        except errors.StatewrightError as exc:
            return item_end(workflow_id, exc)
        except Exception as exc:
            _log.exception("batch %s: item %s failed", batch.batch_id, workflow_id)
            return item_end(workflow_id, errors.Internal.wrapping(exc))
        return item_end(workflow_id, None)

    async def _apply(self, batch: BatchRecord, workflow_id: str) -> None:
        doc = batch.document
        operation = doc["operation"]
        to_revision = 0
        if operation["kind"] == "reset":
            # The revision is found in history, which the reset changes: one applied before
            # (this item tried again) is answered, not looked for again.
            if await self._reads.answered(workflow_id, request_id(batch.batch_id)):
                return
            entered = str(operation.get("entered_state") or "")
            to_revision = await reset_revision(self._reads, workflow_id, entered)
        method, request = item_request(
            operation, workflow_id, str(doc.get("reason") or ""), batch.batch_id, to_revision
        )
        answer = await undecorated(self._servicer, method)(request, _ItemCall(ITEM_BUDGET))
        if isinstance(answer, wpb.SignalWorkflowResponse) and not answer.accepted:
            _signal_rejected(workflow_id, answer.reason)


def _signal_rejected(workflow_id: str, rejection: wpb.SignalRejection.ValueType) -> None:
    if rejection in RETRIED_REJECTIONS:
        raise _Retry
    name = wpb.SignalRejection.Name(rejection).removeprefix("SIGNAL_REJECTION_")
    raise errors.FailedPrecondition(
        f"workflow {workflow_id} did not accept the signal: {name}",
        reason=name,
        metadata={"workflow_id": workflow_id},
    )
