"""The statewright command-line tool: arguments, tables and JSON output, exit statuses."""

from __future__ import annotations

import argparse
import io
import json
import threading
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import any_pb2, duration_pb2, timestamp_pb2
from google.rpc import error_details_pb2, status_pb2
from statewright import _render, cli
from statewright.v1 import batch_service_pb2 as bpb
from statewright.v1 import diagnostics_pb2, task_pb2, task_service_pb2, workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.values import to_struct, to_value

from tests.fakes import FakeServer, abort, workflow


def _run(fake: FakeServer, *argv: str) -> tuple[int, Any, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["--target", fake.target, *argv], stdout=out, stderr=err)
    text = out.getvalue()
    return status, (json.loads(text) if text.strip() else None), err.getvalue()


def test_start_prints_the_step_as_json(fake: FakeServer) -> None:
    wf = workflow("cli-1")
    wf.context.update({"topic": "x"})
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=wf, created=True
    )
    status, body, _ = _run(
        fake, "start", "mail-approval", "--input", '{"topic": "x"}', "--id", "cli-1"
    )
    assert status == 0
    assert body["workflow"]["status"] == "WAITING"
    assert body["workflow"]["context"] == {"topic": "x"}
    assert body["created"] is True
    (request,) = fake.service.calls("StartWorkflow")
    assert request.workflow_id == "cli-1"
    assert request.input.fields["topic"].string_value == "x"


def test_execute_prints_the_instance_once_it_rests(fake: FakeServer) -> None:
    started = workflow("cli-x", status=workflow_pb2.WORKFLOW_STATUS_RUNNING, state="drafting")
    rested = workflow("cli-x", revision=2)
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=started, created=True
    )
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter(
        [pb.WatchWorkflowResponse(type=pb.WATCH_EVENT_TYPE_STEP, revision=2, workflow=rested)]
    )
    status, body, _ = _run(fake, "execute", "mail-approval", "--id", "cli-x", "--wait", "5s")
    assert status == 0
    assert (body["status"], body["revision"]) == ("WAITING", 2)
    (request,) = fake.service.calls("StartWorkflow")
    assert request.workflow_id == "cli-x" and request.request_id
    (watch,) = fake.service.calls("WatchWorkflow")
    assert watch.after_revision == 1


def test_start_takes_a_delay_in_the_definition_language_s_units(fake: FakeServer) -> None:
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=workflow("d"), created=True
    )
    status, _, _ = _run(fake, "start", "tally", "--delay", "1h30m")
    assert status == 0
    (request,) = fake.service.calls("StartWorkflow")
    assert request.start_delay.seconds == 5400


def test_start_execute_and_signal_with_start_take_a_recursion_limit(fake: FakeServer) -> None:
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=workflow("d"), created=True
    )
    fake.service.behaviours["SignalWithStartWorkflow"] = lambda r, c: (
        pb.SignalWithStartWorkflowResponse(workflow=workflow("d"), accepted=True)
    )
    assert _run(fake, "start", "tally", "--recursion-limit", "3")[0] == 0
    assert _run(fake, "execute", "tally", "--recursion-limit", "4")[0] == 0
    assert _run(fake, "signal-with-start", "tally", "w", "tick", "--recursion-limit", "5")[0] == 0
    assert [r.recursion_limit for r in fake.service.calls("StartWorkflow")] == [3, 4]
    (signalled,) = fake.service.calls("SignalWithStartWorkflow")
    assert signalled.recursion_limit == 5


def test_start_restarts_a_finished_instance_when_asked(fake: FakeServer) -> None:
    restarted = workflow("d")
    restarted.run, restarted.revision = 2, 5
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=restarted, created=True
    )
    status, body, _ = _run(fake, "start", "tally", "--id", "d", "--if-exists", "restart")
    assert status == 0
    (request,) = fake.service.calls("StartWorkflow")
    assert request.if_exists == pb.IF_EXISTS_POLICY_RESTART
    assert (body["workflow"]["run"], body["created"]) == (2, True)


def test_a_bad_delay_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["start", "tally", "--delay", "soon"])
    assert exited.value.code == 2
    assert "not a duration" in capsys.readouterr().err


def test_signal_with_start_passes_every_option(fake: FakeServer) -> None:
    fake.service.behaviours["SignalWithStartWorkflow"] = lambda r, c: (
        pb.SignalWithStartWorkflowResponse(
            workflow=workflow("c-42", status=workflow_pb2.WORKFLOW_STATUS_RUNNING),
            started=True,
            accepted=True,
        )
    )
    status, body, _ = _run(
        fake,
        "signal-with-start",
        "tally",
        "c-42",
        "tick",
        "--payload",
        '{"id": "a"}',
        "--input",
        '{"limit": 2}',
        "--if-finished",
        "start_new",
        "--start-now",
    )
    assert status == 0
    assert body["started"] is True and body["accepted"] is True
    (request,) = fake.service.calls("SignalWithStartWorkflow")
    assert (request.definition, request.workflow_id, request.event) == ("tally", "c-42", "tick")
    assert request.payload.fields["id"].string_value == "a"
    assert request.input.fields["limit"].number_value == 2
    assert request.if_finished == pb.IF_FINISHED_POLICY_START_NEW and request.start_now


