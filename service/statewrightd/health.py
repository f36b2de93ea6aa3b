"""The grpc.health.v1 services the server reports, and what each one means.

- ``liveness``: the process can make progress; a probe failure means restart it.
- ``readiness``: the server should receive traffic; it goes NOT_SERVING first on drain.
- ``""``, ``statewright.v1.WorkflowService``, ``statewright.v1.TaskService``,
  ``statewright.v1.ScheduleService`` and ``statewright.v1.BatchService``: the
  overall serving status, for clients that check the conventional names.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2
from grpc_health.v1._async import HealthServicer

WORKFLOW_SERVICE: Final = "statewright.v1.WorkflowService"
TASK_SERVICE: Final = "statewright.v1.TaskService"
SCHEDULE_SERVICE: Final = "statewright.v1.ScheduleService"
BATCH_SERVICE: Final = "statewright.v1.BatchService"
LIVENESS: Final = "liveness"
READINESS: Final = "readiness"
OVERALL: Final = ""
SERVICES: Final = (
    OVERALL,
    WORKFLOW_SERVICE,
    TASK_SERVICE,
    SCHEDULE_SERVICE,
    BATCH_SERVICE,
    LIVENESS,
    READINESS,
)
# What follows the overall serving status.
SERVING_NAMES: Final = (OVERALL, WORKFLOW_SERVICE, TASK_SERVICE, SCHEDULE_SERVICE, BATCH_SERVICE)

SERVING: Final = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING: Final = health_pb2.HealthCheckResponse.NOT_SERVING


# The typing stubs of grpcio-health-checking predate List: its answer's class is found
# through the descriptor the real module carries.
# Typed Any: newer typing stubs give Message a constructor that takes no fields.
_LIST_RESPONSE: Any = message_factory.GetMessageClass(
    descriptor_pool.Default().FindMessageTypeByName("grpc.health.v1.HealthListResponse")
)


class ListingHealthServicer(HealthServicer):
    """grpcio-health-checking's asyncio servicer, with ``List``: its base class answers
    List with UNIMPLEMENTED and an error logged with a traceback."""

    def __init__(self) -> None:
        super().__init__()
        self._statuses: dict[str, int] = {OVERALL: SERVING}

    async def set(self, service: str, status: int) -> None:
        self._statuses[service] = status
        await super().set(service, status)

    async def List(self, request: Message, context: Any) -> Message:
        """Every service's status: a snapshot, as the protocol allows."""
        answer: Message = _LIST_RESPONSE(
            statuses={
                service: health_pb2.HealthCheckResponse(status=status)
                for service, status in self._statuses.items()
            }
        )
        return answer


class Health:
    """Owns the health servicer and the transitions between serving statuses."""

    def __init__(self) -> None:
        self.servicer = ListingHealthServicer()
        self._draining = False

    async def starting(self) -> None:
        # Alive but not ready until storage and definitions are in place.
        await self.servicer.set(LIVENESS, SERVING)
        for service in (*SERVING_NAMES, READINESS):
            await self.servicer.set(service, NOT_SERVING)

    async def ready(self, ready: bool) -> None:
        if self._draining:
            return
        status = SERVING if ready else NOT_SERVING
        for service in (READINESS, *SERVING_NAMES):
            await self.servicer.set(service, status)

    async def alive(self, alive: bool) -> None:
        await self.servicer.set(LIVENESS, SERVING if alive else NOT_SERVING)

    async def draining(self) -> None:
        """Readiness goes first so load balancers stop routing before anything else changes.

        Liveness stays SERVING: a draining process is healthy, and a failing liveness probe
        would make the kubelet kill it before in-flight work has finished.
        """
        self._draining = True
        await self.servicer.set(READINESS, NOT_SERVING)
        for service in SERVING_NAMES:
            await self.servicer.set(service, NOT_SERVING)
