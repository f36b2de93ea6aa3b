"""What the sync and async clients share: channel options, deadlines, requests, watch state.

Keeping request building and the watch bookkeeping here means :class:`statewright.Client`
and :class:`statewright.AsyncClient` differ only in how they wait for the network.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, Literal

import grpc
from google.protobuf import duration_pb2

from statewright.errors import StatewrightError
from statewright.models import (
    ContextChange,
    MigrationPlan,
    MigrationResult,
    PauseResult,
    RepairResult,
    SignalRejection,
    SignalResult,
    SignalWithStartResult,
    StartResult,
    StepResult,
    Task,
    TaskOutcome,
    Transition,
    WatchEvent,
    Workflow,
    WorkflowStatus,
    workflow_name,
)
from statewright.v1 import task_pb2, workflow_pb2
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb
from statewright.values import to_struct

SERVICE = "statewright.v1.WorkflowService"
TASK_SERVICE = "statewright.v1.TaskService"
BATCH_SERVICE = "statewright.v1.BatchService"

IfExists = Literal["fail", "return_existing", "restart"]
# What execute() waits for: "rest" (WAITING, or finished) or "finish" (COMPLETED, FAILED
# or CANCELLED).
Until = Literal["rest", "finish"]
IfFinished = Literal["refuse", "start_new"]

_DURATION = re.compile(r"^(\d+(?:\.\d+)?)s$")


@cache
def service_config_json() -> str:
    """The shared gRPC service config (retry UNAVAILABLE only, per-method timeouts).

    Shipped as package data: a copy of ``clients/service-config.json`` that a unit test
    keeps identical to the shared file.
    """
    return resources.files("statewright").joinpath("service_config.json").read_text("utf-8")


def parse_duration(text: str) -> float:
    """A proto3 JSON duration (``"10s"``, ``"0.1s"``) in seconds."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"not a proto3 JSON duration: {text!r}")
    return float(match.group(1))


@cache
def method_timeouts() -> dict[str, float]:
    """Default deadline per RPC method name, read from the service config's ``timeout``s.

    The client sets these as explicit deadlines too, so a call has a deadline even on a
    channel built without the service config. Method names are unique across the
    services, so a bare name is enough.
    """
    timeouts: dict[str, float] = {}
    for entry in json.loads(service_config_json())["methodConfig"]:
        if "timeout" not in entry:
            continue
        seconds = parse_duration(entry["timeout"])
        for name in entry["name"]:
            if name.get("service") in (SERVICE, TASK_SERVICE, BATCH_SERVICE) and "method" in name:
                timeouts[name["method"]] = seconds
    return timeouts


# gRPC's default reconnect backoff starts at 1 s and grows to 120 s; while it waits, every
# call fails at once with UNAVAILABLE, so the retry policy (about 4 s in all) can run out
# before the channel even tries a restarted server again. Capping it at the retry policy's
# own maximum backoff lets a restarted server be picked up within about two seconds.
_RECONNECT_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
)


ChannelOptions = list[tuple[str, Any]]


def channel_options(extra: Sequence[tuple[str, Any]] = ()) -> ChannelOptions:
    """Channel options that install the service config, turn retries on and keep the
    reconnect backoff short; ``extra`` options replace defaults with the same key."""
    options: dict[str, Any] = {
        "grpc.service_config": service_config_json(),
        "grpc.enable_retries": 1,
        **dict(_RECONNECT_OPTIONS),
    }
    options.update(dict(extra))
    return list(options.items())


def set_struct(field: Any, values: Mapping[str, object] | None) -> None:
    """Fills an optional Struct field of a request; None leaves it unset."""
    if values is not None:
        field.CopyFrom(to_struct(values))


def new_request_id() -> str:
    # Every mutating call carries an idempotency key, so a transparent retry of the same
    # bytes (UNAVAILABLE after the server applied the step) returns the original answer
    # instead of applying the step twice or failing with ALREADY_EXISTS.
    return uuid.uuid4().hex


_IF_EXISTS: dict[str, pb.IfExistsPolicy.ValueType] = {
    "fail": pb.IF_EXISTS_POLICY_FAIL,
    "return_existing": pb.IF_EXISTS_POLICY_RETURN_EXISTING,
    "restart": pb.IF_EXISTS_POLICY_RESTART,
}


_IF_FINISHED: dict[str, pb.IfFinishedPolicy.ValueType] = {
    "refuse": pb.IF_FINISHED_POLICY_REFUSE,
    "start_new": pb.IF_FINISHED_POLICY_START_NEW,
}