def test_options_are_accepted_after_the_command(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=workflow("w")
    )
    out = io.StringIO()
    status = cli.main(["get", "w", "--target", fake.target, "--compact"], stdout=out)
    assert status == 0
    assert out.getvalue().count("\n") == 1
    assert json.loads(out.getvalue())["name"] == "workflows/w"


def test_resume_passes_event_and_expected_revision(fake: FakeServer) -> None:
    fake.service.behaviours["ResumeWorkflow"] = lambda r, c: pb.ResumeWorkflowResponse(
        workflow=workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED)
    )
    status, body, _ = _run(
        fake, "resume", "workflows/w", "--event", "approve", "--expected-revision", "1"
    )
    assert status == 0
    assert body["workflow"]["status"] == "COMPLETED"
    # ResumeWorkflowResponse has no `created`: the output shows only fields that exist.
    assert set(body) == {"workflow", "transitions"}
    (request,) = fake.service.calls("ResumeWorkflow")
    assert (request.name, request.event, request.expected_revision) == ("workflows/w", "approve", 1)


def test_failures_print_the_error_info_and_exit_1(fake: FakeServer) -> None:
    def mismatch(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, grpc.StatusCode.ABORTED, "REVISION_MISMATCH", {"actual_revision": "1"})

    fake.service.behaviours["ResumeWorkflow"] = mismatch
    status, body, err = _run(fake, "resume", "w", "--expected-revision", "9")
    assert status == 1
    assert body is None
    error = json.loads(err)["error"]
    assert error["code"] == "ABORTED"
    assert error["reason"] == "REVISION_MISMATCH"
    assert error["metadata"] == {"actual_revision": "1"}


def test_list_collects_all_pages_up_to_the_limit(fake: FakeServer) -> None:
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse(
        workflows=[workflow(f"p{r.page_token or 0}-{i}") for i in range(2)],
        next_page_token="" if r.page_token else "1",
    )
    status, body, _ = _run(fake, "list", "--status", "waiting", "--page-size", "2", "-o", "json")
    assert status == 0
    assert [w["workflow_id"] for w in body] == ["p0-0", "p0-1", "p1-0", "p1-1"]
    assert fake.service.calls("ListWorkflows")[0].status == workflow_pb2.WORKFLOW_STATUS_WAITING
    _, limited, _ = _run(fake, "--json", "list", "--limit", "3")
    assert len(limited) == 3
    _, _, _ = _run(fake, "list", "--status", "WORKFLOW_STATUS_FAILED", "--json")
    assert fake.service.calls("ListWorkflows")[-1].status == workflow_pb2.WORKFLOW_STATUS_FAILED
    _run(fake, "list", "--order-by", "create_time desc", "--id-prefix", "p0", "--json")
    last = fake.service.calls("ListWorkflows")[-1]
    assert (last.order_by, last.id_prefix) == ("create_time desc", "p0")


def test_unknown_order_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("newest", "create_time asc", "update_time desc, ,state"):
        with pytest.raises(SystemExit) as caught:
            cli.main(["list", "--order-by", bad])
        assert caught.value.code == 2
        assert "is not an order key: one of create_time, update_time" in capsys.readouterr().err


def test_an_order_of_several_keys_reaches_the_server_as_given(fake: FakeServer) -> None:
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse()
    order = "update_time desc, search.amount, name"
    status, body, _ = _run(fake, "list", "--order-by", order, "--json")
    assert (status, body) == (0, [])
    assert fake.service.calls("ListWorkflows")[-1].order_by == order


def test_tasks_lists_every_page_with_the_filter(fake: FakeServer) -> None:
    def pages(request: task_service_pb2.ListTasksRequest, context: grpc.ServicerContext) -> Any:
        tasks = [
            task_pb2.Task(
                name=f"workflows/w{request.page_token or 0}-{i}/tasks/1",
                queue="payments",
                status=task_pb2.TASK_STATUS_BACKOFF,
                attempt=3,
            )
            for i in range(2)
        ]
        return task_service_pb2.ListTasksResponse(
            tasks=tasks, next_page_token="" if request.page_token else "1"
        )

    fake.service.behaviours["ListTasks"] = pages
    text = "status = BACKOFF AND attempt >= 3"
    status, body, _ = _run(fake, "tasks", "--queue", "payments", "--filter", text, "-o", "json")
    assert status == 0
    assert [t["name"] for t in body] == [
        f"workflows/w{p}-{i}/tasks/1" for p in (0, 1) for i in (0, 1)
    ]
    first = fake.service.calls("ListTasks")[0]
    assert (first.queue, first.filter) == ("payments", text)
    out = io.StringIO()
    assert cli.main(["--target", fake.target, "tasks", "--limit", "1"], stdout=out) == 0
    header, row = out.getvalue().splitlines()
    assert header.split() == ["TASK", "QUEUE", "STATUS", "ATTEMPT", "PRIORITY", "KEY", "SCHEDULED"]
    assert row.split()[:4] == ["w0-0/tasks/1", "payments", "BACKOFF", "3"]


