"""Client and AsyncClient against a scripted fake server on loopback (no statewrightd)."""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from statewright import (
    AsyncClient,
    Client,
    NotFound,
    RevisionMismatch,
    SignalRejection,
    StatewrightError,
    WatchEventType,
    WorkflowNotFound,
    WorkflowStatus,
)
from statewright.v1 import definition_pb2, diagnostics_pb2, workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.fakes import FakeServer, abort, workflow

WAITING = workflow_pb2.WORKFLOW_STATUS_WAITING
RUNNING = workflow_pb2.WORKFLOW_STATUS_RUNNING
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED


def _flaky(failures: int, response: Any) -> Any:
    """Fails the first ``failures`` calls with UNAVAILABLE, then answers ``response``."""
    counter = itertools.count()

    def behaviour(request: Any, context: grpc.ServicerContext) -> Any:
        if next(counter) < failures:
            abort(context, grpc.StatusCode.UNAVAILABLE, message="storage down")
        return response

    return behaviour


def test_start_converts_input_and_returns_a_plain_view(fake: FakeServer, client: Client) -> None:
    wf = workflow()
    wf.context.update({"topic": "x", "attempts": 2})
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=wf,
        transitions=[workflow_pb2.Transition(from_state="draft", to_state="awaiting_approval")],
        created=True,
    )
    result = client.start("mail-approval", {"topic": "x", "attempts": 2}, workflow_id="w")
    (request,) = fake.service.calls("StartWorkflow")
    assert request.definition == "mail-approval"
    assert request.workflow_id == "w"
    assert request.input.fields["attempts"].number_value == 2.0
    assert request.request_id  # generated, so a retry is idempotent
    assert result.created
    assert result.workflow.status is WorkflowStatus.WAITING
    assert result.workflow.context == {"topic": "x", "attempts": 2}
    assert result.transitions[0].to_state == "awaiting_approval"