def start_request(
    definition: str,
    *,
    input: Mapping[str, object] | None,
    workflow_id: str | None,
    version: int | None,
    request_id: str | None,
    if_exists: IfExists | None,
    start_delay: float | None = None,
    recursion_limit: int | None = None,
) -> pb.StartWorkflowRequest:
    request = pb.StartWorkflowRequest(
        definition=definition,
        version=version or 0,
        workflow_id=workflow_id or "",
        request_id=request_id or new_request_id(),
        recursion_limit=recursion_limit or 0,
    )
    set_struct(request.input, input)
    if if_exists is not None:
        if if_exists not in _IF_EXISTS:
            raise ValueError(f"if_exists must be one of {sorted(_IF_EXISTS)}, not {if_exists!r}")
        request.if_exists = _IF_EXISTS[if_exists]
    if start_delay:
        request.start_delay.CopyFrom(
            duration_pb2.Duration(
                seconds=int(start_delay), nanos=round((start_delay % 1) * 1_000_000_000)
            )
        )
    return request


def signal_with_start_request(
    definition: str,
    workflow_id: str,
    event: str,
    *,
    payload: Mapping[str, object] | None,
    input: Mapping[str, object] | None,
    version: int | None,
    request_id: str | None,
    if_finished: IfFinished | None,
    start_now: bool,
    recursion_limit: int | None = None,
) -> pb.SignalWithStartWorkflowRequest:
    request = pb.SignalWithStartWorkflowRequest(
        definition=definition,
        version=version or 0,
        workflow_id=workflow_id,
        event=event,
        request_id=request_id or new_request_id(),
        start_now=start_now,
        recursion_limit=recursion_limit or 0,
    )
    set_struct(request.payload, payload)
    set_struct(request.input, input)
    if if_finished is not None:
        if if_finished not in _IF_FINISHED:
            raise ValueError(
                f"if_finished must be one of {sorted(_IF_FINISHED)}, not {if_finished!r}"
            )
        request.if_finished = _IF_FINISHED[if_finished]
    return request


def resume_request(
    name: str,
    *,
    event: str | None,
    input: Mapping[str, object] | None,
    expected_revision: int | None,
    request_id: str | None,
) -> pb.ResumeWorkflowRequest:
    request = pb.ResumeWorkflowRequest(
        name=workflow_name(name),
        event=event or "",
        expected_revision=expected_revision or 0,
        request_id=request_id or new_request_id(),
    )
    set_struct(request.input, input)
    return request


def signal_request(
    name: str,
    event: str,
    *,
    payload: Mapping[str, object] | None,
    request_id: str | None,
) -> pb.SignalWorkflowRequest:
    request = pb.SignalWorkflowRequest(
        name=workflow_name(name), event=event, request_id=request_id or new_request_id()
    )
    set_struct(request.payload, payload)
    return request


def cancel_request(
    name: str, *, reason: str | None, expected_revision: int | None, request_id: str | None
) -> pb.CancelWorkflowRequest:
    return pb.CancelWorkflowRequest(
        name=workflow_name(name),
        reason=reason or "",
        expected_revision=expected_revision or 0,
        request_id=request_id or new_request_id(),
    )


def repair_fields(
    name: str,
    *,
    reason: str | None,
    expected_revision: int | None,
    request_id: str | None,
    dry_run: bool,
) -> dict[str, Any]:
    """The fields the requests of RetryWorkflow, ResetWorkflow, PauseWorkflow and
    UnpauseWorkflow share, with their defaults."""
    return {
        "name": workflow_name(name),
        "reason": reason or "",
        "expected_revision": expected_revision or 0,
        "request_id": request_id or new_request_id(),
        "dry_run": dry_run,
    }


def pause_result(
    response: pb.PauseWorkflowResponse | pb.UnpauseWorkflowResponse,
) -> PauseResult:
    return PauseResult(workflow=Workflow.from_proto(response.workflow), dry_run=response.dry_run)


def repair_result(response: pb.RetryWorkflowResponse | pb.ResetWorkflowResponse) -> RepairResult:
    return RepairResult(
        workflow=Workflow.from_proto(response.workflow),
        context_changes=tuple(ContextChange.from_proto(c) for c in response.context_changes),
        dry_run=response.dry_run,
    )