def test_watch_prints_json_lines(fake: FakeServer) -> None:
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter(
        [
            pb.WatchWorkflowResponse(
                type=pb.WATCH_EVENT_TYPE_CURRENT, revision=1, workflow=workflow()
            ),
            pb.WatchWorkflowResponse(
                type=pb.WATCH_EVENT_TYPE_STEP,
                revision=2,
                event="approve",
                workflow=workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED),
            ),
        ]
    )
    out = io.StringIO()
    assert cli.main(["--target", fake.target, "watch", "w"], stdout=out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(m["type"], m["revision"]) for m in lines] == [("CURRENT", 1), ("STEP", 2)]


def test_bad_json_input_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["start", "mail-approval", "--input", "[1, 2]"])
    assert caught.value.code == 2
    assert "JSON object" in capsys.readouterr().err


def test_unknown_status_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["list", "--status", "sleeping"])
    assert caught.value.code == 2
    assert "COMPLETED" in capsys.readouterr().err


def test_every_option_and_argument_has_help_text() -> None:
    parser = cli.build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [
        f"{name} {action.dest}"
        for name, sub in [("statewright", parser), *commands.choices.items()]
        for action in sub._actions
        if not action.help and not isinstance(action, argparse._SubParsersAction)
    ]
    assert missing == []


def _diagnostics_response() -> pb.GetDiagnosticsResponse:
    return pb.GetDiagnosticsResponse(
        event_loop=diagnostics_pb2.EventLoopDiagnostics(
            phase=diagnostics_pb2.EVENT_LOOP_PHASE_RUNNING,
            queue_depth=3,
            max_queue_depth=12_345_678_901,
            lag_last=duration_pb2.Duration(nanos=26_236),
            lag_max=duration_pb2.Duration(seconds=1, nanos=200_000_000),
            dispatch_count=7,
        ),
        persistence=diagnostics_pb2.PersistenceDiagnostics(
            backend="sqlite", batches=3, mean_batch_size=4 / 3, saves=4
        ),
        definitions=["definitions/mail-approval/versions/1"],
        uptime=duration_pb2.Duration(seconds=3_725),
    )


def test_diagnostics_print_numbers_plain_enums_and_readable_durations(fake: FakeServer) -> None:
    fake.service.behaviours["GetDiagnostics"] = lambda r, c: _diagnostics_response()
    status, body, _ = _run(fake, "diagnostics")
    assert status == 0
    loop = body["event_loop"]
    assert loop["phase"] == "RUNNING"
    assert loop["queue_depth"] == 3 and loop["max_queue_depth"] == 12_345_678_901
    assert loop["slow_dispatch_count"] == 0  # zero counts are shown, as numbers
    assert loop["lag_last"] == "26 µs"
    assert loop["lag_max"] == "1.2 s"
    assert "lag_average" not in loop  # not sent: not shown
    assert body["persistence"]["mean_batch_size"] == 1.333
    assert body["uptime"] == "1 h 2 min"
    assert "admissions" not in body
    assert body["definitions"] == ["definitions/mail-approval/versions/1"]


def test_workflow_diagnostics_show_states_times_and_the_recovery_error(fake: FakeServer) -> None:
    info = any_pb2.Any()
    info.Pack(error_details_pb2.ErrorInfo(reason="STORAGE_UNAVAILABLE", domain="statewright.dev"))
    since = timestamp_pb2.Timestamp(seconds=1_767_225_600, nanos=250_000_000)
    diagnostics = diagnostics_pb2.WorkflowDiagnostics(
        name="workflows/w",
        admission_state=diagnostics_pb2.ADMISSION_STATE_RECOVERY_REQUIRED,
        revision=4,
        recent_transitions=[
            workflow_pb2.Transition(from_state="a", to_state="b", event="go"),
        ],
        recovery=diagnostics_pb2.RecoveryInfo(
            attempts=2,
            since_time=since,
            last_error=status_pb2.Status(code=14, message="database gone", details=[info]),
        ),
    )
    fake.service.behaviours["GetWorkflowDiagnostics"] = lambda r, c: (
        pb.GetWorkflowDiagnosticsResponse(diagnostics=diagnostics)
    )
    status, body, _ = _run(fake, "diagnostics", "w")
    assert status == 0
    assert fake.service.calls("GetWorkflowDiagnostics")[0].name == "workflows/w"
    assert body["admission_state"] == "RECOVERY_REQUIRED"
    assert body["revision"] == 4 and body["cached"] is False
    assert body["recent_transitions"] == [
        {"from_state": "a", "to_state": "b", "event": "go", "actor": ""}
    ]
    recovery = body["recovery"]
    assert recovery["attempts"] == 2
    assert recovery["since_time"] == "2026-01-01T00:00:00.250Z"
    assert "next_attempt_time" not in recovery
    assert recovery["last_error"] == {
        "code": "UNAVAILABLE",
        "reason": "STORAGE_UNAVAILABLE",
        "message": "database gone",
        "metadata": {},
    }


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (0.000000004, "4 ns"),
        (0.000026236, "26 µs"),
        (0.0009996, "1 ms"),
        (0.0012, "1.2 ms"),
        (0.43, "430 ms"),
        (1.23, "1.2 s"),
        (59.4, "59 s"),
        (61, "1 min 1 s"),
        (3725, "1 h 2 min"),
        (90_000, "1 d 1 h"),
    ],
)
def test_durations_read_in_the_unit_a_person_uses(seconds: float, text: str) -> None:
    assert _render.duration_text(seconds) == text