def test_unavailable_is_retried_with_the_same_request_id(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["StartWorkflow"] = _flaky(
        2, pb.StartWorkflowResponse(workflow=workflow(), created=True)
    )
    result = client.start("mail-approval")
    requests = fake.service.calls("StartWorkflow")
    assert len(requests) == 3
    assert len({r.request_id for r in requests}) == 1
    assert result.workflow.revision == 1


def test_other_codes_are_never_retried_and_arrive_typed(fake: FakeServer, client: Client) -> None:
    def mismatch(request: Any, context: grpc.ServicerContext) -> Any:
        abort(
            context,
            grpc.StatusCode.ABORTED,
            "REVISION_MISMATCH",
            {"actual_revision": "1", "expected_revision": "99", "workflow_id": "w"},
        )

    fake.service.behaviours["ResumeWorkflow"] = mismatch
    with pytest.raises(RevisionMismatch) as caught:
        client.resume("w", "approve", expected_revision=99)
    assert caught.value.actual_revision == 1
    assert caught.value.code is grpc.StatusCode.ABORTED
    assert len(fake.service.calls("ResumeWorkflow")) == 1
    assert fake.service.calls("ResumeWorkflow")[0].name == "workflows/w"


def test_retries_give_up_after_the_policy_attempts(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["GetWorkflow"] = _flaky(100, None)
    with pytest.raises(StatewrightError) as caught:
        client.get("w")
    assert caught.value.code is grpc.StatusCode.UNAVAILABLE
    assert len(fake.service.calls("GetWorkflow")) == 5  # maxAttempts in the service config


def test_every_unary_call_has_a_deadline(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=workflow()
    )
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=workflow()
    )
    with Client(fake.target) as default, Client(fake.target, timeout=3.0) as short:
        default.get("w")
        default.start("mail-approval")
        short.get("w")
        default.get("w", timeout=1.0)
    remaining = [seconds for _, seconds in fake.service.remaining]
    assert all(r is not None for r in remaining)
    read, write, overridden, per_call = (r or 0.0 for r in remaining)
    # Slack above the limit: the server measures against its own clock reading.
    assert 8.0 < read <= 10.5
    assert 28.0 < write <= 30.5
    assert 2.0 < overridden <= 3.5
    assert 0.0 < per_call <= 1.5


def test_signal_reports_rejections(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["SignalWorkflow"] = lambda r, c: pb.SignalWorkflowResponse(
        accepted=False,
        reason=pb.SIGNAL_REJECTION_NOT_RUNNING,
        workflow=workflow(status=COMPLETED),
    )
    result = client.signal("workflows/w", "score", {"score": 0.1})
    assert not result.accepted
    assert result.reason is SignalRejection.NOT_RUNNING
    (request,) = fake.service.calls("SignalWorkflow")
    assert request.payload.fields["score"].number_value == 0.1


def test_signal_with_start_sends_every_field_and_reports_started(
    fake: FakeServer, client: Client
) -> None:
    fake.service.behaviours["SignalWithStartWorkflow"] = _flaky(
        1,
        pb.SignalWithStartWorkflowResponse(
            workflow=workflow(status=RUNNING), started=True, accepted=True
        ),
    )
    result = client.signal_with_start(
        "tally",
        "customer-42",
        "tick",
        {"id": "a"},
        input={"limit": 3},
        if_finished="start_new",
        start_now=True,
    )
    assert result.started and result.accepted and result.reason is None
    first, retry = fake.service.calls("SignalWithStartWorkflow")
    assert first.request_id and retry.request_id == first.request_id
    assert (first.definition, first.workflow_id, first.event) == ("tally", "customer-42", "tick")
    assert first.payload.fields["id"].string_value == "a"
    assert first.input.fields["limit"].number_value == 3
    assert first.if_finished == pb.IF_FINISHED_POLICY_START_NEW and first.start_now
    with pytest.raises(ValueError, match="if_finished"):
        client.signal_with_start("tally", "c", "tick", if_finished="restart")  # type: ignore[arg-type]


def test_retry_and_reset_send_every_field_and_return_the_changes(
    fake: FakeServer, client: Client
) -> None:
    after = struct_pb2.Value(string_value="new")
    changes = [
        pb.ContextChange(field="by", before=struct_pb2.Value(string_value="old"), after=after)
    ]
    fake.service.behaviours["RetryWorkflow"] = lambda r, c: pb.RetryWorkflowResponse(
        workflow=workflow(status=RUNNING), dry_run=True
    )
    fake.service.behaviours["ResetWorkflow"] = _flaky(
        1, pb.ResetWorkflowResponse(workflow=workflow(status=WAITING), context_changes=changes)
    )
    retried = client.retry("w", "bank is back", expected_revision=2, dry_run=True)
    assert retried.dry_run and retried.workflow.status is WorkflowStatus.RUNNING
    (request,) = fake.service.calls("RetryWorkflow")
    assert (request.name, request.reason, request.expected_revision) == (
        "workflows/w",
        "bank is back",
        2,
    )
    assert request.dry_run and request.request_id
    reset = client.reset("workflows/w", 2, "by mistake")
    assert not reset.dry_run and reset.workflow.status is WorkflowStatus.WAITING
    assert [c.to_dict() for c in reset.context_changes] == [
        {"field": "by", "before": "old", "after": "new"}
    ]
    first, again = fake.service.calls("ResetWorkflow")
    assert (first.to_revision, first.reason) == (2, "by mistake")
    assert again.request_id == first.request_id, "a retried reset is the same request"


def test_migrate_sends_every_field_and_returns_the_plan(fake: FakeServer, client: Client) -> None:
    plan = pb.MigrationPlan(
        from_version=1,
        to_version=2,
        state_from="review",
        state_to="approval",
        defaulted_fields=["priority"],
        set_fields=["tier"],
        removed_fields=["note"],
        timers_disarmed=True,
        task_fate=pb.MIGRATION_TASK_FATE_CANCELLED,
        task_queue="payments",
    )
    fake.service.behaviours["MigrateWorkflow"] = _flaky(
        1, pb.MigrateWorkflowResponse(workflow=workflow(status=WAITING), plan=plan, dry_run=True)
    )
    migrated = client.migrate(
        "w",
        2,
        "renamed",
        state_map={"review": "approval"},
        set={"tier": "'gold'"},
        expected_revision=4,
        dry_run=True,
    )
    assert migrated.dry_run and migrated.workflow.status is WorkflowStatus.WAITING
    assert migrated.plan.to_dict() == {
        "from_version": 1,
        "to_version": 2,
        "state_from": "review",
        "state_to": "approval",
        "defaulted_fields": ["priority"],
        "set_fields": ["tier"],
        "removed_fields": ["note"],
        "timers_disarmed": True,
        "task_fate": "cancelled",
        "task_queue": "payments",
    }
    first, again = fake.service.calls("MigrateWorkflow")
    assert (first.name, first.to_version, first.reason, first.expected_revision) == (
        "workflows/w",
        2,
        "renamed",
        4,
    )
    assert dict(first.state_map) == {"review": "approval"} and dict(first.set) == {"tier": "'gold'"}
    assert first.dry_run and again.request_id == first.request_id


def test_pause_and_unpause_send_every_field_and_show_the_pause(
    fake: FakeServer, client: Client
) -> None:
    paused = workflow(status=RUNNING)
    paused.paused = True
    paused.pause.reason, paused.pause.actor = "incident 7", "key:ops"
    paused.pause.pause_time.FromSeconds(1_700_000_000)
    fake.service.behaviours["PauseWorkflow"] = _flaky(
        1, pb.PauseWorkflowResponse(workflow=paused, dry_run=True)
    )
    fake.service.behaviours["UnpauseWorkflow"] = lambda r, c: pb.UnpauseWorkflowResponse(
        workflow=workflow(status=RUNNING)
    )
    result = client.pause("w", "incident 7", expected_revision=3, dry_run=True)
    assert result.dry_run and result.workflow.paused
    pause = result.workflow.pause
    assert pause is not None and (pause.reason, pause.actor) == ("incident 7", "key:ops")
    assert pause.to_dict()["pause_time"] == "2023-11-14T22:13:20Z"
    first, again = fake.service.calls("PauseWorkflow")
    assert (first.name, first.reason, first.expected_revision, first.dry_run) == (
        "workflows/w",
        "incident 7",
        3,
        True,
    )
    assert again.request_id == first.request_id, "a retried pause is the same request"
    unpaused = client.unpause("workflows/w", "over")
    assert not unpaused.dry_run and not unpaused.workflow.paused
    assert unpaused.workflow.pause is None
    (request,) = fake.service.calls("UnpauseWorkflow")
    assert (request.reason, request.dry_run) == ("over", False)


def test_start_sends_a_start_delay(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=workflow(), created=True
    )
    client.start("tally", start_delay=90.5)
    (request,) = fake.service.calls("StartWorkflow")
    assert request.start_delay.ToTimedelta().total_seconds() == 90.5


def test_list_follows_page_tokens(fake: FakeServer, client: Client) -> None:
    def pages(request: pb.ListWorkflowsRequest, context: grpc.ServicerContext) -> Any:
        page = int(request.page_token or "0")
        size = 2 if page < 2 else 1
        return pb.ListWorkflowsResponse(
            workflows=[workflow(f"o-{page}-{i}", status=COMPLETED) for i in range(size)],
            next_page_token=str(page + 1) if page < 2 else "",
        )

    fake.service.behaviours["ListWorkflows"] = pages
    ids = [w.workflow_id for w in client.list(definition="order-pricing", page_size=2)]
    assert ids == ["o-0-0", "o-0-1", "o-1-0", "o-1-1", "o-2-0"]
    requests = fake.service.calls("ListWorkflows")
    assert [r.page_token for r in requests] == ["", "1", "2"]
    assert {r.page_size for r in requests} == {2}
    assert {r.definition for r in requests} == {"order-pricing"}
    pages_seen = list(client.list_pages(page_size=2))
    assert [p.next_page_token for p in pages_seen] == ["1", "2", ""]
    newest = list(client.list(order_by="create_time desc", id_prefix="o-"))
    assert len(newest) == 5
    ordered = fake.service.calls("ListWorkflows")[-3:]
    assert {(r.order_by, r.id_prefix) for r in ordered} == {("create_time desc", "o-")}
    assert [r.page_token for r in ordered] == ["", "1", "2"]


def test_list_sends_its_filter_and_count_reads_by_status(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse(
        workflows=[workflow("a")]
    )
    text = 'status = WAITING AND search.customer = "c-42"'
    assert [w.workflow_id for w in client.list(filter=text)] == ["a"]
    assert fake.service.calls("ListWorkflows")[-1].filter == text
    fake.service.behaviours["CountWorkflows"] = lambda r, c: pb.CountWorkflowsResponse(
        total=5,
        by_status=[
            pb.StatusCount(status=WAITING, count=2),
            pb.StatusCount(status=COMPLETED, count=3),
        ],
    )
    counted = client.count(text)
    assert fake.service.calls("CountWorkflows")[-1].filter == text
    assert counted.total == 5
    assert counted.by_status == {WorkflowStatus.WAITING: 2, WorkflowStatus.COMPLETED: 3}
    assert counted.to_dict() == {"total": 5, "by_status": {"WAITING": 2, "COMPLETED": 3}}


def test_list_is_lazy(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse(
        workflows=[workflow("a"), workflow("b")], next_page_token="more"
    )
    first = next(iter(client.list(page_size=2)))
    assert first.workflow_id == "a"
    assert len(fake.service.calls("ListWorkflows")) == 1


def _step(revision: int, status: int, kind: int = pb.WATCH_EVENT_TYPE_STEP) -> Any:
    return pb.WatchWorkflowResponse(
        type=kind,  # type: ignore[arg-type]
        revision=revision,
        workflow=workflow(revision=revision, status=status),
        event="approve" if kind == pb.WATCH_EVENT_TYPE_STEP else "",
    )


def _dropping_watch() -> Any:
    """First stream: CURRENT r1, STEP r2, then the connection drops. Second stream (which
    must ask for after_revision=2): a replayed r2, then r3 terminal."""
    streams = itertools.count()

    def behaviour(request: pb.WatchWorkflowRequest, context: grpc.ServicerContext) -> Any:
        n = next(streams)

        def messages() -> Iterator[pb.WatchWorkflowResponse]:
            if n == 0:
                assert not request.HasField("after_revision")
                yield _step(1, WAITING, pb.WATCH_EVENT_TYPE_CURRENT)
                yield _step(2, RUNNING)
                abort(context, grpc.StatusCode.UNAVAILABLE, message="server restarting")
            else:
                yield _step(2, RUNNING)
                yield _step(3, COMPLETED)

        return messages()

    return behaviour


def test_watch_resumes_after_a_drop_and_delivers_each_revision_once(
    fake: FakeServer, client: Client
) -> None:
    fake.service.behaviours["WatchWorkflow"] = _dropping_watch()
    events = list(client.watch("w", reconnect_budget=5.0))
    assert [(e.type, e.revision) for e in events] == [
        (WatchEventType.CURRENT, 1),
        (WatchEventType.STEP, 2),
        (WatchEventType.STEP, 3),
    ]
    requests = fake.service.calls("WatchWorkflow")
    assert len(requests) == 2
    assert requests[1].after_revision == 2
    assert events[-1].workflow.terminal


def test_watch_raises_final_errors_without_reconnecting(fake: FakeServer, client: Client) -> None:
    def missing(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND", {"workflow_id": "w"})

    fake.service.behaviours["WatchWorkflow"] = missing
    with pytest.raises(WorkflowNotFound):
        list(client.watch("w"))
    assert len(fake.service.calls("WatchWorkflow")) == 1


def test_watch_that_ends_quietly_checks_whether_the_instance_is_done(
    fake: FakeServer, client: Client
) -> None:
    # A watch opened after the terminal revision: the stream ends OK with nothing to send.
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter(())
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=workflow(revision=3, status=COMPLETED)
    )
    assert list(client.watch("w", after_revision=3)) == []
    assert len(fake.service.calls("WatchWorkflow")) == 1


def test_watch_gives_up_after_its_reconnect_budget(fake: FakeServer, client: Client) -> None:
    def down(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, grpc.StatusCode.UNAVAILABLE, message="down")

    fake.service.behaviours["WatchWorkflow"] = down
    with pytest.raises(StatewrightError) as caught:
        list(client.watch("w", reconnect_budget=0.3))
    assert caught.value.code is grpc.StatusCode.UNAVAILABLE


def test_stopping_a_watch_early_cancels_the_stream(fake: FakeServer, client: Client) -> None:
    released = threading.Event()

    def endless(request: Any, context: grpc.ServicerContext) -> Any:
        context.add_callback(released.set)

        def messages() -> Iterator[pb.WatchWorkflowResponse]:
            yield _step(1, RUNNING, pb.WATCH_EVENT_TYPE_CURRENT)
            released.wait(5)

        return messages()

    fake.service.behaviours["WatchWorkflow"] = endless
    watch = client.watch("w")
    assert next(watch).revision == 1
    watch.close()
    assert released.wait(5), "the server never saw the stream end"


def test_diagnostics_and_definitions(fake: FakeServer, client: Client) -> None:
    fake.service.behaviours["GetDiagnostics"] = lambda r, c: pb.GetDiagnosticsResponse(
        build=diagnostics_pb2.BuildInfo(version="0.1.0"),
        definitions=["definitions/mail-approval/versions/1"],
    )

    def definitions(request: pb.ListDefinitionsRequest, context: grpc.ServicerContext) -> Any:
        token = request.page_token
        return pb.ListDefinitionsResponse(
            definitions=[definition_pb2.Definition(name=f"definitions/d{token or 0}/versions/1")],
            next_page_token="" if token else "1",
        )

    fake.service.behaviours["ListDefinitions"] = definitions
    quantity = definition_pb2.ContextField(name="quantity", type="int", reducer="replace")
    quantity.default_value.number_value = 1
    notes = definition_pb2.ContextField(name="notes", type="list", reducer="append")
    notes.default_value.list_value.SetInParent()
    reason = definition_pb2.ContextField(name="reason", type="string", nullable=True)
    reason.default_value.null_value = struct_pb2.NULL_VALUE
    fake.service.behaviours["GetDefinition"] = lambda r, c: pb.GetDefinitionResponse(
        definition=definition_pb2.Definition(
            name=r.name, states=["draft"], context_fields=[quantity, notes, reason]
        )
    )
    assert client.diagnostics().build.version == "0.1.0"
    assert [d.name for d in client.definitions()] == [
        "definitions/d0/versions/1",
        "definitions/d1/versions/1",
    ]
    one = client.definition("mail-approval", 1)
    assert one.name == "definitions/mail-approval/versions/1"
    assert one.states == ("draft",)
    assert [(f.name, f.type, f.reducer, f.default, f.nullable) for f in one.context_fields] == [
        ("quantity", "int", "replace", 1, False),
        ("notes", "list", "append", [], False),
        ("reason", "string", "", None, True),
    ]
    assert type(one.context_fields[0].default) is int
    assert one.context_fields[0].to_dict() == {
        "name": "quantity",
        "type": "int",
        "reducer": "replace",
        "default": 1,
        "nullable": False,
    }


def test_connection_refused_maps_to_unavailable_after_retries() -> None:
    with Client("127.0.0.1:1", timeout=2.0) as client, pytest.raises(StatewrightError) as caught:
        client.get("w")
    assert caught.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def test_target_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEWRIGHT_TARGET", "127.0.0.2:999")
    with Client() as client:
        assert client.target == "127.0.0.2:999"
    monkeypatch.delenv("STATEWRIGHT_TARGET")
    with Client() as client:
        assert client.target == "127.0.0.1:50051"


# --- AsyncClient: the same contract over grpc.aio ----------------------------------------


async def test_async_start_resume_and_typed_errors(fake: FakeServer) -> None:
    fake.service.behaviours["StartWorkflow"] = _flaky(
        1, pb.StartWorkflowResponse(workflow=workflow(), created=True)
    )
    fake.service.behaviours["ResumeWorkflow"] = lambda r, c: pb.ResumeWorkflowResponse(
        workflow=workflow(revision=2, status=COMPLETED)
    )

    def missing(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND", {"workflow_id": "x"})

    fake.service.behaviours["GetWorkflow"] = missing
    async with AsyncClient(fake.target) as client:
        started = await client.start("mail-approval", {"topic": "x"})
        resumed = await client.resume(started.workflow.name, "approve", expected_revision=1)
        with pytest.raises(NotFound) as caught:
            await client.get("x")
    assert resumed.workflow.status is WorkflowStatus.COMPLETED
    assert isinstance(caught.value, WorkflowNotFound)
    assert caught.value.workflow_id == "x"
    starts = fake.service.calls("StartWorkflow")
    assert len(starts) == 2 and starts[0].request_id == starts[1].request_id
    assert all(seconds is not None for _, seconds in fake.service.remaining)


async def test_async_list_and_watch_resume(fake: FakeServer) -> None:
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse(
        workflows=[workflow(f"p{r.page_token or 0}")],
        next_page_token="" if r.page_token else "1",
    )
    fake.service.behaviours["WatchWorkflow"] = _dropping_watch()
    async with AsyncClient(fake.target) as client:
        ids = [w.workflow_id async for w in client.list(page_size=1)]
        revisions = [e.revision async for e in client.watch("w", reconnect_budget=5.0)]
    assert ids == ["p0", "p1"]
    assert revisions == [1, 2, 3]
    assert fake.service.calls("WatchWorkflow")[1].after_revision == 2


async def test_async_stopping_a_watch_early_cancels_the_stream(fake: FakeServer) -> None:
    released = threading.Event()

    def endless(request: Any, context: grpc.ServicerContext) -> Any:
        context.add_callback(released.set)

        def messages() -> Iterator[pb.WatchWorkflowResponse]:
            yield _step(1, RUNNING, pb.WATCH_EVENT_TYPE_CURRENT)
            released.wait(5)

        return messages()

    fake.service.behaviours["WatchWorkflow"] = endless
    async with AsyncClient(fake.target) as client:
        watch = client.watch("w")
        assert (await anext(watch)).revision == 1
        await watch.aclose()
        assert await asyncio.to_thread(released.wait, 5), "the server never saw the stream end"


def test_both_clients_offer_the_same_methods_with_the_same_parameters() -> None:
    public = {name for name in dir(Client) if not name.startswith("_")}
    assert public == {name for name in dir(AsyncClient) if not name.startswith("_")}
    assert {"start", "resume", "signal", "get", "cancel", "watch", "definitions"} <= public
    assert {"poll_tasks", "list_tasks"} <= public
    unary = {
        "start",
        "execute",
        "resume",
        "signal",
        "signal_with_start",
        "get",
        "cancel",
        "diagnostics",
    }
    unary |= {"workflow_diagnostics", "definition", "count"}
    unary |= {"poll_tasks", "heartbeat_task", "complete_task", "fail_task", "get_task"}
    unary |= {"set_queue_config", "get_queue_config", "list_queues"}
    unary |= {"create_schedule", "get_schedule", "update_schedule"}
    unary |= {"delete_schedule", "pause_schedule", "unpause_schedule", "trigger_schedule"}
    unary |= {"backfill_schedule", "retry", "reset", "migrate", "pause", "unpause"}
    unary |= {"start_batch_operation", "get_batch_operation", "cancel_batch_operation"}
    for name in public - {"close", "target"}:
        sync, aio = getattr(Client, name), getattr(AsyncClient, name)
        assert inspect.signature(sync) == inspect.signature(aio), name
        assert sync.__doc__ and sync.__doc__ == aio.__doc__, name
        assert inspect.iscoroutinefunction(aio) == (name in unary), name