def migration_result(response: pb.MigrateWorkflowResponse) -> MigrationResult:
    return MigrationResult(
        plan=MigrationPlan.from_proto(response.plan),
        workflow=Workflow.from_proto(response.workflow),
        context_changes=tuple(ContextChange.from_proto(c) for c in response.context_changes),
        dry_run=response.dry_run,
    )


def list_request(
    *,
    definition: str | None,
    status: WorkflowStatus | str | None,
    page_size: int | None,
    page_token: str,
    order_by: str | None = None,
    id_prefix: str | None = None,
    filter: str | None = None,
) -> pb.ListWorkflowsRequest:
    request = pb.ListWorkflowsRequest(
        definition=definition or "",
        page_size=page_size or 0,
        page_token=page_token,
        order_by=order_by or "",
        id_prefix=id_prefix or "",
        filter=filter or "",
    )
    if status is not None:
        request.status = WorkflowStatus.parse(status).to_proto()
    return request


def step_result(
    workflow: workflow_pb2.Workflow, transitions: Sequence[workflow_pb2.Transition]
) -> StepResult:
    return StepResult(
        workflow=Workflow.from_proto(workflow),
        transitions=tuple(Transition.from_proto(t) for t in transitions),
    )


def start_result(response: pb.StartWorkflowResponse) -> StartResult:
    return StartResult(
        workflow=Workflow.from_proto(response.workflow),
        transitions=tuple(Transition.from_proto(t) for t in response.transitions),
        created=response.created,
    )


def signal_result(response: pb.SignalWorkflowResponse) -> SignalResult:
    return SignalResult(
        accepted=response.accepted,
        reason=None if response.accepted else SignalRejection.from_proto(response.reason),
        workflow=Workflow.from_proto(response.workflow),
        transitions=tuple(Transition.from_proto(t) for t in response.transitions),
    )


def signal_with_start_result(
    response: pb.SignalWithStartWorkflowResponse,
) -> SignalWithStartResult:
    return SignalWithStartResult(
        started=response.started,
        accepted=response.accepted,
        reason=None if response.accepted else SignalRejection.from_proto(response.reason),
        workflow=Workflow.from_proto(response.workflow),
        transitions=tuple(Transition.from_proto(t) for t in response.transitions),
    )


# Transport-level failures of a watch stream that a reconnect can cure. A status carrying
# an ErrorInfo reason came from the server's own logic and is final, except SHUTTING_DOWN
# (a draining replica: another one, or the restarted one, will serve the resumed watch).
_RESUMABLE_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)


def resumable(error: StatewrightError) -> bool:
    if error.code is grpc.StatusCode.UNAVAILABLE or error.retry_delay is not None:
        return True  # a RetryInfo (RATE_LIMITED) is the server saying when to try again
    return error.code in _RESUMABLE_CODES and not error.reason


@dataclass
class Backoff:
    """Exponential backoff with jitter, bounded by a time budget since the last progress.

    Mirrors the service config's policy (0.1s doubling to 2s) for the one thing gRPC's own
    retries cannot do: resume a stream that already delivered messages.
    """

    initial: float = 0.1
    maximum: float = 2.0
    multiplier: float = 2.0
    budget: float = 30.0
    _next: float = field(default=0.0, init=False)
    _since: float | None = field(default=None, init=False)

    def reset(self) -> None:
        self._next = 0.0
        self._since = None

    def delay(self, at_least: float | None = None) -> float | None:
        """Seconds to wait before the next attempt (no less than ``at_least``, the server's
        RetryInfo), or None when the budget is spent."""
        now = time.monotonic()
        if self._since is None:
            self._since = now
        if now - self._since >= self.budget:
            return None
        self._next = (
            self.initial if self._next == 0.0 else min(self._next * self.multiplier, self.maximum)
        )
        # Equal jitter: never less than half the step, so a restarting server is not hammered.
        jittered = self._next / 2 + random.uniform(0, self._next / 2)
        return jittered if at_least is None else max(jittered, at_least)


