"""The ergonomic Python client against a real server, on PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
from statewright import (
    AsyncClient,
    Client,
    ExecutionTimedOut,
    RevisionMismatch,
    SignalRejection,
    UnknownEvent,
    WatchEvent,
    WatchEventType,
    WorkflowAlreadyExists,
    WorkflowNotFound,
    WorkflowStatus,
)
from statewright.conformance import DEFAULT_SCENARIO, Runner, load_scenario

from tests.support.server import ServerProcess


def uid(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_start_resume_complete_with_typed_errors(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        started = client.start("mail-approval", {"topic": "launch"}, workflow_id=uid("mail"))
        wf = started.workflow
        assert (wf.status, wf.state, wf.revision) == (
            WorkflowStatus.WAITING,
            "awaiting_approval",
            1,
        )
        assert wf.accepted_events == ("approve", "reject")
        assert wf.context["draft"] == "Dear team: launch"

        with pytest.raises(RevisionMismatch) as stale:
            client.resume(wf.name, "approve", expected_revision=99)
        assert stale.value.actual_revision == 1
        assert stale.value.reason == "REVISION_MISMATCH"

        with pytest.raises(UnknownEvent):
            client.resume(wf.name, "teleport")

        with pytest.raises(WorkflowAlreadyExists):
            client.start("mail-approval", workflow_id=wf.workflow_id)
        again = client.start(
            "mail-approval", workflow_id=wf.workflow_id, if_exists="return_existing"
        )
        assert not again.created and again.workflow.revision == 1

        done = client.resume(wf.workflow_id, "approve", expected_revision=1)
        assert done.workflow.status is WorkflowStatus.COMPLETED
        assert done.workflow.revision == 2
        # An integral context value comes back as int, not 2.0.
        approved_at = done.workflow.context["meta"]["approved_at_revision"]  # type: ignore[index,call-overload]
        assert approved_at == 2 and type(approved_at) is int
        assert client.get(wf.name) == done.workflow

        with pytest.raises(WorkflowNotFound) as missing:
            client.get(uid("missing"))
        assert missing.value.workflow_id.startswith("missing-")


def test_request_id_makes_a_repeated_start_idempotent(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        workflow_id, request_id = uid("idem"), uid("req")
        first = client.start("mail-approval", workflow_id=workflow_id, request_id=request_id)
        second = client.start("mail-approval", workflow_id=workflow_id, request_id=request_id)
        assert second.workflow.workflow_id == first.workflow.workflow_id
        assert second.workflow.revision == 1


def test_signals_cancel_and_paging(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        review = client.start("review-loop", {"document": "draft"}, workflow_id=uid("rev"))
        name = review.workflow.name
        low = client.signal(name, "score", {"score": 0.4})
        assert low.accepted and low.workflow.state == "improving"
        assert low.workflow.context["iterations"] == 1
        client.signal(name, "revised", {"document": "better"})
        high = client.signal(name, "score", {"score": 0.9})
        assert high.accepted and high.workflow.status is WorkflowStatus.COMPLETED
        late = client.signal(name, "score", {"score": 0.1})
        assert not late.accepted and late.reason is SignalRejection.NOT_RUNNING

        waiting = client.start("mail-approval", workflow_id=uid("cancel"))
        cancelled = client.cancel(waiting.workflow.name, "changed my mind")
        assert cancelled.status is WorkflowStatus.CANCELLED

        prefix = uid("page")
        for i in range(5):
            client.start(
                "order-pricing", {"items": ["book"], "price": 12.5}, workflow_id=f"{prefix}-{i}"
            )
        pages = list(client.list_pages(definition="order-pricing", page_size=2))
        assert len(pages) >= 3
        assert all(len(p.workflows) <= 2 for p in pages)
        ids = [w.workflow_id for w in client.list(definition="order-pricing", page_size=2)]
        assert len(ids) == len(set(ids))
        assert [i for i in ids if i.startswith(prefix)] == [f"{prefix}-{i}" for i in range(5)]
        completed = list(client.list(definition="order-pricing", status="COMPLETED"))
        assert {f"{prefix}-{i}" for i in range(5)} <= {w.workflow_id for w in completed}
        newest = client.list(order_by="create_time desc", id_prefix=prefix, page_size=2)
        assert [w.workflow_id for w in newest] == [f"{prefix}-{i}" for i in reversed(range(5))]
        first = next(iter(client.list_pages(order_by="update_time", id_prefix=f"{prefix}-3")))
        assert [w.workflow_id for w in first.workflows] == [f"{prefix}-3"]


def test_diagnostics_and_definitions(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        diagnostics = client.diagnostics()
        assert diagnostics.build.version
        assert "definitions/mail-approval/versions/2" in diagnostics.definitions
        names = [d.name for d in client.definitions()]
        assert "definitions/review-loop/versions/1" in names
        mail = client.definition("mail-approval")
        assert mail.states[:3] == ("draft", "drafting", "awaiting_approval")
        assert "stateDiagram" in mail.mermaid
        started = client.start("mail-approval", workflow_id=uid("diag"))
        one = client.workflow_diagnostics(started.workflow.name)
        assert one.name == started.workflow.name


def test_watch_sees_every_revision_then_stops(module_server: ServerProcess) -> None:
    with Client(module_server.target) as client:
        wf = client.start("review-loop", workflow_id=uid("watch")).workflow
        events: list[WatchEvent] = []
        first = threading.Event()

        def consume() -> None:
            for event in client.watch(wf.name):
                events.append(event)
                first.set()

        thread = threading.Thread(target=consume, daemon=True)
        thread.start()
        assert first.wait(10)
        client.signal(wf.name, "score", {"score": 0.4})
        client.signal(wf.name, "revised", {"document": "x"})
        client.signal(wf.name, "score", {"score": 0.95})
        thread.join(20)
        assert not thread.is_alive()
        assert [(e.type, e.revision) for e in events] == [
            (WatchEventType.CURRENT, 1),
            (WatchEventType.STEP, 2),
            (WatchEventType.STEP, 3),
            (WatchEventType.STEP, 4),
        ]
        assert events[1].event == "score"
        assert events[-1].workflow.status is WorkflowStatus.COMPLETED
        # Replay from history: everything after revision 1.
        replay = [e.revision for e in client.watch(wf.name, after_revision=1)]
        assert replay == [2, 3, 4]


def test_execute_returns_the_instance_once_it_rests_or_finishes(
    module_server: ServerProcess,
) -> None:
    with Client(module_server.target) as client:
        # A wait state is a rest: the call returns the waiting instance.
        waiting = client.execute("mail-approval", {"topic": "rest"}, workflow_id=uid("exec"))
        assert (waiting.status, waiting.state) == (WorkflowStatus.WAITING, "awaiting_approval")

        # Until it finishes: a resume from elsewhere ends the wait.
        name = uid("exec")
        threading.Timer(0.5, lambda: client.resume(name, "approve")).start()
        done = client.execute("mail-approval", {"topic": "x"}, workflow_id=name, until="finish")
        assert (done.status, done.revision) == (WorkflowStatus.COMPLETED, 2)

        # A task state with no worker neither rests nor finishes: the timeout says so and
        # the instance goes on.
        with pytest.raises(ExecutionTimedOut) as late:
            client.execute(
                "order-fulfilment",
                {"items": ["book"], "price": 5.0},
                workflow_id=uid("exec"),
                timeout=1.0,
            )
        assert late.value.code.name == "DEADLINE_EXCEEDED"
        assert late.value.workflow.status is WorkflowStatus.RUNNING
        assert client.get(late.value.workflow.name).status is WorkflowStatus.RUNNING

        with pytest.raises(ValueError):
            client.execute("mail-approval", until="later")  # type: ignore[arg-type]


async def test_async_execute_waits_for_the_finish(module_server: ServerProcess) -> None:
    async with AsyncClient(module_server.target) as client:
        name = uid("aexec")

        async def approve_soon() -> None:
            await asyncio.sleep(0.5)
            await client.resume(name, "approve")

        approval = asyncio.create_task(approve_soon())
        done = await client.execute(
            "mail-approval", {"topic": "a"}, workflow_id=name, until="finish", timeout=20
        )
        await approval
        assert done.status is WorkflowStatus.COMPLETED
        with pytest.raises(ExecutionTimedOut) as late:
            await client.execute(
                "mail-approval",
                {"topic": "b"},
                workflow_id=uid("aexec"),
                until="finish",
                timeout=0.5,
            )
        assert late.value.workflow.status is WorkflowStatus.WAITING


async def test_async_client_round_trip(module_server: ServerProcess) -> None:
    async with AsyncClient(module_server.target) as client:
        started = await client.start("mail-approval", {"topic": "async"}, workflow_id=uid("aio"))
        name = started.workflow.name
        seen: list[int] = []
        first = asyncio.Event()

        async def consume() -> None:
            async for event in client.watch(name):
                seen.append(event.revision)
                first.set()

        watcher = asyncio.create_task(consume())
        await asyncio.wait_for(first.wait(), 10)
        with pytest.raises(RevisionMismatch):
            await client.resume(name, "approve", expected_revision=7)
        done = await client.resume(name, "approve", expected_revision=1)
        await asyncio.wait_for(watcher, 20)
        assert done.workflow.status is WorkflowStatus.COMPLETED
        assert seen == [1, 2]
        listed = [w.workflow_id async for w in client.list(definition="mail-approval", page_size=1)]
        assert started.workflow.workflow_id in listed


def test_python_conformance_scenario_passes(module_server: ServerProcess) -> None:
    scenario = load_scenario(DEFAULT_SCENARIO)
    with Client(module_server.target) as client:
        runner = Runner(client, scenario)
        runner.wait_until_ready()
        assert runner.run() == 0
        assert runner.passed == len(scenario["steps"])
