"""The Python conformance runner's own rules: substitution, matching and loud failures;
RunWorker against the fake TaskService."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from statewright.client import Client
from statewright.conformance import (
    ConformanceError,
    Runner,
    default_scenario_path,
    fill_input,
    load_scenario,
    main,
    parse_duration,
    subset_mismatches,
)
from statewright.models import Workflow
from statewright.v1 import task_pb2, workflow_pb2
from statewright.v1 import task_service_pb2 as tpb
from statewright.v1 import workflow_service_pb2 as pb
from statewright.values import from_struct, to_struct

from tests.fakes import FakeServer, FakeTasks, task, workflow

SCENARIO = Path(__file__).resolve().parents[3] / "clients" / "conformance" / "scenario.yaml"
OPS = {
    "StartWorkflow",
    "ResumeWorkflow",
    "SignalWorkflow",
    "GetWorkflow",
    "CancelWorkflow",
    "WatchWorkflow",
    "AwaitWatch",
    "ListWorkflows",
    "GetDiagnostics",
    "RunWorker",
}


def _runner(scenario: dict[str, Any] | None = None) -> tuple[Runner, io.StringIO]:
    out = io.StringIO()
    # No call reaches this address in these tests; the runner only needs a client object.
    client = Client("127.0.0.1:1")
    return Runner(client, scenario or {"steps": []}, run_id="r1", out=out), out


def test_default_scenario_is_the_shared_file() -> None:
    assert default_scenario_path() == SCENARIO
    scenario = load_scenario(SCENARIO)
    assert {step["op"] for step in scenario["steps"]} <= OPS


def test_substitution_of_run_repeat_and_saved_values() -> None:
    runner, _ = _runner()
    runner.saved["mail"] = {"workflow_id": "mail-r1", "revision": 1}
    value = runner._substitute(
        {"a": "order-${run}-${i}", "b": ["${mail.workflow_id}", 5], "c": "r${mail.revision}"},
        {"run": "r1", "i": "2"},
    )
    assert value == {"a": "order-r1-2", "b": ["mail-r1", 5], "c": "r1"}
    with pytest.raises(ConformanceError, match="no step saved"):
        runner._substitute("${nope.workflow_id}", {})


def test_unknown_ops_and_keys_fail_the_step_and_the_run() -> None:
    runner, out = _runner(
        {
            "steps": [
                {"id": "mystery", "op": "TeleportWorkflow"},
                {"id": "typo", "op": "GetDiagnostics", "expect": {"build_version_sett": True}},
                {"id": "extra", "op": "GetDiagnostics", "colour": "blue"},
            ]
        }
    )
    assert runner.run() == 3
    text = out.getvalue()
    assert "FAIL mystery: ConformanceError: unknown op 'TeleportWorkflow'" in text
    assert "FAIL typo" in text and "build_version_sett" in text
    assert "FAIL extra" in text and "colour" in text
    assert text.rstrip().endswith("conformance: 0 passed, 3 failed")


def test_await_watch_without_a_watch_fails() -> None:
    runner, out = _runner({"steps": [{"id": "w", "op": "AwaitWatch", "watch": "missing"}]})
    assert runner.run() == 1
    assert "no watch was opened" in out.getvalue()


def test_main_needs_a_target() -> None:
    with pytest.raises(SystemExit) as caught:
        main([str(SCENARIO)])
    assert caught.value.code == 2


def test_main_connects_as_the_environment_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: FakeServer
) -> None:
    fake.service.behaviours["GetDiagnostics"] = lambda r, c: pb.GetDiagnosticsResponse()
    monkeypatch.setenv("STATEWRIGHT_ADDRESS", fake.target)
    monkeypatch.setenv("STATEWRIGHT_TARGET", "127.0.0.1:1")  # the older name yields
    monkeypatch.setenv("STATEWRIGHT_TOKEN", "conformance-token")
    path = tmp_path / "s.yaml"
    path.write_text("version: 1\nsteps: [{id: d, op: GetDiagnostics}]\n")
    assert main([str(path)]) == 0
    calls = fake.service.authorizations()
    assert calls and {a for _, a in calls} == {"Bearer conformance-token"}


def test_main_rejects_a_missing_scenario(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        main([str(tmp_path / "none.yaml"), "--target", "127.0.0.1:1"])
    assert caught.value.code == 2


def test_a_scenario_must_be_version_1(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("version: 2\nsteps: [{id: a, op: GetDiagnostics}]\n")
    with pytest.raises(ConformanceError, match="version 1"):
        load_scenario(path)


def test_durations() -> None:
    assert parse_duration("60s") == 60.0
    assert parse_duration("1.5s") == 1.5
    assert parse_duration("250ms") == 0.25
    assert parse_duration("2m") == 120.0
    assert parse_duration(3) == 3.0
    for bad in ["soon", "0s", "-1s", "5h", True, ""]:
        with pytest.raises(ConformanceError):
            parse_duration(bad)


def test_fill_input_replaces_input_keys_in_every_string() -> None:
    task_input = {"order": "ful-r1", "amount": 25.0, "items": ["book", "pen"], "ok": True}
    value = fill_input(
        {
            "id": "ch-${input.order}",
            "note": "${input.amount} for ${input.items}, ${input.ok}",
            "nested": [{"of": "${input.order}"}, 7],
            "other": "${run} stays",
        },
        task_input,
    )
    assert value == {
        "id": "ch-ful-r1",
        "note": '25.0 for ["book","pen"], true',
        "nested": [{"of": "ful-r1"}, 7],
        "other": "${run} stays",
    }
    with pytest.raises(ConformanceError, match="the task input has no 'refund'"):
        fill_input({"id": "${input.refund}"}, task_input)


def test_subset_match() -> None:
    actual = {
        "charge_id": "ch-1",
        "failure": {"type": "CARRIER_DOWN", "message": "m", "details": {}, "attempts": 1.0},
        "items": ["book", "pen"],
        "log": [{"at": 1.0, "what": "x"}],
        "flag": True,
    }
    assert subset_mismatches({}, actual, "context") == []
    assert (
        subset_mismatches(
            {
                "charge_id": "ch-1",
                "failure": {"type": "CARRIER_DOWN", "attempts": 1},
                "items": ["book", "pen"],
                "log": [{"what": "x"}],
                "flag": True,
            },
            actual,
            "context",
        )
        == []
    )
    assert subset_mismatches({"failure": {"attempts": 2}}, actual, "context") == [
        "context.failure.attempts: expected 2, got 1.0"
    ]
    assert subset_mismatches({"failure": {"kind": "X"}}, actual, "context") == [
        "context.failure.kind: missing (expected 'X')"
    ]
    assert subset_mismatches({"charge_id": {"id": "ch-1"}}, actual, "c") == [
        "c.charge_id: expected a map, got 'ch-1'"
    ]
    # Lists match whole: as many elements, each matching.
    assert subset_mismatches({"items": ["book"]}, actual, "c") != []
    assert subset_mismatches({"log": [{"what": "y"}]}, actual, "c") == [
        "c.log[0].what: expected 'y', got 'x'"
    ]
    # Booleans are not numbers, and numbers are not their text.
    assert subset_mismatches({"flag": 1}, actual, "c") != []
    assert subset_mismatches({"failure": {"attempts": True}}, actual, "c") != []
    assert subset_mismatches({"failure": {"attempts": "1"}}, actual, "c") != []


def test_handlers_keep_input_placeholders_for_the_worker() -> None:
    runner, _ = _runner()
    handlers = {"payments": {"result": {"id": "ch-${input.order}-${run}"}}}
    kept = runner._substitute(handlers, {"run": "r1"}, keep=["input"])
    assert kept == {"payments": {"result": {"id": "ch-${input.order}-r1"}}}
    with pytest.raises(ConformanceError, match="no step saved 'input'"):
        runner._substitute(handlers, {"run": "r1"})


def test_op_specific_step_keys_fail_elsewhere() -> None:
    runner, out = _runner(
        {
            "steps": [
                {"id": "h", "op": "GetDiagnostics", "handlers": {}},
                {"id": "w", "op": "GetDiagnostics", "watch": "x"},
            ]
        }
    )
    assert runner.run() == 2
    text = out.getvalue()
    assert "FAIL h" in text and "'handlers'" in text
    assert "FAIL w" in text and "'watch'" in text


@pytest.mark.parametrize(
    ("step", "message"),
    [
        ({"until": {"name": "workflows/x"}}, "RunWorker needs handlers"),
        ({"handlers": {"q": {"result": {}}}}, "RunWorker needs until"),
        ({"handlers": {}, "until": {"name": "x"}}, "a map of queue to handler"),
        (
            {"handlers": {"q": {"result": {}, "fail": {"type": "X"}}}, "until": {"name": "x"}},
            "exactly one of result and fail",
        ),
        ({"handlers": {"q": {"retry": {}}}, "until": {"name": "x"}}, "'retry'"),
        ({"handlers": {"q": {"fail": {"message": "m"}}}, "until": {"name": "x"}}, "a type"),
        (
            {"handlers": {"q": {"fail": {"type": "X", "delay": 1}}}, "until": {"name": "x"}},
            "'delay'",
        ),
        ({"handlers": {"q": {"result": {}}}, "until": {"id": "x"}}, "'id'"),
        ({"handlers": {"q": {"result": {}}}, "until": {"name": "x"}, "timeout": "1h"}, "1h"),
        (
            {"handlers": {"q": {"result": {}}}, "until": {"name": "x"}, "expect": {"taks": []}},
            "'taks'",
        ),
        (
            {
                "handlers": {"q": {"result": {}}},
                "until": {"name": "x"},
                "expect": {"tasks": [{"queue": "q", "lease": "t"}]},
            },
            "'lease'",
        ),
        ({"handlers": {"Bad Queue": {"result": {}}}, "until": {"name": "x"}}, "not a queue"),
    ],
)
def test_run_worker_rejects_a_malformed_step(step: dict[str, Any], message: str) -> None:
    # All of these fail before the worker starts: nothing reaches the (absent) server.
    runner, out = _runner({"steps": [{"id": "rw", "op": "RunWorker", **step}]})
    assert runner.run() == 1
    text = out.getvalue()
    assert "FAIL rw" in text and message in text, text


def test_pending_task_expectation() -> None:
    runner, _ = _runner()
    message = workflow("ful", status=workflow_pb2.WORKFLOW_STATUS_RUNNING, state="charging")
    bare = Workflow.from_proto(message)
    message.pending_task.CopyFrom(task("ful", "1", queue="payments", attempt=0))
    waiting = Workflow.from_proto(message)
    runner._check_workflow(
        waiting, {"pending_task": {"queue": "payments", "status": "SCHEDULED", "attempt": 0}}
    )
    runner._check_workflow(bare, {"pending_task": None})
    with pytest.raises(ConformanceError, match="pending_task attempt: expected 1, got 0"):
        runner._check_workflow(waiting, {"pending_task": {"attempt": 1}})
    with pytest.raises(ConformanceError, match="pending_task queue"):
        runner._check_workflow(waiting, {"pending_task": {"queue": "shipping"}})
    with pytest.raises(ConformanceError, match="got none"):
        runner._check_workflow(bare, {"pending_task": {"queue": "payments"}})
    with pytest.raises(ConformanceError, match="expected none"):
        runner._check_workflow(waiting, {"pending_task": None})
    with pytest.raises(ConformanceError, match="'lease_token'"):
        runner._check_workflow(waiting, {"pending_task": {"lease_token": "x"}})


# --- RunWorker against the fake TaskService ----------------------------------------------


@pytest.fixture
def roomy() -> Iterator[FakeServer]:
    # Two long polls (one per queue) hold a server thread each while GetWorkflow is read.
    with FakeServer(max_workers=8) as server:
        yield server


class _Order:
    """A scripted order: a charge on payments and a shipment on shipping, both scheduled;
    the instance is COMPLETED once the worker has reported both, with the charge's result
    in its context, as the real server's apply would put it."""

    def __init__(self, server: FakeServer, *, tasks_listed: int = 2) -> None:
        self.tasks = FakeTasks(server.service)
        self.charge = self.tasks.add("charge", {"order": "ful-r1", "amount": 25.0})
        self.ship = self.tasks.add("ship", {"order": "ful-r1"}, queue="shipping")
        self.tasks_listed = tasks_listed
        server.service.behaviours.update(GetWorkflow=self.get, ListTasks=self.list)

    def reported(self) -> bool:
        return len(self.tasks.completed) + len(self.tasks.failed) == 2

    def get(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.tasks.condition:
            if not self.reported():
                running = workflow("ful-r1", 1, workflow_pb2.WORKFLOW_STATUS_RUNNING, "charging")
                return pb.GetWorkflowResponse(workflow=running)
            done = workflow("ful-r1", 3, workflow_pb2.WORKFLOW_STATUS_COMPLETED, "refunded")
            context_: dict[str, object] = {"total": 25.0}
            if self.charge in self.tasks.completed:
                context_["charge_id"] = from_struct(self.tasks.completed[self.charge].result)["id"]
            if self.ship in self.tasks.failed:
                failed = self.tasks.failed[self.ship]
                context_["failure"] = {
                    "type": failed.error.type,
                    "message": failed.error.message,
                    "non_retryable": failed.non_retryable,
                }
            done.context.CopyFrom(to_struct(context_))
            return pb.GetWorkflowResponse(workflow=done)

    def list(self, request: tpb.ListTasksRequest, context: grpc.ServicerContext) -> Any:
        # One task a page, so the runner must follow the pages.
        listed = [
            task("ful-r1", "1", queue="payments", attempt=1, status=task_pb2.TASK_STATUS_COMPLETED),
            task("ful-r1", "2", queue="shipping", attempt=1, status=task_pb2.TASK_STATUS_FAILED),
        ][: self.tasks_listed]
        page = int(request.page_token or 0)
        more = page + 1 < len(listed)
        return tpb.ListTasksResponse(
            tasks=listed[page : page + 1], next_page_token=str(page + 1) if more else ""
        )


def _work_order(**overrides: Any) -> dict[str, Any]:
    step: dict[str, Any] = {
        "id": "work",
        "op": "RunWorker",
        "handlers": {
            "payments": {"result": {"id": "ch-${input.order}", "run": "${run}"}},
            "shipping": {
                "fail": {"type": "CARRIER_DOWN", "message": "no carrier", "non_retryable": True}
            },
        },
        "until": {"name": "workflows/ful-${run}"},
        "timeout": "30s",
        "expect": {
            "status": "COMPLETED",
            "state": "refunded",
            "revision": 3,
            "context": {
                "charge_id": "ch-ful-${run}",
                "failure": {"type": "CARRIER_DOWN", "non_retryable": True},
            },
            "tasks": [
                {"queue": "payments", "status": "COMPLETED", "attempt": 1},
                {"queue": "shipping", "status": "FAILED", "attempt": 1},
            ],
        },
    }
    step.update(overrides)
    return step


def _run_against(server: FakeServer, step: dict[str, Any]) -> tuple[int, str]:
    out = io.StringIO()
    with Client(server.target) as client:
        failed = Runner(client, {"steps": [step]}, run_id="r1", out=out).run()
    return failed, out.getvalue()


def test_run_worker_works_the_tasks_with_the_clients_worker(roomy: FakeServer) -> None:
    order = _Order(roomy)
    failed, text = _run_against(roomy, _work_order())
    assert failed == 0, text
    assert "PASS work: workflows/ful-r1 COMPLETED r3 refunded, 2 tasks, 2 attempts handled" in text
    completed = order.tasks.completed[order.charge]
    assert from_struct(completed.result) == {"id": "ch-ful-r1", "run": "r1"}
    shipped = order.tasks.failed[order.ship]
    assert (shipped.error.type, shipped.error.message) == ("CARRIER_DOWN", "no carrier")
    assert shipped.non_retryable
    # Every page of ListTasks was read, for the instance given in `until`.
    lists = roomy.service.calls("ListTasks")
    assert [r.page_token for r in lists] == ["", "1"]
    assert {r.workflow for r in lists} == {"workflows/ful-r1"}


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ({"revision": 4}, "revision: expected 4, got 3"),
        ({"context": {"charge_id": "ch-other"}}, "context.charge_id: expected 'ch-other'"),
        (
            {"tasks": [{"queue": "payments"}]},
            "expected 1 tasks, got 2",
        ),
        (
            {"tasks": [{"queue": "payments"}, {"queue": "shipping", "status": "COMPLETED"}]},
            "tasks[1] status: expected 'COMPLETED', got 'FAILED'",
        ),
    ],
)
def test_run_worker_fails_on_a_mismatch(
    roomy: FakeServer, expect: dict[str, Any], message: str
) -> None:
    _Order(roomy)
    failed, text = _run_against(roomy, _work_order(expect=expect))
    assert failed == 1
    assert "FAIL work" in text and message in text, text


