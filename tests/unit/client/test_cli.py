"""The statewright command-line tool: arguments, JSON output and exit statuses."""

from __future__ import annotations

import io
import json
from typing import Any

import grpc
import pytest
from statewright import cli
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.unit.client.fakes import FakeServer, abort, workflow


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
    status, body, _ = _run(fake, "list", "--status", "waiting", "--page-size", "2")
    assert status == 0
    assert [w["workflow_id"] for w in body] == ["p0-0", "p0-1", "p1-0", "p1-1"]
    assert fake.service.calls("ListWorkflows")[0].status == workflow_pb2.WORKFLOW_STATUS_WAITING
    _, limited, _ = _run(fake, "list", "--limit", "3")
    assert len(limited) == 3


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
