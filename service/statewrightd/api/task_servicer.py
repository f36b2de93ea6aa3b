"""The TaskService servicer: workers poll, heartbeat, complete and fail tasks.

A service of its own, apart from WorkflowService, so that workers can be authorised apart
from clients. Like the workflow servicer it converts, calls its use case (the task desk,
which decides), and converts back.
"""

from __future__ import annotations

from statewright.v1 import task_service_pb2 as pb
from statewright.v1 import task_service_pb2_grpc as pb_grpc

from statewrightd.api import task_requests as tr
from statewrightd.api import validation as v
from statewrightd.api.convert import struct_to_dict, task_pb, timestamp
from statewrightd.api.door import Door
from statewrightd.api.handlers import Context, budget, unary
from statewrightd.api.requests import request_key, value_limits
from statewrightd.api.responses import found_workflow, outcome_workflow
from statewrightd.app.wiring import Application
from statewrightd.context import current_actor


class TaskServicer(pb_grpc.TaskServiceServicer):
    def __init__(self, app: Application, door: Door) -> None:
        self._app = app
        self.door = door
        self._limits = value_limits(app.config.limits)

    @unary
    async def PollTasks(
        self, request: pb.PollTasksRequest, context: Context
    ) -> pb.PollTasksResponse:
        poll = tr.poll(request, budget(context))
        tasks = await self._app.tasks.poll(
            poll.queue,
            poll.identity,
            poll.max_tasks,
            poll.wait,
            tr.fitting(poll.max_bytes),
            room=poll.max_bytes,
        )
        return pb.PollTasksResponse(tasks=[task_pb(t, with_lease=True) for t in tasks])

    @unary
    async def HeartbeatTask(
        self, request: pb.HeartbeatTaskRequest, context: Context
    ) -> pb.HeartbeatTaskResponse:
        ref, token = tr.leased(request.name, request.lease_token)
        details = None
        if request.HasField("details"):
            details = struct_to_dict(request.details, "details", self._limits)
        beat = await self._app.tasks.heartbeat(ref, token, details)
        response = pb.HeartbeatTaskResponse(cancel_requested=beat.cancel_requested)
        if not beat.cancel_requested and beat.task.lease_expire_time is not None:
            response.lease_expire_time.CopyFrom(timestamp(beat.task.lease_expire_time))
        return response

    @unary
    async def CompleteTask(
        self, request: pb.CompleteTaskRequest, context: Context
    ) -> pb.CompleteTaskResponse:
        ref, token = tr.leased(request.name, request.lease_token)
        v.request_id(request.request_id)
        result = struct_to_dict(request.result, "result", self._limits)
        key = request_key("CompleteTask", request, request.request_id)
        done = await self._app.tasks.complete(
            ref,
            token,
            result,
            request=key,
            budget=budget(context),
            actor=current_actor(),
            worker=tr.worker_trace(request.traceparent, request.tracestate),
        )
        return pb.CompleteTaskResponse(
            workflow=outcome_workflow(done.outcome),
            task=task_pb(done.task),
        )

    @unary
    async def FailTask(self, request: pb.FailTaskRequest, context: Context) -> pb.FailTaskResponse:
        fail = tr.fail(request, self._limits)
        failed = await self._app.tasks.fail(
            fail.ref,
            fail.token,
            fail.failure,
            non_retryable=fail.non_retryable,
            retry_after=fail.retry_after,
            close_key_until=fail.close_key_until,
            request=fail.request,
            budget=budget(context),
            actor=current_actor(),
            worker=fail.worker,
        )
        response = pb.FailTaskResponse(task=task_pb(failed.task))
        if failed.outcome is not None:
            response.workflow.CopyFrom(outcome_workflow(failed.outcome))
        else:
            assert failed.instance is not None, "a retry answers with the instance it left"
            response.workflow.CopyFrom(found_workflow(failed.instance))
        return response

    @unary
    async def GetTask(self, request: pb.GetTaskRequest, context: Context) -> pb.GetTaskResponse:
        task = await self._app.tasks.get(tr.task_ref(request.name))
        return pb.GetTaskResponse(task=task_pb(task))

    @unary
    async def ListTasks(
        self, request: pb.ListTasksRequest, context: Context
    ) -> pb.ListTasksResponse:
        queue, workflow_id, status = tr.list_filters(request)
        page = await self._app.tasks.list(
            queue=queue,
            workflow_id=workflow_id,
            status=status,
            page_size=v.page_size(request.page_size),
            page_token=request.page_token,
            filter_text=v.list_filter(request.filter),
        )
        return pb.ListTasksResponse(
            tasks=[task_pb(t) for t in page.items], next_page_token=page.next_page_token
        )

    @unary
    async def SetQueueConfig(
        self, request: pb.SetQueueConfigRequest, context: Context
    ) -> pb.SetQueueConfigResponse:
        stored = await self._app.queues.set_config(tr.queue_config(request.config))
        response = pb.SetQueueConfigResponse()
        if stored is not None:
            response.config.CopyFrom(tr.queue_config_pb(stored))
        return response

    @unary
    async def GetQueueConfig(
        self, request: pb.GetQueueConfigRequest, context: Context
    ) -> pb.GetQueueConfigResponse:
        stored, closed = await self._app.queues.get_config(tr.queue_name(request.queue))
        response = pb.GetQueueConfigResponse(closed_keys=[tr.closed_key_pb(k) for k in closed])
        if stored is not None:
            response.config.CopyFrom(tr.queue_config_pb(stored.config))
        return response

    @unary
    async def ListQueues(
        self, request: pb.ListQueuesRequest, context: Context
    ) -> pb.ListQueuesResponse:
        queues = await self._app.queues.list(tr.key_count(request.key_count))
        return pb.ListQueuesResponse(queues=[tr.queue_status_pb(q) for q in queues])
