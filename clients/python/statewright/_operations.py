"""Every method of :class:`statewright.Client` and :class:`statewright.AsyncClient`, once.

Each is a plan (see :mod:`statewright._plan`): it builds the request, yields the call, and
turns the response into the client's types. Adding an RPC to both clients means adding one
plan here. The workers run the task plans too, as ``Operations.heartbeat_task(client, ...)``
inside their own plans.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import grpc

from statewright import _common, _tracing
from statewright._common import IfExists, IfFinished, Until
from statewright._plan import (
    Effect,
    Feed,
    OpenStream,
    Plan,
    Receive,
    Sleep,
    Unary,
    returning,
    yielding,
)
from statewright.errors import DeadlineExceeded, ExecutionTimedOut, StatewrightError
from statewright.models import (
    BatchAction,
    BatchItemFailure,
    BatchOperation,
    BatchReport,
    BatchStartResult,
    BatchState,
    Definition,
    MigrationResult,
    PauseResult,
    QueueConfig,
    QueueSettings,
    QueueStatus,
    RepairResult,
    SignalResult,
    SignalWithStartResult,
    StartResult,
    StepResult,
    Task,
    TaskHeartbeat,
    TaskOutcome,
    TaskStatus,
    WatchEvent,
    Workflow,
    WorkflowCount,
    WorkflowPage,
    WorkflowStatus,
    batch_action,
    batch_name,
    workflow_name,
)
from statewright.v1 import batch_service_pb2 as batch_pb
from statewright.v1 import diagnostics_pb2, task_pb2
from statewright.v1 import schedule_service_pb2 as schedule_pb
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb


class _Listing(NamedTuple):
    """What a workflow listing is of, the same on every page."""

    definition: str | None
    status: WorkflowStatus | str | None
    page_size: int | None
    order_by: str | None
    id_prefix: str | None
    filter: str | None = None


class Operations:
    """The client API of ``statewright.v1.WorkflowService``, ``TaskService``,
    ``ScheduleService`` and ``BatchService``, for either driver."""

    # --- workflows ----------------------------------------------------------------------

    @returning
    def start(
        self,
        definition: str,
        input: Mapping[str, object] | None = None,
        *,
        workflow_id: str | None = None,
        version: int | None = None,
        request_id: str | None = None,
        if_exists: IfExists | None = None,
        start_delay: float | None = None,
        recursion_limit: int | None = None,
        timeout: float | None = None,
    ) -> Plan[StartResult]:
        """Starts an instance of ``definition`` (latest version unless ``version``).

        With ``start_delay`` (seconds) the instance is created at once, WAITING with the
        reason START_DELAYED, and its first step runs after the delay. ``recursion_limit``
        lowers the definition's for every step of this instance (above it is refused with
        RECURSION_LIMIT_TOO_HIGH). ``if_exists="restart"``: a finished instance with this
        ``workflow_id`` starts a new run (its stored context under the input, ``run`` one
        higher); a live one is refused ALREADY_EXISTS."""
        request = _common.start_request(
            definition,
            input=input,
            workflow_id=workflow_id,
            version=version,
            request_id=request_id,
            if_exists=if_exists,
            start_delay=start_delay,
            recursion_limit=recursion_limit,
        )
        response: pb.StartWorkflowResponse = yield Unary("StartWorkflow", request, timeout)
        return _common.start_result(response)

    @returning
    def execute(
        self,
        definition: str,
        input: Mapping[str, object] | None = None,
        *,
        until: Until = "rest",
        timeout: float | None = None,
        workflow_id: str | None = None,
        version: int | None = None,
        request_id: str | None = None,
        recursion_limit: int | None = None,
    ) -> Plan[Workflow]:
        """Starts an instance and returns it once it rests: WAITING, COMPLETED, FAILED or
        CANCELLED (``until="finish"``: only once it finished).

        A FAILED instance is returned, not raised: its ``error`` says why. After ``timeout``
        seconds :class:`~statewright.errors.ExecutionTimedOut` is raised; the instance goes
        on running, and the error's ``workflow`` is it as last seen. The start carries a
        ``request_id`` (one is made when none is given), so a start retried by gRPC never
        makes a second instance."""
        if until not in ("rest", "finish"):
            raise ValueError(f"until must be 'rest' or 'finish', not {until!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        started: StartResult = yield from Operations.start(
            self,
            definition,
            input,
            workflow_id=workflow_id,
            version=version,
            request_id=request_id or _common.new_request_id(),
            recursion_limit=recursion_limit,
            timeout=timeout,
        )
        latest: Workflow = started.workflow

        def arrived(workflow: Workflow) -> bool:
            if until == "finish":
                return workflow.terminal
            return workflow.terminal or workflow.status is WorkflowStatus.WAITING

        if arrived(latest):
            return latest
        left = None if deadline is None else deadline - time.monotonic()
        if left is None or left > 0:
            watch = Operations.watch(
                self, latest.name, after_revision=latest.revision, timeout=left
            )
            try:
                event = yield from _first(watch, lambda e: arrived(e.workflow))
            except DeadlineExceeded:
                event = None
            if event is not None:
                return event.workflow
            if deadline is None:  # the watch ended without a rest: read where it stands
                return (yield from self._get(latest.name, None))
        current = yield from self._get(latest.name, None)
        if arrived(current):
            return current
        raise ExecutionTimedOut(
            f"{current.name} did not {'finish' if until == 'finish' else 'rest'} within "
            f"{timeout:g}s; it is {current.status.value} in {current.state!r} and goes on "
            "running",
            current,
        )

    @returning
    def resume(
        self,
        name: str,
        event: str | None = None,
        input: Mapping[str, object] | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> Plan[StepResult]:
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
        response: pb.ResumeWorkflowResponse = yield Unary("ResumeWorkflow", request, timeout)
        return _common.step_result(response.workflow, response.transitions)

    @returning
    def signal(
        self,
        name: str,
        event: str,
        payload: Mapping[str, object] | None = None,
        *,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> Plan[SignalResult]:
        """Delivers ``event`` to a RUNNING instance; ``accepted`` means durably applied."""
        request = _common.signal_request(name, event, payload=payload, request_id=request_id)
        response: pb.SignalWorkflowResponse = yield Unary("SignalWorkflow", request, timeout)
        return _common.signal_result(response)

    @returning
    def signal_with_start(
        self,
        definition: str,
        workflow_id: str,
        event: str,
        payload: Mapping[str, object] | None = None,
        *,
        input: Mapping[str, object] | None = None,
        version: int | None = None,
        request_id: str | None = None,
        if_finished: IfFinished | None = None,
        start_now: bool = False,
        recursion_limit: int | None = None,
        timeout: float | None = None,
    ) -> Plan[SignalWithStartResult]:
        """Delivers ``event`` to instance ``workflow_id``, starting it from ``definition``
        with ``input`` first when it does not exist (one step: its first revision carries
        the event). A finished instance is refused unless ``if_finished="start_new"``;
        ``start_now`` starts an instance whose delayed start has not run yet."""
        request = _common.signal_with_start_request(
            definition,
            workflow_id,
            event,
            payload=payload,
            input=input,
            version=version,
            request_id=request_id,
            if_finished=if_finished,
            start_now=start_now,
            recursion_limit=recursion_limit,
        )
        response: pb.SignalWithStartWorkflowResponse = yield Unary(
            "SignalWithStartWorkflow", request, timeout
        )
        return _common.signal_with_start_result(response)

    @returning
    def get(self, name: str, *, timeout: float | None = None) -> Plan[Workflow]:
        """Reads one instance at its latest revision."""
        return (yield from self._get(name, timeout))

    def _get(self, name: str, timeout: float | None) -> Plan[Workflow]:
        request = pb.GetWorkflowRequest(name=workflow_name(name))
        response: pb.GetWorkflowResponse = yield Unary("GetWorkflow", request, timeout)
        return Workflow.from_proto(response.workflow)

    @returning
    def cancel(
        self,
        name: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> Plan[Workflow]:
        """Cancels an instance that has not ended; returns the CANCELLED instance."""
        request = _common.cancel_request(
            name, reason=reason, expected_revision=expected_revision, request_id=request_id
        )
        response: pb.CancelWorkflowResponse = yield Unary("CancelWorkflow", request, timeout)
        return Workflow.from_proto(response.workflow)

    @returning
    def retry(
        self,
        name: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> Plan[RepairResult]:
        """Puts a FAILED instance back into the state it failed in (a task that gave up is
        scheduled anew); with ``dry_run``, answers what would happen and saves nothing."""
        request = pb.RetryWorkflowRequest(
            **_common.repair_fields(
                name,
                reason=reason,
                expected_revision=expected_revision,
                request_id=request_id,
                dry_run=dry_run,
            )
        )
        response: pb.RetryWorkflowResponse = yield Unary("RetryWorkflow", request, timeout)
        return _common.repair_result(response)

    @returning
    def reset(
        self,
        name: str,
        to_revision: int,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> Plan[RepairResult]:
        """Puts any instance back at revision ``to_revision`` of its history: its state and
        context, timers armed anew, its task scheduled anew. Work done since is not undone."""
        fields = _common.repair_fields(
            name,
            reason=reason,
            expected_revision=expected_revision,
            request_id=request_id,
            dry_run=dry_run,
        )
        request = pb.ResetWorkflowRequest(to_revision=to_revision, **fields)
        response: pb.ResetWorkflowResponse = yield Unary("ResetWorkflow", request, timeout)
        return _common.repair_result(response)

    @returning
    def migrate(
        self,
        name: str,
        to_version: int,
        reason: str | None = None,
        *,
        state_map: Mapping[str, str] | None = None,
        set: Mapping[str, str] | None = None,
        expected_revision: int | None = None,
        request_id: str | None = None,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> Plan[MigrationResult]:
        """Moves a RUNNING or WAITING instance to version ``to_version`` of its definition:
        ``state_map`` renames states (old -> new), ``set`` gives context fields a value
        (field -> CEL over the old context). Checked first against both versions; with
        ``dry_run``, answers the plan and saves nothing."""
        fields = _common.repair_fields(
            name,
            reason=reason,
            expected_revision=expected_revision,
            request_id=request_id,
            dry_run=dry_run,
        )
        request = pb.MigrateWorkflowRequest(
            to_version=to_version, state_map=state_map or {}, set=set or {}, **fields
        )
        response: pb.MigrateWorkflowResponse = yield Unary("MigrateWorkflow", request, timeout)
        return _common.migration_result(response)

    @returning
    def pause(
        self,
        name: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> Plan[PauseResult]:
        """Pauses a RUNNING or WAITING instance: nothing steps it until ``unpause`` (its due
        timers wait, its task is not offered, resumes and signals are refused)."""
        request = pb.PauseWorkflowRequest(
            **_common.repair_fields(
                name,
                reason=reason,
                expected_revision=expected_revision,
                request_id=request_id,
                dry_run=dry_run,
            )
        )
        response: pb.PauseWorkflowResponse = yield Unary("PauseWorkflow", request, timeout)
        return _common.pause_result(response)

    @returning
    def unpause(
        self,
        name: str,
        reason: str | None = None,
        *,
        expected_revision: int | None = None,
        request_id: str | None = None,
        dry_run: bool = False,
        timeout: float | None = None,
    ) -> Plan[PauseResult]:
        """Unpauses a paused instance: its due timers fire and its task is offered again."""
        request = pb.UnpauseWorkflowRequest(
            **_common.repair_fields(
                name,
                reason=reason,
                expected_revision=expected_revision,
                request_id=request_id,
                dry_run=dry_run,
            )
        )
        response: pb.UnpauseWorkflowResponse = yield Unary("UnpauseWorkflow", request, timeout)
        return _common.pause_result(response)

    @yielding
    def list_pages(
        self,
        *,
        definition: str | None = None,
        status: WorkflowStatus | str | None = None,
        page_size: int | None = None,
        page_token: str = "",
        order_by: str | None = None,
        id_prefix: str | None = None,
        filter: str | None = None,
        timeout: float | None = None,
    ) -> Feed[WorkflowPage]:
        """Yields pages of instances, following ``next_page_token`` until it is empty.

        Each page is fetched lazily with its own deadline. ``order_by`` is keys separated
        by commas, each ``create_time``, ``update_time``, ``definition``, ``state``,
        ``status``, ``name`` or a search field, with an optional `` desc``
        (``"update_time desc, search.amount"``; None: oldest first; ties by id);
        ``id_prefix`` keeps only instances
        whose id starts with it; ``filter`` is an AIP-160 filter over ``definition``,
        ``version``, ``state``, ``status``, ``create_time``, ``update_time`` and
        ``search.<field>``, such as ``'status = WAITING AND search.customer = "c-42"'``.
        """
        which = _Listing(definition, status, page_size, order_by, id_prefix, filter)
        token: str | None = page_token
        while token is not None:
            page = yield from self._page(which, token, timeout)
            yield page
            token = page.next_page_token or None

    @yielding
    def list(
        self,
        *,
        definition: str | None = None,
        status: WorkflowStatus | str | None = None,
        page_size: int | None = None,
        order_by: str | None = None,
        id_prefix: str | None = None,
        filter: str | None = None,
        timeout: float | None = None,
    ) -> Feed[Workflow]:
        """Yields every matching instance across all pages, oldest first unless
        ``order_by`` says otherwise (see ``list_pages``)."""
        which = _Listing(definition, status, page_size, order_by, id_prefix, filter)
        token: str | None = ""
        while token is not None:
            page = yield from self._page(which, token, timeout)
            yield from page.workflows
            token = page.next_page_token or None

    def _page(self, which: _Listing, token: str, timeout: float | None) -> Plan[WorkflowPage]:
        request = _common.list_request(
            definition=which.definition,
            status=which.status,
            page_size=which.page_size,
            page_token=token,
            order_by=which.order_by,
            id_prefix=which.id_prefix,
            filter=which.filter,
        )
        response: pb.ListWorkflowsResponse = yield Unary("ListWorkflows", request, timeout)
        return WorkflowPage(
            workflows=tuple(Workflow.from_proto(w) for w in response.workflows),
            next_page_token=response.next_page_token,
        )

    @returning
    def count(
        self, filter: str | None = None, *, timeout: float | None = None
    ) -> Plan[WorkflowCount]:
        """How many instances ``filter`` (as ``list`` takes it; None: all) matches, in all
        and by status."""
        request = pb.CountWorkflowsRequest(filter=filter or "")
        response: pb.CountWorkflowsResponse = yield Unary("CountWorkflows", request, timeout)
        return WorkflowCount.from_proto(response)

    @yielding
    def watch(
        self,
        name: str,
        *,
        after_revision: int | None = None,
        timeout: float | None = None,
        reconnect_budget: float = 30.0,
    ) -> Feed[WatchEvent]:
        """Yields every revision of an instance in order, and stops after a terminal one.

        Without ``after_revision`` the first event is CURRENT (the instance now), then one
        STEP per new revision. With it, every revision after it is replayed first. If the
        connection drops or the server restarts, the watch resumes after the last revision
        it yielded, so each revision is seen exactly once; it gives up (raising the last
        error) after ``reconnect_budget`` seconds without progress. A stream refused with
        a RetryInfo (RATE_LIMITED) is opened again after the delay the server asked for.
        ``timeout`` bounds one stream; by default a watch has no deadline, since it lasts as
        long as the instance.
        Call ``close()`` (``aclose()`` on an AsyncClient's) on the generator, or stop
        iterating and drop it, to end the stream.
        """
        cursor = _common.WatchCursor(workflow_name(name), after_revision)
        backoff = _common.Backoff(budget=reconnect_budget)
        while True:
            failure: StatewrightError | None = None
            call = yield OpenStream("WatchWorkflow", cursor.request(), timeout)
            try:
                while True:
                    message: pb.WatchWorkflowResponse | None = yield Receive(call)
                    if message is None:
                        break
                    event = cursor.accept(message)
                    if event is None:
                        continue
                    backoff.reset()
                    yield event
                    if cursor.done:
                        return
            except StatewrightError as exc:
                if not _common.resumable(exc):
                    raise
                failure = exc
            finally:
                # Also runs when the consumer stops iterating: release the stream.
                call.cancel()
            if failure is None:
                # The stream ended OK without a terminal revision: is there really nothing left?
                current = yield from self._get(cursor.name, None)
                if cursor.finished_quietly(current):
                    return
            delay = backoff.delay(failure.retry_delay if failure is not None else None)
            if delay is None:
                raise failure or StatewrightError(
                    f"watch of {cursor.name} kept ending before a terminal revision",
                    code=grpc.StatusCode.UNAVAILABLE,
                )
            yield Sleep(delay)

    # --- diagnostics and definitions ----------------------------------------------------

    @returning
    def diagnostics(self, *, timeout: float | None = None) -> Plan[pb.GetDiagnosticsResponse]:
        """The runtime's measurements: EventLoop, admissions, persistence, watchers, build."""
        response: pb.GetDiagnosticsResponse = yield Unary(
            "GetDiagnostics", pb.GetDiagnosticsRequest(), timeout
        )
        return response

    @returning
    def workflow_diagnostics(
        self, name: str, *, timeout: float | None = None
    ) -> Plan[diagnostics_pb2.WorkflowDiagnostics]:
        """The runtime's view of one instance: admission state, cache, recent transitions."""
        request = pb.GetWorkflowDiagnosticsRequest(name=workflow_name(name))
        response: pb.GetWorkflowDiagnosticsResponse = yield Unary(
            "GetWorkflowDiagnostics", request, timeout
        )
        return response.diagnostics

    @yielding
    def definitions(
        self,
        definition: str | None = None,
        *,
        page_size: int | None = None,
        timeout: float | None = None,
    ) -> Feed[Definition]:
        """Yields the definition versions the server knows, across all pages."""
        token: str | None = ""
        while token is not None:
            request = pb.ListDefinitionsRequest(
                definition=definition or "", page_size=page_size or 0, page_token=token
            )
            response: pb.ListDefinitionsResponse = yield Unary("ListDefinitions", request, timeout)
            yield from (Definition.from_proto(d) for d in response.definitions)
            token = response.next_page_token or None

    @returning
    def definition(
        self, name: str, version: int | None = None, *, timeout: float | None = None
    ) -> Plan[Definition]:
        """One definition version (the latest unless ``version``), with source and graph.

        ``name`` is a definition name or a ``definitions/...`` resource name.
        """
        request = pb.GetDefinitionRequest(name=_common.definition_name(name, version))
        response: pb.GetDefinitionResponse = yield Unary("GetDefinition", request, timeout)
        return Definition.from_proto(response.definition)

    # --- tasks (TaskService) -------------------------------------------------------------

    @returning
    def poll_tasks(
        self,
        queue: str,
        *,
        max_tasks: int = 1,
        wait: float = 20.0,
        identity: str | None = None,
        timeout: float | None = None,
        max_bytes: int | None = None,
    ) -> Plan[tuple[Task, ...]]:
        """Leases up to ``max_tasks`` (1 to 100) tasks of ``queue``, waiting up to ``wait``
        seconds (at most 60) for one; none when the wait ran out.

        Each task comes with its lease (``lease_token``, ``lease_expire_time``). The first
        lease is short: heartbeat well before it expires, then complete or fail the task.
        ``identity`` (default ``pid@host``) names the poller in diagnostics. The deadline is
        ``wait`` plus a few seconds unless ``timeout``. ``max_bytes`` (default: what this
        client's channel receives, 4 MiB unless its options say otherwise) bounds the
        answer: the server leases only the tasks that fit. :class:`statewright.Worker` does
        all of this for you.
        """
        receives: int = getattr(self, "receive_limit", _common.DEFAULT_RECEIVE_LIMIT)
        limit = max_bytes or receives
        request = _common.poll_request(
            queue, identity=identity, max_tasks=max_tasks, wait=wait, max_bytes=limit
        )
        deadline = wait + _common.POLL_DEADLINE_MARGIN if timeout is None else timeout
        response: task_pb.PollTasksResponse = yield Unary("PollTasks", request, deadline)
        return tuple(Task.from_proto(t) for t in response.tasks)

    @returning
    def heartbeat_task(
        self,
        name: str,
        lease_token: str,
        details: Mapping[str, object] | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[TaskHeartbeat]:
        """Extends a leased task's lease, keeping ``details`` as its progress.

        ``cancel_requested`` in the answer means the task was cancelled: stop working on it.
        A lease that is no longer current raises :class:`~statewright.errors.LeaseSuperseded`.
        """
        request = task_pb.HeartbeatTaskRequest(name=name, lease_token=lease_token)
        _common.set_struct(request.details, details)
        response: task_pb.HeartbeatTaskResponse = yield Unary("HeartbeatTask", request, timeout)
        return TaskHeartbeat.from_proto(response)

    @returning
    def complete_task(
        self,
        name: str,
        lease_token: str,
        result: Mapping[str, object] | None = None,
        *,
        request_id: str | None = None,
        timeout: float | None = None,
        traceparent: str = "",
        tracestate: str = "",
    ) -> Plan[TaskOutcome]:
        """Completes a leased task with ``result``; answers once the step that applied it is
        durably saved. A retry with the same ``request_id`` gets the original answer.
        ``traceparent`` / ``tracestate``: the W3C trace context of the span that worked on
        the task (the step is linked to it, and the call is its child).
        """
        request = task_pb.CompleteTaskRequest(
            name=name,
            lease_token=lease_token,
            request_id=request_id or _common.new_request_id(),
            traceparent=traceparent,
            tracestate=tracestate,
        )
        _common.set_struct(request.result, result)
        trace = _tracing.context_of(traceparent, tracestate)
        response: task_pb.CompleteTaskResponse = yield Unary(
            "CompleteTask", request, timeout, trace
        )
        return _common.task_outcome(response.task, response.workflow)

    @returning
    def fail_task(
        self,
        name: str,
        lease_token: str,
        type: str,
        message: str = "",
        *,
        details: Mapping[str, object] | None = None,
        non_retryable: bool = False,
        retry_delay: float | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
        close_key_until: datetime | None = None,
        traceparent: str = "",
        tracestate: str = "",
    ) -> Plan[TaskOutcome]:
        """Fails a leased attempt with an error of ``type`` (UPPER_SNAKE, what definitions
        match on). The task is retried with backoff (after ``retry_delay`` seconds, if given)
        unless ``non_retryable``, a non-retryable type or the last attempt gives it up.
        ``close_key_until`` (an aware datetime) closes the task's concurrency key on its
        queue until then: no task of that key is handed out before it. ``traceparent`` /
        ``tracestate``: as for ``complete_task``.
        """
        error = _common.task_error(type, message, details)
        request = _common.fail_request(
            name,
            lease_token,
            error,
            non_retryable=non_retryable,
            retry_delay=retry_delay,
            request_id=request_id,
            close_key_until=close_key_until,
        )
        request.traceparent, request.tracestate = traceparent, tracestate
        trace = _tracing.context_of(traceparent, tracestate)
        response: task_pb.FailTaskResponse = yield Unary("FailTask", request, timeout, trace)
        return _common.task_outcome(response.task, response.workflow)

    @returning
    def set_queue_config(
        self, config: QueueConfig, *, timeout: float | None = None
    ) -> Plan[QueueConfig | None]:
        """Sets a queue's flow control (the admin role); every limit zero removes it. The
        config as stored, or None when the queue has no limits now."""
        request = task_pb.SetQueueConfigRequest(config=config.to_proto())
        response: task_pb.SetQueueConfigResponse = yield Unary("SetQueueConfig", request, timeout)
        return QueueConfig.from_proto(response.config) if response.HasField("config") else None

    @returning
    def get_queue_config(self, queue: str, *, timeout: float | None = None) -> Plan[QueueSettings]:
        """A queue's flow control (None: no limits) and the keys closed on it now."""
        request = task_pb.GetQueueConfigRequest(queue=queue)
        response: task_pb.GetQueueConfigResponse = yield Unary("GetQueueConfig", request, timeout)
        return QueueSettings.from_proto(response)

    @returning
    def list_queues(
        self, *, key_count: int = 0, timeout: float | None = None
    ) -> Plan[builtins.list[QueueStatus]]:
        """Every queue with limits or open tasks: backlog, leases, the oldest wait, tokens,
        the ``key_count`` busiest keys (0: 5) and the closed keys."""
        request = task_pb.ListQueuesRequest(key_count=key_count)
        response: task_pb.ListQueuesResponse = yield Unary("ListQueues", request, timeout)
        return [QueueStatus.from_proto(q) for q in response.queues]

    @returning
    def get_task(self, name: str, *, timeout: float | None = None) -> Plan[Task]:
        """Reads one task, ``workflows/{workflow_id}/tasks/{task_id}`` (without its lease)."""
        request = task_pb.GetTaskRequest(name=name)
        response: task_pb.GetTaskResponse = yield Unary("GetTask", request, timeout)
        return Task.from_proto(response.task)

    @yielding
    def list_tasks(
        self,
        *,
        queue: str | None = None,
        workflow: str | None = None,
        status: TaskStatus | str | None = None,
        page_size: int | None = None,
        filter: str | None = None,
        timeout: float | None = None,
    ) -> Feed[Task]:
        """Yields every matching task, oldest first, across all pages (fetched lazily).

        ``filter`` is an AIP-160 filter over the task's fields (``queue``, ``workflow``,
        ``definition``, ``state``, ``status``, ``attempt``, ``priority``, ``revision``,
        ``concurrency_key``, ``schedule_time``, ``deadline``, ``lease_expire_time``,
        ``update_time``), such as ``"status = BACKOFF AND attempt >= 3"``."""
        request = task_pb.ListTasksRequest(
            queue=queue or "",
            workflow=workflow_name(workflow) if workflow else "",
            page_size=page_size or 0,
            filter=filter or "",
        )
        if status is not None:
            name = TaskStatus.parse(status).value
            request.status = task_pb2.TaskStatus.Value("TASK_STATUS_" + name)
        token: str | None = ""
        while token is not None:
            request.page_token = token
            response: task_pb.ListTasksResponse = yield Unary("ListTasks", request, timeout)
            yield from (Task.from_proto(t) for t in response.tasks)
            token = response.next_page_token or None

    # --- schedules (ScheduleService) ----------------------------------------------------

    @returning
    def create_schedule(
        self,
        schedule_id: str,
        definition: str,
        *,
        cron: Sequence[str] = (),
        interval: float | None = None,
        phase: float = 0.0,
        time_zone: str = "",
        jitter: float = 0.0,
        input: Mapping[str, object] | None = None,
        version: int | None = None,
        overlap: str = "SKIP",
        catchup_window: float | None = None,
        paused: bool = False,
        note: str = "",
        timeout: float | None = None,
    ) -> Plan[schedule_pb.Schedule]:
        """Create a schedule that starts ``definition`` at each time of its cron
        expressions (read in ``time_zone``) and/or every ``interval`` seconds (at
        ``phase`` past each multiple); ``overlap`` is SKIP, BUFFER_ONE, ALLOW_ALL or
        CANCEL_OTHER. Durations are seconds. Returns the ``statewright.v1.Schedule``."""
        schedule = schedule_pb.Schedule()
        schedule.spec.cron_expressions.extend(cron)
        if interval is not None:
            schedule.spec.interval.FromNanoseconds(round(interval * 1e9))
            schedule.spec.phase.FromNanoseconds(round(phase * 1e9))
        schedule.spec.time_zone = time_zone
        if jitter:
            schedule.spec.jitter.FromNanoseconds(round(jitter * 1e9))
        schedule.action.definition = definition
        schedule.action.version = version or 0
        _common.set_struct(schedule.action.input, input)
        policy = overlap.upper().removeprefix("OVERLAP_POLICY_")
        schedule.policies.overlap = schedule_pb.OverlapPolicy.Value(f"OVERLAP_POLICY_{policy}")
        if catchup_window is not None:
            schedule.policies.catchup_window.FromNanoseconds(round(catchup_window * 1e9))
        schedule.state.paused = paused
        schedule.state.note = note
        request = schedule_pb.CreateScheduleRequest(schedule_id=schedule_id, schedule=schedule)
        response: schedule_pb.CreateScheduleResponse = yield Unary(
            "CreateSchedule", request, timeout
        )
        return response.schedule

    @returning
    def get_schedule(
        self, name: str, *, timeout: float | None = None
    ) -> Plan[schedule_pb.Schedule]:
        """One schedule (``schedules/ID`` or ``ID``): spec, state, next fires, recent actions."""
        request = schedule_pb.GetScheduleRequest(name=schedule_name(name))
        response: schedule_pb.GetScheduleResponse = yield Unary("GetSchedule", request, timeout)
        return response.schedule

    @yielding
    def list_schedules(
        self, *, page_size: int | None = None, timeout: float | None = None
    ) -> Feed[schedule_pb.Schedule]:
        """Yields every schedule, by id, across all pages."""
        token: str | None = ""
        while token is not None:
            request = schedule_pb.ListSchedulesRequest(page_size=page_size or 0, page_token=token)
            response: schedule_pb.ListSchedulesResponse = yield Unary(
                "ListSchedules", request, timeout
            )
            yield from response.schedules
            token = response.next_page_token or None

    @returning
    def update_schedule(
        self,
        schedule: schedule_pb.Schedule,
        *,
        expected_revision: int = 0,
        timeout: float | None = None,
    ) -> Plan[schedule_pb.Schedule]:
        """Replace the spec, action and policies of ``schedule.name`` (read it, change it,
        send it back; ``expected_revision`` refuses it if another change came first)."""
        request = schedule_pb.UpdateScheduleRequest(
            schedule=schedule, expected_revision=expected_revision
        )
        response: schedule_pb.UpdateScheduleResponse = yield Unary(
            "UpdateSchedule", request, timeout
        )
        return response.schedule

    @returning
    def delete_schedule(self, name: str, *, timeout: float | None = None) -> Plan[None]:
        """Delete a schedule; the instances it started stay."""
        request = schedule_pb.DeleteScheduleRequest(name=schedule_name(name))
        yield Unary("DeleteSchedule", request, timeout)
        return None

    @returning
    def pause_schedule(
        self, name: str, note: str = "", *, timeout: float | None = None
    ) -> Plan[schedule_pb.Schedule]:
        """Stop a schedule's fires; ``note`` says why (kept with the schedule)."""
        request = schedule_pb.PauseScheduleRequest(name=schedule_name(name), note=note)
        response: schedule_pb.PauseScheduleResponse = yield Unary("PauseSchedule", request, timeout)
        return response.schedule

    @returning
    def unpause_schedule(
        self, name: str, note: str = "", *, timeout: float | None = None
    ) -> Plan[schedule_pb.Schedule]:
        """Resume a schedule's fires, from now on."""
        request = schedule_pb.UnpauseScheduleRequest(name=schedule_name(name), note=note)
        response: schedule_pb.UnpauseScheduleResponse = yield Unary(
            "UnpauseSchedule", request, timeout
        )
        return response.schedule

    @returning
    def trigger_schedule(
        self, name: str, *, force: bool = False, timeout: float | None = None
    ) -> Plan[schedule_pb.ScheduleActionResult]:
        """Fire a schedule once now (with its overlap policy unless ``force``); what became
        of the fire: its instance and outcome."""
        request = schedule_pb.TriggerScheduleRequest(name=schedule_name(name), force=force)
        response: schedule_pb.TriggerScheduleResponse = yield Unary(
            "TriggerSchedule", request, timeout
        )
        return response.action

    @returning
    def backfill_schedule(
        self, name: str, start: datetime, end: datetime, *, timeout: float | None = None
    ) -> Plan[int]:
        """Run every nominal time from ``start`` to ``end`` (both included, aware datetimes),
        paced, as if the schedule had run then; how many fires the range holds."""
        request = schedule_pb.BackfillScheduleRequest(name=schedule_name(name))
        request.start_time.FromDatetime(start)
        request.end_time.FromDatetime(end)
        response: schedule_pb.BackfillScheduleResponse = yield Unary(
            "BackfillSchedule", request, timeout
        )
        return int(response.fires)

    # --- batch operations (BatchService) -------------------------------------------------

    @returning
    def start_batch_operation(
        self,
        operation: BatchAction | str,
        reason: str,
        *,
        filter: str | None = None,
        definition: str | None = None,
        rate: float | None = None,
        batch_id: str | None = None,
        dry_run: bool = False,
        id_prefix: str | None = None,
        timeout: float | None = None,
    ) -> Plan[BatchStartResult]:
        """Applies ``operation`` to every instance ``filter`` (an AIP-160 filter, as ``list``
        takes it; None: every instance) matches in ``definition`` (None: every definition),
        whose id starts with ``id_prefix`` (None: any id), as a durable batch, ``rate``
        instances per second (None: 50, at most 1000).

        ``operation`` is a :class:`~statewright.models.BatchSignal`, ``BatchMigrate``,
        ``BatchReset``, ``BatchDelete``, ... or the name of one without parameters
        (``"retry"``, ``"cancel"``, ``"pause"``, ``"unpause"``, ``"reset"``, ``"delete"``).
        The instances are matched once, now; ``reason`` goes into each one's history. With
        ``dry_run`` the matching instances are counted and sampled and nothing is saved.
        Without ``batch_id`` one is made here, so a start retried by gRPC answers the same
        batch instead of starting a second one."""
        request = batch_pb.StartBatchOperationRequest(
            batch_id=batch_id or ("" if dry_run else _common.new_request_id()),
            definition=definition or "",
            filter=filter or "",
            id_prefix=id_prefix or "",
            reason=reason,
            rate=rate or 0.0,
            dry_run=dry_run,
        )
        batch_action(operation).fill(request)
        response: batch_pb.StartBatchOperationResponse = yield Unary(
            "StartBatchOperation", request, timeout
        )
        return BatchStartResult(BatchOperation.from_proto(response.batch), tuple(response.sample))

    @returning
    def get_batch_operation(
        self,
        name: str,
        *,
        failures_page_size: int | None = None,
        failures_page_token: str = "",
        timeout: float | None = None,
    ) -> Plan[BatchReport]:
        """One batch (``batches/ID`` or ``ID``): its progress, and a page of the instances
        it failed on (``failures_page_size``, None: 50; the next page from
        ``next_failures_page_token``)."""
        request = batch_pb.GetBatchOperationRequest(
            name=batch_name(name),
            failures_page_size=failures_page_size or 0,
            failures_page_token=failures_page_token,
        )
        response: batch_pb.GetBatchOperationResponse = yield Unary(
            "GetBatchOperation", request, timeout
        )
        return BatchReport(
            batch=BatchOperation.from_proto(response.batch),
            failures=tuple(BatchItemFailure.from_proto(f) for f in response.failures),
            next_failures_page_token=response.next_failures_page_token,
        )

    @yielding
    def list_batch_operations(
        self,
        *,
        state: BatchState | str | None = None,
        page_size: int | None = None,
        timeout: float | None = None,
    ) -> Feed[BatchOperation]:
        """Yields every batch (only those in ``state``, if given), newest first, across all
        pages (fetched lazily)."""
        request = batch_pb.ListBatchOperationsRequest(page_size=page_size or 0)
        if state is not None:
            request.state = BatchState.parse(state).to_proto()
        token: str | None = ""
        while token is not None:
            request.page_token = token
            response: batch_pb.ListBatchOperationsResponse = yield Unary(
                "ListBatchOperations", request, timeout
            )
            yield from (BatchOperation.from_proto(b) for b in response.batches)
            token = response.next_page_token or None

    @returning
    def cancel_batch_operation(
        self, name: str, reason: str, *, timeout: float | None = None
    ) -> Plan[BatchOperation]:
        """Stops a running batch: no instance is started on after the answer; the steps
        already applied stay. A cancelled batch is answered as it is; a completed one is
        refused (FAILED_PRECONDITION, reason BATCH_FINISHED)."""
        request = batch_pb.CancelBatchOperationRequest(name=batch_name(name), reason=reason)
        response: batch_pb.CancelBatchOperationResponse = yield Unary(
            "CancelBatchOperation", request, timeout
        )
        return BatchOperation.from_proto(response.batch)

    @yielding
    def follow_batch_operation(
        self, name: str, *, interval: float = 1.0, timeout: float | None = None
    ) -> Feed[BatchOperation]:
        """Yields the batch now, then again each time its state or counts changed (read
        every ``interval`` seconds), and stops after it has finished: the last batch yielded
        is COMPLETED or CANCELLED. ``timeout`` bounds each read."""
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval!r}")
        request = batch_pb.GetBatchOperationRequest(name=batch_name(name), failures_page_size=1)
        seen: tuple[object, ...] | None = None
        while True:
            response: batch_pb.GetBatchOperationResponse = yield Unary(
                "GetBatchOperation", request, timeout
            )
            batch = BatchOperation.from_proto(response.batch)
            progress = (batch.state, batch.matched, batch.done, batch.failed)
            if progress != seen:
                seen = progress
                yield batch
            if batch.finished:
                return
            yield Sleep(interval)


def schedule_name(name: str) -> str:
    """``schedules/ID`` for ``ID`` or ``schedules/ID``."""
    return name if name.startswith("schedules/") else f"schedules/{name}"


def _first(
    feed: Feed[WatchEvent], stop: Callable[[WatchEvent], bool]
) -> Generator[Effect, object, WatchEvent | None]:
    """Drives ``feed`` inside another plan until an event passes ``stop`` (None: the feed
    ended first); the feed is closed either way, which ends its stream."""
    outcome: object = None
    error: StatewrightError | None = None
    try:
        while True:
            try:
                step = feed.send(outcome) if error is None else feed.throw(error)
            except StopIteration:
                return None
            outcome, error = None, None
            if isinstance(step, Effect):
                try:
                    outcome = yield step
                except StatewrightError as exc:
                    error = exc
            elif stop(step):
                return step
    finally:
        feed.close()