def _steps() -> list[pb.WatchWorkflowResponse]:
    started = workflow(revision=1)
    started.accepted_events[:] = ["approve", "reject"]
    return [
        pb.WatchWorkflowResponse(
            type=pb.WATCH_EVENT_TYPE_STEP,
            revision=1,
            transitions=[workflow_pb2.Transition(from_state="draft", to_state="awaiting_approval")],
            workflow=started,
        ),
        pb.WatchWorkflowResponse(
            type=pb.WATCH_EVENT_TYPE_STEP,
            revision=2,
            event="approve",
            transitions=[
                workflow_pb2.Transition(
                    from_state="awaiting_approval", to_state="send", event="approve"
                ),
                workflow_pb2.Transition(from_state="send", to_state="done"),
            ],
            workflow=workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED),
            input=to_struct({"by": "ann", "note": "ok"}),
            context_patch=[
                pb.ContextPatchOperation(op="add", path="/approved", value=to_value(True)),
                pb.ContextPatchOperation(op="remove", path="/draft"),
                pb.ContextPatchOperation(op="move", path="/b", from_path="/a"),
            ],
        ),
    ]


def test_history_replays_every_step_from_revision_zero(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED)
    )
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter(_steps())
    status, body, _ = _run(fake, "history", "w", "-o", "json")
    assert status == 0
    (request,) = fake.service.calls("WatchWorkflow")
    assert request.HasField("after_revision") and request.after_revision == 0
    assert [(s["revision"], s["event"], s["status"]) for s in body] == [
        (1, "", "WAITING"),
        (2, "approve", "COMPLETED"),
    ]
    assert body[1]["transitions"] == [
        {"from_state": "awaiting_approval", "to_state": "send", "event": "approve"},
        {"from_state": "send", "to_state": "done", "event": ""},
    ]
    assert body[1]["state"] == "awaiting_approval" and body[1]["context"] == {}
    assert body[0]["input"] is None and body[0]["context_patch"] == []
    assert body[1]["input"] == {"by": "ann", "note": "ok"}
    assert body[1]["context_patch"] == [
        {"op": "add", "path": "/approved", "value": True},
        {"op": "remove", "path": "/draft"},
        {"op": "move", "path": "/b", "from": "/a"},
    ]


