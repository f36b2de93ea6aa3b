"""The BatchService servicer: batch operations as resources (``batches/{batch_id}``),
converted to and from the batch use cases (app/batches.py)."""

from __future__ import annotations

from statewright.v1 import batch_service_pb2 as pb
from statewright.v1 import batch_service_pb2_grpc as pb_grpc

from statewrightd.api import batch_requests as requests
from statewrightd.api import validation as v
from statewrightd.api.batch_responses import batch_pb, failure_pb, start_response
from statewrightd.api.door import Door
from statewrightd.api.handlers import Context, unary
from statewrightd.api.requests import value_limits
from statewrightd.app.wiring import Application


class BatchServicer(pb_grpc.BatchServiceServicer):
    def __init__(self, app: Application, door: Door) -> None:
        self._app = app
        self.door = door
        self._limits = value_limits(app.config.limits)

    @unary
    async def StartBatchOperation(
        self, request: pb.StartBatchOperationRequest, context: Context
    ) -> pb.StartBatchOperationResponse:
        asked = requests.batch_asked(request, self._limits)
        started = await self._app.batches.start(asked)
        return start_response(started.batch, started.sample)

    @unary
    async def GetBatchOperation(
        self, request: pb.GetBatchOperationRequest, context: Context
    ) -> pb.GetBatchOperationResponse:
        batch_id = requests.batch_id_of(request.name)
        size = v.page_size(request.failures_page_size, "failures_page_size")
        after = requests.failures_after(request.failures_page_token)
        batches = self._app.batches
        batch = await batches.get(batch_id)
        failures, next_token = await batches.failures(batch_id, after, size)
        return pb.GetBatchOperationResponse(
            batch=batch_pb(batch),
            failures=[failure_pb(f) for f in failures],
            next_failures_page_token=next_token,
        )

    @unary
    async def ListBatchOperations(
        self, request: pb.ListBatchOperationsRequest, context: Context
    ) -> pb.ListBatchOperationsResponse:
        size = v.page_size(request.page_size)
        after = requests.list_after(request.page_token)
        state = requests.state_of(request.state)
        page, following = await self._app.batches.list(after, size, state)
        return pb.ListBatchOperationsResponse(
            batches=[batch_pb(b) for b in page], next_page_token=requests.list_token(following)
        )

    @unary
    async def CancelBatchOperation(
        self, request: pb.CancelBatchOperationRequest, context: Context
    ) -> pb.CancelBatchOperationResponse:
        batch_id = requests.batch_id_of(request.name)
        v.required("reason", request.reason)
        v.reason_text(request.reason)
        batch = await self._app.batches.cancel(batch_id, request.reason)
        return pb.CancelBatchOperationResponse(batch=batch_pb(batch))