def test_a_missing_input_key_fails_the_task_for_good_and_the_step(roomy: FakeServer) -> None:
    order = _Order(roomy)
    handlers = {
        "payments": {"result": {"id": "${input.refund}"}},
        "shipping": {"fail": {"type": "CARRIER_DOWN"}},
    }
    failed, text = _run_against(roomy, _work_order(handlers=handlers, expect={}))
    assert failed == 1
    assert "the task input has no 'refund'" in text, text
    charge = order.tasks.failed[order.charge]
    assert charge.error.type == "CONFORMANCE_RUNNER" and charge.non_retryable


def test_run_worker_fails_when_the_instance_never_ends(roomy: FakeServer) -> None:
    tasks = FakeTasks(roomy.service)
    running = workflow("ful-r1", 1, workflow_pb2.WORKFLOW_STATUS_RUNNING, "charging")

    def get(request: Any, context: grpc.ServicerContext) -> Any:
        # Answers once both queues are polled, so the stop surely finds their polls open.
        for _ in range(1000):
            if len(roomy.service.calls("PollTasks")) >= 2:
                break
            time.sleep(0.01)
        return pb.GetWorkflowResponse(workflow=running)

    roomy.service.behaviours["GetWorkflow"] = get
    failed, text = _run_against(roomy, _work_order(timeout="300ms", expect={}))
    assert failed == 1
    assert "FAIL work: ConformanceError: workflows/ful-r1 not terminal within 0.3s" in text, text
    assert "RUNNING charging r1" in text
    # The worker polled both queues, and its shutdown ended the polls.
    assert {r.queue for r in roomy.service.calls("PollTasks")} == {"payments", "shipping"}
    assert tasks.wait_until(lambda: tasks.abandoned_polls >= 2, 10)