@dataclass
class WatchCursor:
    """Where a watch stands, so a reconnect resumes right after the last delivered revision.

    The server replays history after ``after_revision``, so resuming from the last revision
    the consumer saw delivers every later revision exactly once; revisions at or below it
    (possible if a replica replays overlapping history) are dropped here.
    """

    name: str
    after_revision: int | None
    last: WatchEvent | None = None

    def request(self) -> pb.WatchWorkflowRequest:
        request = pb.WatchWorkflowRequest(name=self.name)
        if self.after_revision is not None:
            request.after_revision = self.after_revision
        return request

    def accept(self, message: pb.WatchWorkflowResponse) -> WatchEvent | None:
        if self.after_revision is not None and message.revision <= self.after_revision:
            return None
        event = WatchEvent.from_proto(message)
        self.after_revision = event.revision
        self.last = event
        return event

    @property
    def done(self) -> bool:
        """True once a terminal revision was delivered: nothing can follow it."""
        return self.last is not None and self.last.workflow.terminal

    def finished_quietly(self, current: Workflow) -> bool:
        """After a stream ended OK with no terminal revision: is there really nothing left?

        True when the instance is terminal at a revision the consumer has already seen
        (for example a watch opened with ``after_revision`` at or past the end).
        """
        seen = self.after_revision if self.after_revision is not None else -1
        return current.terminal and current.revision <= seen


def definition_name(name: str, version: int | None) -> str:
    """``definitions/{name}`` (latest) or ``definitions/{name}/versions/{version}``."""
    if name.startswith("definitions/"):
        if version is not None:
            raise ValueError("give either a resource name or a version, not both")
        return name
    base = f"definitions/{name}"
    return base if version is None else f"{base}/versions/{version}"


# --- tasks -----------------------------------------------------------------------------

# A long poll's deadline is its wait plus this much: the server answers (maybe empty) when
# the wait runs out, so the deadline only catches a server that stopped answering.
POLL_DEADLINE_MARGIN = 5.0
MAX_POLL_TASKS = 100


def default_identity() -> str:
    """Who polls, as diagnostics show it: ``pid@host``."""
    return f"{os.getpid()}@{socket.gethostname()}"


def duration(seconds: float) -> duration_pb2.Duration:
    value = duration_pb2.Duration()
    value.FromNanoseconds(round(seconds * 1e9))
    return value


# gRPC's default limit on a received message, and the range of a poll's max_bytes.
DEFAULT_RECEIVE_LIMIT = 4 * 1024 * 1024
MIN_POLL_BYTES = 16 * 1024
MAX_POLL_BYTES = 256 * 1024 * 1024


def receive_limit(options: Sequence[tuple[str, object]]) -> int:
    """The largest message a channel made with ``options`` receives (-1: no limit)."""
    limit = dict(options).get("grpc.max_receive_message_length", DEFAULT_RECEIVE_LIMIT)
    if not isinstance(limit, int) or limit < 0:
        return MAX_POLL_BYTES
    return limit


def poll_request(
    queue: str, *, identity: str | None, max_tasks: int, wait: float, max_bytes: int
) -> task_pb.PollTasksRequest:
    if not 1 <= max_tasks <= MAX_POLL_TASKS:
        raise ValueError(f"max_tasks must be 1 to {MAX_POLL_TASKS}, not {max_tasks}")
    return task_pb.PollTasksRequest(
        queue=queue,
        identity=identity or default_identity(),
        max_tasks=max_tasks,
        wait=duration(wait),
        # The server sizes its answer to this, and leases nothing it cannot send.
        max_bytes=min(max(max_bytes, MIN_POLL_BYTES), MAX_POLL_BYTES),
    )


def task_error(
    error_type: str, message: str, details: Mapping[str, object] | None
) -> task_pb2.TaskError:
    if not error_type:
        raise ValueError("a task failure needs a type")
    error = task_pb2.TaskError(type=error_type, message=message)
    set_struct(error.details, details)
    return error


def fail_request(
    name: str,
    lease_token: str,
    error: task_pb2.TaskError,
    *,
    non_retryable: bool,
    retry_delay: float | None,
    request_id: str | None,
    close_key_until: datetime | None = None,
) -> task_pb.FailTaskRequest:
    request = task_pb.FailTaskRequest(
        name=name,
        lease_token=lease_token,
        error=error,
        non_retryable=non_retryable,
        request_id=request_id or new_request_id(),
    )
    if retry_delay is not None:
        # Set even when zero: an explicit 0 s means "retry at once", not "use the policy".
        request.retry_delay.CopyFrom(duration(retry_delay))
        request.retry_delay.SetInParent()
    if close_key_until is not None:
        if close_key_until.tzinfo is None:
            raise ValueError("close_key_until must be an aware datetime (with its time zone)")
        request.close_key_until.FromDatetime(close_key_until)
    return request


def task_outcome(task: task_pb2.Task, workflow: workflow_pb2.Workflow) -> TaskOutcome:
    return TaskOutcome(task=Task.from_proto(task), workflow=Workflow.from_proto(workflow))