def test_history_of_a_live_instance_stops_once_caught_up(fake: FakeServer) -> None:
    # Revision 1 when history is asked for; revision 2 arrives live while it is read.
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=workflow(revision=1)
    )
    released = threading.Event()

    def live(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        yield from _steps()
        # A live stream stays open; history must leave on its own, not wait here.
        released.wait(10)

    fake.service.behaviours["WatchWorkflow"] = live
    out = io.StringIO()
    try:
        status = cli.main(["--target", fake.target, "history", "w", "--format", "text"], stdout=out)
    finally:
        released.set()
    assert status == 0
    (line,) = out.getvalue().splitlines()
    assert line.startswith("r1 ")
    assert line.endswith(
        "start: draft -> awaiting_approval => WAITING in awaiting_approval, accepts approve, reject"
    )


def test_watch_prints_one_readable_line_per_step(fake: FakeServer) -> None:
    current = pb.WatchWorkflowResponse(
        type=pb.WATCH_EVENT_TYPE_CURRENT, revision=1, workflow=_steps()[0].workflow
    )
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter([current, _steps()[1]])
    out = io.StringIO()
    assert cli.main(["--target", fake.target, "watch", "w", "--format", "text"], stdout=out) == 0
    first, second = out.getvalue().splitlines()
    assert first.startswith("r1 ") and first.endswith(
        "current: WAITING in awaiting_approval, accepts approve, reject"
    )
    assert second.startswith("r2 ") and second.endswith(
        "approve: awaiting_approval -approve-> send -> done => COMPLETED in awaiting_approval"
    )


# -- tables, --version, grouped options, readable failures --------------------------------------


def _text(fake: FakeServer, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(["--target", fake.target, *argv], stdout=out, stderr=err)
    return status, out.getvalue(), err.getvalue()


def test_get_prints_a_readable_table_by_default(fake: FakeServer) -> None:
    wf = workflow("cli-t", revision=3)
    wf.definition, wf.version = "mail-approval", 2
    wf.accepted_events[:] = ["approve", "reject"]
    wf.context.update({"topic": "launch", "notes": ["a", "b"]})
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(workflow=wf)
    status, out, _ = _text(fake, "get", "cli-t")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["name:", "workflows/cli-t"]
    fields = {line.split(":")[0]: line.split(":", 1)[1].strip() for line in lines[1:9]}
    assert fields["definition"] == "mail-approval v2"
    assert fields["status"] == "WAITING"
    assert fields["state"] == "awaiting_approval"
    assert fields["revision"] == "3"
    assert fields["accepts"] == "approve, reject"
    assert "\ntimers:      none\n" in out
    assert lines[-3:] == ["context:", '  notes: ["a", "b"]', '  topic: "launch"'], "by name"
    # The same with -o json, --json or --compact, before or after the command.
    for form in (["-o", "json"], ["--json"], ["--compact"]):
        status, out, _ = _text(fake, *form, "get", "cli-t")
        assert json.loads(out)["revision"] == 3, form
        status, out, _ = _text(fake, "get", "cli-t", *form)
        assert json.loads(out)["revision"] == 3, form


def test_get_prints_a_childs_parent_and_a_parents_children(fake: FakeServer) -> None:
    child = workflow("kyc-1")
    child.parent.CopyFrom(
        workflow_pb2.WorkflowParent(name="workflows/onb-1", state="verify", task_id="1")
    )
    parent = workflow("onb-1")
    parent.children.CopyFrom(
        workflow_pb2.WorkflowChildren(open=3, names=["workflows/kyc-1", "workflows/kyc-2"])
    )
    shown = {"kyc-1": child, "onb-1": parent}
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=shown[r.name.removeprefix("workflows/")]
    )
    _, out, _ = _text(fake, "get", "kyc-1")
    assert "parent:" in out and "workflows/onb-1 (state verify)" in out
    _, out, _ = _text(fake, "get", "onb-1")
    assert "3 open: workflows/kyc-1, workflows/kyc-2 and 1 more" in out
    _, out, _ = _text(fake, "--json", "get", "kyc-1")
    assert json.loads(out)["parent"] == {
        "name": "workflows/onb-1",
        "state": "verify",
        "task_id": "1",
    }


def test_list_prints_one_row_per_instance(fake: FakeServer) -> None:
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse(
        workflows=[
            workflow("order-1"),
            workflow("order-22", revision=12, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED),
        ]
    )
    status, out, _ = _text(fake, "list", "--status", "WORKFLOW_STATUS_WAITING")
    assert status == 0
    header, first, second = out.splitlines()
    assert header.split() == ["WORKFLOW", "DEFINITION", "STATUS", "STATE", "REV", "UPDATED"]
    assert first.split()[:6] == [
        "order-1",
        "mail-approval",
        "v1",
        "WAITING",
        "awaiting_approval",
        "1",
    ]
    assert second.split()[3:6] == ["COMPLETED", "awaiting_approval", "12"]
    assert header.index("STATUS") == first.index("WAITING") == second.index("COMPLETED")
    fake.service.behaviours["ListWorkflows"] = lambda r, c: pb.ListWorkflowsResponse()
    assert _text(fake, "list")[1] == "no workflows\n"


def test_history_prints_one_row_per_step(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = lambda r, c: pb.GetWorkflowResponse(
        workflow=workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED)
    )
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter(_steps())
    status, out, _ = _text(fake, "history", "w")
    assert status == 0
    header, first, second = out.splitlines()
    assert header.split() == [
        "REV", "TIME", "EVENT", "TRANSITIONS", "STATUS", "STATE", "INPUT", "CONTEXT", "CHANGE"
    ]  # fmt: skip
    assert first.split()[0] == "1" and "(start)" in first
    assert "draft -> awaiting_approval" in first and "WAITING" in first
    assert second.split()[0] == "2" and " approve " in second
    assert "awaiting_approval -approve-> send -> done" in second and "COMPLETED" in second
    assert first.split()[-2:] == ["-", "-"]  # no input recorded, no context change
    assert second.index('{"by": "ann", "note": "ok"}') == header.index("INPUT")
    assert second.endswith("/approved=true, -/draft, /a -> /b")


def test_version_names_the_client_and_its_api(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("statewright 0.") and "statewright.v1" in out


def test_a_commands_help_shows_its_own_options_not_the_connection_ones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["get", "--help"])
    sub = capsys.readouterr().out
    assert "--tls-ca FILE" not in sub and "--timeout SECONDS" not in sub
    assert "connection options (--address" in " ".join(sub.split())
    assert "Output: table (default), json." in " ".join(sub.split())
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    assert "connection options (before or after the command):" in top
    assert "output options:" in top
    assert top.count("  --tls-ca FILE ") == 1  # described once, in its group


def test_a_form_a_command_does_not_have_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as caught:
        cli.main(["watch", "w", "-o", "table"])
    assert caught.value.code == 2
    assert "watch prints json or text, not table" in capsys.readouterr().err
    with pytest.raises(SystemExit) as caught:
        cli.main(["history", "w", "--compact", "-o", "text"])
    assert caught.value.code == 2


def test_a_failure_in_a_table_is_one_readable_line(fake: FakeServer) -> None:
    def missing(request: Any, context: grpc.ServicerContext) -> Any:
        abort(context, grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND", {"workflow_id": "x"})

    fake.service.behaviours["GetWorkflow"] = missing
    status, out, err = _text(fake, "get", "x")
    assert (status, out) == (1, "")
    assert err.startswith("statewright: NOT_FOUND WORKFLOW_NOT_FOUND: ")
    assert err.count("\n") == 1
    status, _, err = _text(fake, "get", "x", "--json")
    assert json.loads(err)["error"]["reason"] == "WORKFLOW_NOT_FOUND"


def test_an_unreachable_server_is_one_readable_line() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
    # Nothing listens on the port now: the connection is refused.
    for argv in (["get", "x"], ["start", "mail-approval"], ["list", "--json"]):
        out, err = io.StringIO(), io.StringIO()
        status = cli.main(
            ["--address", f"127.0.0.1:{port}", "--timeout", "5", *argv], stdout=out, stderr=err
        )
        assert status == 1
        assert err.getvalue() == (
            f"statewright: cannot reach the server at 127.0.0.1:{port}: connection refused. "
            "Is it running? ('make dev' starts one; --address HOST:PORT or "
            "$STATEWRIGHT_ADDRESS names another)\n"
        ), argv


def test_queue_set_keeps_the_limits_it_does_not_name(fake: FakeServer) -> None:
    stored = task_service_pb2.QueueConfig(queue="payments", max_leased=5, rate=2.0)
    fake.service.behaviours["GetQueueConfig"] = lambda r, c: (
        task_service_pb2.GetQueueConfigResponse(config=stored)
    )
    fake.service.behaviours["SetQueueConfig"] = lambda r, c: (
        task_service_pb2.SetQueueConfigResponse(config=r.config)
    )
    status, body, _ = _run(fake, "queue", "set", "payments", "--rate", "25", "--burst", "5")
    assert status == 0
    (request,) = fake.service.calls("SetQueueConfig")
    assert (request.config.max_leased, request.config.rate, request.config.burst) == (5, 25.0, 5)
    assert body["rate"] == 25.0 and body["max_leased"] == 5
    status, _, err = _run(fake, "queue", "set", "payments")
    assert status == 2 and "at least one limit" in err


def test_queue_list_and_get_print_json(fake: FakeServer) -> None:
    queue = task_service_pb2.QueueStatus(queue="payments", backlog=7, leased=2)
    queue.busiest_keys.add(key="c-1", backlog=5, leased=1)
    fake.service.behaviours["ListQueues"] = lambda r, c: task_service_pb2.ListQueuesResponse(
        queues=[queue]
    )
    status, body, _ = _run(fake, "queue", "list", "--keys", "3")
    assert status == 0
    assert body[0]["queue"] == "payments" and body[0]["busiest_keys"][0]["key"] == "c-1"
    assert fake.service.calls("ListQueues")[0].key_count == 3
    closed = task_service_pb2.ClosedKey(key="c-2")
    closed.closed_until.FromSeconds(1_900_000_000)
    fake.service.behaviours["GetQueueConfig"] = lambda r, c: (
        task_service_pb2.GetQueueConfigResponse(closed_keys=[closed])
    )
    status, body, _ = _run(fake, "queue", "get", "payments")
    assert status == 0 and body["config"] is None
    assert body["closed_keys"][0]["key"] == "c-2" and body["closed_keys"][0]["closed_until"]


def test_retry_and_reset_pass_every_option_and_print_the_repair(fake: FakeServer) -> None:
    fake.service.behaviours["RetryWorkflow"] = lambda r, c: pb.RetryWorkflowResponse(
        workflow=workflow("cli-r"), dry_run=True
    )
    fake.service.behaviours["ResetWorkflow"] = lambda r, c: pb.ResetWorkflowResponse(
        workflow=workflow("cli-r")
    )
    status, printed, _ = _run(
        fake, "retry", "cli-r", "--reason", "bank is back", "--dry-run", "--expected-revision", "2"
    )
    assert status == 0 and printed["dry_run"] is True
    assert printed["workflow"]["workflow_id"] == "cli-r"
    (retry,) = fake.service.calls("RetryWorkflow")
    assert (retry.name, retry.reason, retry.expected_revision, retry.dry_run) == (
        "workflows/cli-r",
        "bank is back",
        2,
        True,
    )
    status, printed, _ = _run(fake, "reset", "cli-r", "--to-revision", "3", "--request-id", "k")
    assert status == 0 and printed["dry_run"] is False
    (reset,) = fake.service.calls("ResetWorkflow")
    assert (reset.to_revision, reset.request_id, reset.dry_run) == (3, "k", False)


def test_migrate_passes_maps_and_sets_and_prints_the_plan(fake: FakeServer) -> None:
    plan = pb.MigrationPlan(from_version=1, to_version=2, state_from="a", state_to="b")
    fake.service.behaviours["MigrateWorkflow"] = lambda r, c: pb.MigrateWorkflowResponse(
        workflow=workflow("cli-m"), plan=plan, dry_run=r.dry_run
    )
    status, printed, _ = _run(
        fake, "migrate", "cli-m", "--to-version", "2", "--map", "a=b", "--map", "c=d",
        "--set", "n=context.x == 1 ? 2 : 3", "--dry-run", "--reason", "v2",
    )  # fmt: skip
    assert status == 0 and printed["dry_run"] is True
    assert printed["plan"]["state_to"] == "b" and printed["workflow"]["workflow_id"] == "cli-m"
    (request,) = fake.service.calls("MigrateWorkflow")
    assert (request.name, request.to_version, request.reason, request.dry_run) == (
        "workflows/cli-m",
        2,
        "v2",
        True,
    )
    assert dict(request.state_map) == {"a": "b", "c": "d"}
    assert dict(request.set) == {"n": "context.x == 1 ? 2 : 3"}


def test_pause_and_unpause_pass_every_option(fake: FakeServer) -> None:
    fake.service.behaviours["PauseWorkflow"] = lambda r, c: pb.PauseWorkflowResponse(
        workflow=workflow("cli-p"), dry_run=r.dry_run
    )
    fake.service.behaviours["UnpauseWorkflow"] = lambda r, c: pb.UnpauseWorkflowResponse(
        workflow=workflow("cli-p")
    )
    status, printed, _ = _run(
        fake, "pause", "cli-p", "--reason", "incident", "--dry-run", "--expected-revision", "4"
    )
    assert status == 0 and printed["dry_run"] is True
    (pause,) = fake.service.calls("PauseWorkflow")
    assert (pause.name, pause.reason, pause.expected_revision, pause.dry_run) == (
        "workflows/cli-p",
        "incident",
        4,
        True,
    )
    status, printed, _ = _run(fake, "unpause", "cli-p", "--request-id", "k")
    assert status == 0 and printed["dry_run"] is False
    (unpause,) = fake.service.calls("UnpauseWorkflow")
    assert (unpause.request_id, unpause.dry_run) == ("k", False)


def _batch(name: str = "batches/b1", **fields: Any) -> bpb.BatchOperation:
    message = bpb.BatchOperation(name=name, reason="why", rate=50.0, matched=4, **fields)
    if message.WhichOneof("operation") is None:
        message.retry.SetInParent()
    return message


def test_batch_start_builds_each_operation_from_its_options(fake: FakeServer) -> None:
    fake.service.behaviours["StartBatchOperation"] = lambda r, c: bpb.StartBatchOperationResponse(
        batch=_batch(f"batches/{r.batch_id}" if r.batch_id else ""), sample=["workflows/a"]
    )
    status, printed, _ = _run(
        fake, "batch", "start", "--op", "signal", "--event", "nudge", "--payload", '{"n": 1}',
        "--filter", "status = RUNNING", "--definition", "tally", "--reason", "wake",
        "--rate", "5", "--batch-id", "b-7", "--id-prefix", "order-",
    )  # fmt: skip
    assert status == 0
    assert printed["batch"]["name"] == "batches/b-7" and printed["sample"] == ["workflows/a"]
    status, _, _ = _run(
        fake, "batch", "start", "--op", "migrate", "--to-version", "2", "--definition", "t",
        "--state-map", "review=approval", "--set", "tier='gold'", "--reason", "v2", "--dry-run",
    )  # fmt: skip
    assert status == 0
    for op, extra in (("reset", ["--entered-state", "review"]), ("delete", ["--force"])):
        assert _run(fake, "batch", "start", "--op", op, *extra, "--reason", "r")[0] == 0
    signal, migrate, reset, delete = fake.service.calls("StartBatchOperation")
    assert (signal.batch_id, signal.filter, signal.definition, signal.rate) == (
        "b-7",
        "status = RUNNING",
        "tally",
        5.0,
    )
    assert signal.signal.event == "nudge" and signal.signal.payload.fields["n"].number_value == 1
    assert signal.id_prefix == "order-" and migrate.id_prefix == ""
    assert migrate.dry_run and migrate.batch_id == ""
    assert migrate.migrate == bpb.BatchMigrate(
        to_version=2, state_map={"review": "approval"}, set={"tier": "'gold'"}
    )
    assert reset.reset.entered_state == "review" and delete.delete.force


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--op", "retry", "--event", "x"], "--event is an option of --op signal"),
        (["--op", "cancel", "--force"], "--force is an option of --op delete"),
        (["--op", "signal"], "--op signal needs --event"),
        (["--op", "migrate", "--state-map", "a=b"], "--op migrate needs --to-version"),
        (["--op", "migrate", "--to-version", "2"], "and --definition"),
    ],
)
def test_batch_start_refuses_options_of_another_operation(
    fake: FakeServer, argv: list[str], message: str
) -> None:
    status, _, err = _run(fake, "batch", "start", *argv, "--reason", "r")
    assert status == 2
    assert message in err
    assert fake.service.calls("StartBatchOperation") == []


