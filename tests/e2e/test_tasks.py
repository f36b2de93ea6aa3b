"""Task states over real gRPC, on both backends: the worker's whole protocol.

Every scenario starts a ``task-flow`` instance routed to a task state (and a queue) of its
own, and plays the worker by hand through the TaskService: poll, heartbeat, complete,
fail, or go silent. Waits are bounded; a delay is only ever checked from below (a task is
never delivered before its backoff or its lease ends), never from above.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC

import grpc
from statewright.v1 import diagnostics_pb2, task_pb2
from statewright.v1 import task_service_pb2 as pb
from statewright.v1 import workflow_service_pb2 as wpb

from tests.support.api import (
    CANCELLED,
    COMPLETED,
    FAILED,
    RUNNING,
    Client,
    context_of,
    error_info,
    expect_error,
    uid,
)
from tests.support.server import wait_until
from tests.support.tasks import BACKOFF, LEASED, SCHEDULED, Tasks
from tests.support.tasks import CANCELLED as TASK_CANCELLED
from tests.support.tasks import COMPLETED as TASK_COMPLETED
from tests.support.tasks import FAILED as TASK_FAILED
from tests.support.tasks import TIMED_OUT as TASK_TIMED_OUT

PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def _start(client: Client, route: str) -> str:
    wid = uid(route)
    workflow = client.start("task-flow", workflow_id=wid, input={"route": route}).workflow
    assert workflow.status == RUNNING, workflow
    assert workflow.pending_task.status == SCHEDULED, workflow
    return wid


def _tasks(client: Client) -> Tasks:
    return Tasks(client.channel)


def _history_events(client: Client, wid: str) -> list[str]:
    request = wpb.WatchWorkflowRequest(name=f"workflows/{wid}", after_revision=0)
    stream = client.stub.WatchWorkflow(request, timeout=10)
    events = []
    for message in stream:
        events.append(message.event)
        if message.workflow.status not in (RUNNING,):
            break
    stream.cancel()
    return events


def test_a_completed_task_applies_its_result_through_the_reducers(client: Client) -> None:
    tasks = _tasks(client)
    wid = _start(client, "apply")
    started = client.get(wid)
    pending = started.pending_task
    assert (pending.name, pending.workflow) == (f"workflows/{wid}/tasks/1", f"workflows/{wid}")
    assert (pending.state, pending.queue, pending.attempt) == ("applying", "e2e.apply", 0)
    assert pending.lease_token == ""
    assert started.revision == 1

    task = tasks.poll_one("e2e.apply")
    assert (task.name, task.attempt, task.status) == (pending.name, 1, LEASED)
    assert task.lease_token and task.HasField("lease_expire_time")
    assert dict(task.input) == {"route": "apply", "n": 3, "id": wid}
    # The lease is the worker's alone: neither reads of the task nor the instance show it.
    shown = tasks.get(task.name)
    assert (shown.status, shown.lease_token) == (LEASED, "")
    assert client.get(wid).pending_task.status == LEASED

    beat = tasks.heartbeat(task, {"progress": 0.5})
    assert not beat.cancel_requested
    assert beat.lease_expire_time.ToDatetime() >= task.lease_expire_time.ToDatetime()
    assert dict(tasks.get(task.name).heartbeat_details) == {"progress": 0.5}
    assert client.get(wid).revision == 1, "a heartbeat is not a step"

    answer = tasks.complete(task, {"total": 42, "by": "w1"}, request_id=uid("done"))
    workflow = answer.workflow
    assert (workflow.status, workflow.state, workflow.revision) == (COMPLETED, "done", 2)
    assert not workflow.HasField("pending_task")
    assert (answer.task.status, answer.task.lease_token) == (TASK_COMPLETED, "")
    assert (answer.task.attempt, dict(answer.task.heartbeat_details)) == (1, {"progress": 0.5})
    context = context_of(workflow)
    assert context["total"] == 42.0 and context["done_by"] == "w1"
    assert context["notes"] == ["applied by w1"] and context["meta"] == {"by": "w1"}
    assert tasks.get(task.name).status == TASK_COMPLETED
    assert _history_events(client, wid) == ["", "task_completed"]


def test_a_retried_completion_gets_its_original_answer_and_a_duplicate_is_refused(
    client: Client,
) -> None:
    tasks = _tasks(client)
    wid = _start(client, "apply")
    task = tasks.poll_one("e2e.apply")
    rid = uid("done")
    first = tasks.complete(task, {"total": 1, "by": "first"}, request_id=rid)
    again = tasks.complete(task, {"total": 1, "by": "first"}, request_id=rid)
    assert again.workflow == first.workflow
    info = expect_error(
        lambda: tasks.complete(task, {"total": 2, "by": "second"}), PRECONDITION, "LEASE_SUPERSEDED"
    )
    assert info.metadata["task_id"] == "1" and info.metadata["workflow_id"] == wid
    expect_error(lambda: tasks.heartbeat(task), PRECONDITION, "LEASE_SUPERSEDED")
    final = client.get(wid)
    assert (final.revision, context_of(final)["done_by"]) == (2, "first")


def test_failed_attempts_are_retried_after_their_backoff_until_one_succeeds(
    client: Client,
) -> None:
    tasks = _tasks(client)
    _start(client, "retry")
    first = tasks.poll_one("e2e.retry")
    failed = tasks.fail(first, "FLAKY", "try again", details={"n": 1}, retry_delay=1.0)
    assert failed.task.status == BACKOFF and failed.task.last_error.type == "FLAKY"
    assert (failed.workflow.revision, failed.workflow.state) == (1, "retrying")
    failed_at = time.monotonic()
    assert tasks.poll("e2e.retry", wait=0) == [], "a task in backoff is not leased"
    second = tasks.poll_one("e2e.retry")
    waited = time.monotonic() - failed_at
    assert second.attempt == 2 and second.lease_token != first.lease_token
    assert waited >= 0.9, f"attempt 2 was delivered {waited:.2f}s after a 1s retry_delay"
    assert (second.last_error.type, second.last_error.message) == ("FLAKY", "try again")
    # The second failure takes the policy's backoff: up to 2s with full jitter.
    assert tasks.fail(second, "FLAKY").task.status == BACKOFF
    third = tasks.poll_one("e2e.retry")
    assert third.attempt == 3
    done = tasks.complete(third, {"by": "third"}).workflow
    assert (done.status, context_of(done)["done_by"], done.revision) == (COMPLETED, "third", 2)
    # A late report of an earlier attempt changes nothing.
    expect_error(lambda: tasks.complete(first, {"by": "x"}), PRECONDITION, "LEASE_SUPERSEDED")


def test_a_non_retryable_failure_fires_the_task_failed_handler(client: Client) -> None:
    tasks = _tasks(client)
    wid = _start(client, "handled")
    task = tasks.poll_one("e2e.handled")
    answer = tasks.fail(task, "CARD_DECLINED", "insufficient funds", details={"code": 51})
    assert answer.task.status == TASK_FAILED
    workflow = answer.workflow
    assert (workflow.state, workflow.status, workflow.revision) == ("recovered", COMPLETED, 2)
    assert context_of(workflow)["failure"] == {
        "type": "CARD_DECLINED",
        "message": "insufficient funds",
        "details": {"code": 51},
        "attempts": 1,
    }
    assert _history_events(client, wid) == ["", "task_failed"]
    assert tasks.get(task.name).last_error.type == "CARD_DECLINED"


def test_a_failure_with_no_handler_fails_the_instance_with_task_failed(client: Client) -> None:
    tasks = _tasks(client)
    wid = _start(client, "unhandled")
    task = tasks.poll_one("e2e.unhandled")
    answer = tasks.fail(task, "FATAL", "cannot go on", non_retryable=True)
    workflow = answer.workflow
    assert (workflow.status, workflow.state) == (FAILED, "unhandled")
    assert workflow.error.code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert "FATAL" in workflow.error.message and "cannot go on" in workflow.error.message
    assert client.get(wid).error == workflow.error
    assert answer.task.status == TASK_FAILED
    assert not client.get(wid).HasField("pending_task")


def test_a_task_out_of_attempts_gives_up(client: Client) -> None:
    tasks = _tasks(client)
    wid = _start(client, "unhandled")
    for attempt in range(1, 6):
        task = tasks.poll_one("e2e.unhandled")
        assert task.attempt == attempt
        answer = tasks.fail(task, "BROKEN", f"attempt {attempt}", retry_delay=0)
    assert answer.task.status == TASK_FAILED
    assert answer.workflow.status == FAILED
    assert client.get(wid).status == FAILED
    assert "5 attempt" in answer.workflow.error.message


def test_an_expired_lease_is_redelivered_and_the_late_completion_refused(client: Client) -> None:
    tasks = _tasks(client)
    _start(client, "expiry")
    first = tasks.poll_one("e2e.expiry")
    leased_at = time.monotonic()
    second = tasks.poll_one("e2e.expiry")  # the first worker went silent
    assert time.monotonic() - leased_at >= 0.9, "redelivered before start_to_close (1s)"
    assert second.attempt == 2 and second.last_error.type == "TIMED_OUT"
    expect_error(lambda: tasks.complete(first, {"by": "late"}), PRECONDITION, "LEASE_SUPERSEDED")
    expect_error(lambda: tasks.heartbeat(first), PRECONDITION, "LEASE_SUPERSEDED")
    done = tasks.complete(second, {"by": "second"}).workflow
    assert (done.status, context_of(done)["done_by"]) == (COMPLETED, "second")


def test_a_task_whose_every_lease_expires_times_the_instance_out(client: Client) -> None:
    tasks = _tasks(client)
    wid = _start(client, "expiry")
    for attempt in (1, 2, 3):
        assert tasks.poll_one("e2e.expiry").attempt == attempt
    assert wait_until(lambda: client.get(wid).status == FAILED, 15)
    workflow = client.get(wid)
    assert "TIMED_OUT" in workflow.error.message
    assert workflow.error.code == grpc.StatusCode.DEADLINE_EXCEEDED.value[0]
    (task,) = tasks.list(workflow=f"workflows/{wid}")
    assert task.status == TASK_TIMED_OUT and task.attempt == 3


def _cancellation(client: Client, leave: str) -> None:
    tasks = _tasks(client)
    wid = _start(client, "cancel")
    task = tasks.poll_one("e2e.cancel")
    assert not tasks.heartbeat(task).cancel_requested
    if leave == "event":
        left = client.signal(wid, "stop")
        assert left.workflow.state == "stopped" and left.workflow.status == COMPLETED
    else:
        assert client.cancel(wid, reason="not needed").status == CANCELLED
    assert tasks.heartbeat(task).cancel_requested
    assert tasks.get(task.name).status == TASK_CANCELLED
    assert not client.get(wid).HasField("pending_task")
    info = expect_error(
        lambda: tasks.complete(task, {"by": "late"}), PRECONDITION, "TASK_CANCELLED"
    )
    assert info.metadata["workflow_id"] == wid
    expect_error(lambda: tasks.fail(task, "BOOM"), PRECONDITION, "TASK_CANCELLED")
    assert tasks.poll("e2e.cancel", wait=0) == []


def test_a_completion_of_a_task_cancelled_while_its_worker_held_it_is_refused(
    client: Client,
) -> None:
    tasks = _tasks(client)
    wid = _start(client, "cancel")
    task = tasks.poll_one("e2e.cancel")
    assert client.cancel(wid, reason="not needed").status == CANCELLED
    # No heartbeat told the worker: its completion is what finds the task cancelled.
    info = expect_error(
        lambda: tasks.complete(task, {"by": "late"}), PRECONDITION, "TASK_CANCELLED"
    )
    assert (info.metadata["workflow_id"], info.metadata["queue"]) == (wid, "e2e.cancel")
    assert tasks.get(task.name).status == TASK_CANCELLED
    assert client.get(wid).revision == 2, "nothing of the completion was written"


def test_an_event_out_of_the_task_state_cancels_its_task(client: Client) -> None:
    _cancellation(client, "event")


def test_cancel_workflow_cancels_its_task(client: Client) -> None:
    _cancellation(client, "cancel")


def test_list_tasks_filters_and_pages(client: Client) -> None:
    tasks = _tasks(client)
    ids = [_start(client, "cancel") for _ in range(3)]
    listed = tasks.list(queue="e2e.cancel", status=SCHEDULED, page_size=2)
    names = {t.name for t in listed}
    assert {f"workflows/{w}/tasks/1" for w in ids} <= names
    assert all(t.lease_token == "" and t.status == SCHEDULED for t in listed)
    (one,) = tasks.list(workflow=f"workflows/{ids[0]}")
    assert one.queue == "e2e.cancel"
    for wid in ids:
        client.cancel(wid)
    assert tasks.list(queue="e2e.cancel", status=SCHEDULED) == []


def test_diagnostics_show_each_queues_backlog_and_pollers(client: Client) -> None:
    tasks = _tasks(client)
    wid = _start(client, "handled")
    tasks.poll("e2e.nobody", wait=0, identity="diagnostics-poller")

    def queue(name: str) -> diagnostics_pb2.TaskQueueDiagnostics | None:
        return next((q for q in client.diagnostics().task_queues if q.queue == name), None)

    assert wait_until(lambda: getattr(queue("e2e.handled"), "backlog", 0) >= 1, 15)
    handled = queue("e2e.handled")
    assert handled is not None and handled.oldest_scheduled_age.ToTimedelta().total_seconds() >= 0
    # No definition names e2e.nobody: its poll was answered, and nothing of it remembered.
    assert queue("e2e.nobody") is None
    task = tasks.poll_one("e2e.handled", identity="diagnostics-poller")
    polled = queue("e2e.handled")
    assert polled is not None and "diagnostics-poller" in polled.pollers
    assert polled.last_poll_time.ToDatetime(tzinfo=UTC).year >= 2026
    assert tasks.complete(task, {"by": "diag"}).workflow.workflow_id == wid


def test_bad_task_requests_are_refused_with_the_field(client: Client) -> None:
    tasks = _tasks(client)
    stub = tasks.stub

    cases: list[tuple[Callable[[], object], str]] = [
        (lambda: tasks.poll("Bad Queue", wait=0), "queue"),
        (lambda: tasks.poll("ok", wait=0, max_tasks=101), "max_tasks"),
        (lambda: tasks.poll("ok", wait=61), "wait"),
        (lambda: stub.PollTasks(pb.PollTasksRequest(queue="ok"), timeout=5), "identity"),
        (lambda: tasks.get("workflows/x/tasks/"), "name"),
        (lambda: tasks.get("workflows/x/jobs/1"), "name"),
        (
            lambda: stub.HeartbeatTask(
                pb.HeartbeatTaskRequest(name="workflows/x/tasks/1"), timeout=5
            ),
            "lease_token",
        ),
        (
            lambda: stub.FailTask(
                pb.FailTaskRequest(name="workflows/x/tasks/1", lease_token="t"), timeout=5
            ),
            "error.type",
        ),
        (
            lambda: stub.ListTasks(pb.ListTasksRequest(status=99), timeout=5),  # type: ignore[arg-type]
            "status",
        ),
        (lambda: stub.ListTasks(pb.ListTasksRequest(page_token="junk"), timeout=5), "page_token"),
    ]
    for call, field in cases:
        try:
            call()
        except grpc.RpcError as err:
            assert err.code() == INVALID, (field, err)
            assert error_info(err).metadata["field"] == field, (field, error_info(err))
        else:
            raise AssertionError(f"{field}: accepted")
    expect_error(
        lambda: tasks.get(f"workflows/{uid('none')}/tasks/1"),
        grpc.StatusCode.NOT_FOUND,
        "TASK_NOT_FOUND",
    )
    wid = _start(client, "handled")
    expect_error(lambda: client.signal(wid, "task_failed"), INVALID, "RESERVED_EVENT")
    fake = task_pb2.Task(name=f"workflows/{wid}/tasks/1", lease_token="not-the-lease")
    expect_error(lambda: tasks.complete(fake, {}), PRECONDITION, "LEASE_SUPERSEDED")
    client.cancel(wid)


def test_mail_approval_drafts_through_a_worker_when_asked(client: Client) -> None:
    tasks = _tasks(client)
    wid = uid("mail")
    started = client.start(
        "mail-approval", workflow_id=wid, input={"topic": "launch", "drafter": "worker"}
    ).workflow
    assert (started.status, started.state) == (RUNNING, "drafting")
    task = tasks.poll_one("mail.drafts")
    assert dict(task.input) == {"topic": "launch", "template": "Dear team: launch"}
    waiting = tasks.complete(task, {"text": "Hello all: we launch on Monday."}).workflow
    assert waiting.state == "awaiting_approval"
    assert context_of(waiting)["draft"] == "Hello all: we launch on Monday."
    assert client.resume(wid, "approve").workflow.status == COMPLETED
    # A drafter that gives up leaves the template's draft, and says so.
    other = uid("mail")
    client.start("mail-approval", workflow_id=other, input={"topic": "x", "drafter": "worker"})
    failing = tasks.poll_one("mail.drafts")
    answer = tasks.fail(failing, "MODEL_DOWN", "no model", non_retryable=True).workflow
    assert answer.state == "awaiting_approval"
    assert context_of(answer)["draft"] == "Dear team: x"
    assert context_of(answer)["notes"] == ["the drafter failed (no model): the template stands"]