def test_batch_get_prints_progress_and_failures(fake: FakeServer) -> None:
    failure = bpb.BatchItemFailure(
        workflow="workflows/o-1", code="FAILED_PRECONDITION", reason="NOT_FAILED", message="no"
    )
    fake.service.behaviours["GetBatchOperation"] = lambda r, c: bpb.GetBatchOperationResponse(
        batch=_batch(state=bpb.BATCH_STATE_RUNNING, done=2, failed=1),
        failures=[failure],
        next_failures_page_token="t2",
    )
    status, printed, _ = _run(fake, "batch", "get", "b1", "--failures-page-size", "1")
    assert status == 0
    assert printed["batch"]["done"] == 2 and printed["batch"]["operation"] == {"retry": {}}
    assert printed["failures"][0]["reason"] == "NOT_FAILED"
    assert printed["next_failures_page_token"] == "t2"
    (request,) = fake.service.calls("GetBatchOperation")
    assert (request.name, request.failures_page_size) == ("batches/b1", 1)
    out = io.StringIO()
    assert cli.main(["--target", fake.target, "batch", "get", "b1", "-o", "table"], stdout=out) == 0
    table = out.getvalue()
    assert "progress:" in table and "2 of 4 done, 1 failed, 1 left" in table
    assert "o-1: FAILED_PRECONDITION NOT_FAILED: no" in table
    assert "--failures-page-token t2" in table


def test_batch_get_wait_prints_a_line_per_change_until_it_ends(fake: FakeServer) -> None:
    answers = iter(
        [
            _batch(state=bpb.BATCH_STATE_RUNNING, done=1),
            _batch(state=bpb.BATCH_STATE_RUNNING, done=3),
            _batch(state=bpb.BATCH_STATE_COMPLETED, done=3, failed=1),
        ]
    )
    fake.service.behaviours["GetBatchOperation"] = lambda r, c: bpb.GetBatchOperationResponse(
        batch=next(answers)
    )
    out = io.StringIO()
    argv = ["--target", fake.target, "batch", "get", "b1", "--wait", "--interval", "10ms"]
    assert cli.main([*argv, "-o", "text"], stdout=out) == 0
    assert out.getvalue().splitlines() == [
        "batches/b1 RUNNING: 1 of 4 done, 0 failed, 3 left",
        "batches/b1 RUNNING: 3 of 4 done, 0 failed, 1 left",
        "batches/b1 COMPLETED: 3 of 4 done, 1 failed",
    ]


def test_batch_list_and_cancel(fake: FakeServer) -> None:
    fake.service.behaviours["ListBatchOperations"] = lambda r, c: bpb.ListBatchOperationsResponse(
        batches=[_batch("batches/b2"), _batch("batches/b1")]
    )
    fake.service.behaviours["CancelBatchOperation"] = lambda r, c: bpb.CancelBatchOperationResponse(
        batch=_batch(r.name, state=bpb.BATCH_STATE_CANCELLED, cancel_reason=r.reason)
    )
    status, printed, _ = _run(fake, "batch", "list", "--state", "running", "--limit", "1")
    assert status == 0 and [b["name"] for b in printed] == ["batches/b2"]
    (listed,) = fake.service.calls("ListBatchOperations")
    assert listed.state == bpb.BATCH_STATE_RUNNING
    status, printed, _ = _run(fake, "batch", "cancel", "b2", "--reason", "wrong filter")
    assert status == 0
    assert (printed["state"], printed["cancel_reason"]) == ("CANCELLED", "wrong filter")
    out = io.StringIO()
    assert cli.main(["--target", fake.target, "batch", "list", "-o", "table"], stdout=out) == 0
    assert out.getvalue().splitlines()[0].split() == [
        "BATCH", "OPERATION", "STATE", "MATCHED", "DONE", "FAILED", "CREATED"
    ]  # fmt: skip


def test_every_batch_option_has_help_text() -> None:
    parser = cli.build_parser()
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    (actions,) = (
        a for a in commands.choices["batch"]._actions if isinstance(a, argparse._SubParsersAction)
    )
    assert set(actions.choices) == {"start", "get", "list", "cancel"}
    missing = [
        f"batch {name} {action.dest}"
        for name, sub in actions.choices.items()
        for action in sub._actions
        if not action.help
    ]
    assert missing == []
