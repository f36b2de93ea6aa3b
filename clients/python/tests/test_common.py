"""Service config, deadlines, request building, backoff and the watch cursor."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest
from statewright import _common
from statewright.errors import StatewrightError
from statewright.models import WorkflowStatus, workflow_name
from statewright.v1 import task_service_pb2, workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.fakes import workflow

SHARED_CONFIG = Path(__file__).resolve().parents[3] / "clients" / "service-config.json"


def test_packaged_service_config_is_the_shared_file() -> None:
    # The package ships a copy (package data must live inside the package); keep it exact.
    assert json.loads(_common.service_config_json()) == json.loads(SHARED_CONFIG.read_text())


def test_service_config_retries_only_unavailable() -> None:
    config = json.loads(_common.service_config_json())
    for entry in config["methodConfig"]:
        assert entry["retryPolicy"]["retryableStatusCodes"] == ["UNAVAILABLE"]


def test_method_timeouts_come_from_the_config() -> None:
    timeouts = _common.method_timeouts()
    assert timeouts["GetWorkflow"] == 10.0
    assert timeouts["ListWorkflows"] == 10.0
    assert timeouts["StartWorkflow"] == 30.0
    assert timeouts["CancelWorkflow"] == 30.0
    assert "WatchWorkflow" not in timeouts
    assert timeouts["GetTask"] == 10.0
    assert timeouts["CompleteTask"] == 30.0
    assert timeouts["HeartbeatTask"] == 30.0
    # A long poll's deadline follows its wait, not the config.
    assert "PollTasks" not in timeouts


def test_method_names_are_unique_across_the_services() -> None:
    # The drivers and the timeouts key RPCs by bare method name.
    workflows = pb.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name
    tasks = task_service_pb2.DESCRIPTOR.services_by_name["TaskService"].methods_by_name
    assert set(workflows).isdisjoint(tasks)
    assert len(tasks) == 9


def test_channel_options_install_config_and_enable_retries() -> None:
    options = dict(_common.channel_options([("grpc.max_receive_message_length", 1)]))
    assert options["grpc.enable_retries"] == 1
    assert json.loads(options["grpc.service_config"])["methodConfig"]
    assert options["grpc.max_receive_message_length"] == 1


@pytest.mark.parametrize(("text", "seconds"), [("10s", 10.0), ("0.1s", 0.1), ("2s", 2.0)])
def test_parse_duration(text: str, seconds: float) -> None:
    assert _common.parse_duration(text) == seconds


def test_parse_duration_rejects_other_forms() -> None:
    with pytest.raises(ValueError, match="duration"):
        _common.parse_duration("10ms")


def test_names_accept_ids_and_resource_names() -> None:
    assert workflow_name("abc") == "workflows/abc"
    assert workflow_name("workflows/abc") == "workflows/abc"
    assert _common.definition_name("mail-approval", None) == "definitions/mail-approval"
    assert _common.definition_name("mail-approval", 2) == "definitions/mail-approval/versions/2"
    with pytest.raises(ValueError, match="not both"):
        _common.definition_name("definitions/x/versions/1", 1)


def test_mutating_requests_get_a_fresh_request_id_unless_given() -> None:
    first = _common.start_request(
        "d", input=None, workflow_id=None, version=None, request_id=None, if_exists=None
    )
    second = _common.start_request(
        "d", input=None, workflow_id=None, version=None, request_id=None, if_exists=None
    )
    assert first.request_id and second.request_id and first.request_id != second.request_id
    given = _common.resume_request(
        "w", event=None, input=None, expected_revision=None, request_id="mine"
    )
    assert given.request_id == "mine"
    assert given.name == "workflows/w"
    assert given.expected_revision == 0


def test_start_request_converts_input_and_policy() -> None:
    request = _common.start_request(
        "mail-approval",
        input={"topic": "x"},
        workflow_id="w",
        version=2,
        request_id=None,
        if_exists="return_existing",
    )
    assert request.input.fields["topic"].string_value == "x"
    assert request.if_exists == pb.IF_EXISTS_POLICY_RETURN_EXISTING
    assert request.version == 2
    with pytest.raises(ValueError, match="if_exists"):
        _common.start_request(
            "d",
            input=None,
            workflow_id=None,
            version=None,
            request_id=None,
            if_exists="replace",  # type: ignore[arg-type]
        )


def test_list_request_accepts_status_names() -> None:
    request = _common.list_request(definition="d", status="completed", page_size=2, page_token="t")
    assert request.status == workflow_pb2.WORKFLOW_STATUS_COMPLETED
    assert request.page_token == "t"
    request = _common.list_request(
        definition=None, status=WorkflowStatus.WAITING, page_size=None, page_token=""
    )
    assert request.status == workflow_pb2.WORKFLOW_STATUS_WAITING


def test_backoff_grows_to_its_cap_and_stops_at_the_budget() -> None:
    backoff = _common.Backoff(initial=0.1, maximum=0.4, budget=60.0)
    delays = [backoff.delay() for _ in range(5)]
    assert all(d is not None for d in delays)
    steps = [0.1, 0.2, 0.4, 0.4, 0.4]
    for delay, step in zip(delays, steps, strict=True):
        assert delay is not None and step / 2 <= delay <= step
    spent = _common.Backoff(budget=0.0)
    assert spent.delay() is None
    assert spent.delay(at_least=5.0) is None  # the budget still rules


def test_backoff_waits_at_least_what_the_server_asked() -> None:
    backoff = _common.Backoff(initial=0.1, maximum=0.4, budget=60.0)
    assert backoff.delay(at_least=3.0) == 3.0
    later = backoff.delay(at_least=0.001)
    assert later is not None and 0.1 <= later <= 0.2  # the backoff's own step, when longer


def test_resumable_codes() -> None:
    def err(code: grpc.StatusCode, reason: str = "") -> StatewrightError:
        return StatewrightError("m", code=code, reason=reason)

    assert _common.resumable(err(grpc.StatusCode.UNAVAILABLE))
    assert _common.resumable(err(grpc.StatusCode.UNAVAILABLE, "SHUTTING_DOWN"))
    assert _common.resumable(err(grpc.StatusCode.INTERNAL))  # e.g. RST_STREAM
    assert not _common.resumable(err(grpc.StatusCode.INTERNAL, "INTERNAL"))
    assert not _common.resumable(err(grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND"))
    assert not _common.resumable(err(grpc.StatusCode.DEADLINE_EXCEEDED))
    assert not _common.resumable(err(grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_WATCHES"))
    limited = StatewrightError(
        "m", code=grpc.StatusCode.RESOURCE_EXHAUSTED, reason="RATE_LIMITED", retry_delay=0.2
    )
    assert _common.resumable(limited)


def _message(revision: int, status: int) -> pb.WatchWorkflowResponse:
    return pb.WatchWorkflowResponse(
        type=pb.WATCH_EVENT_TYPE_STEP,
        revision=revision,
        workflow=workflow(revision=revision, status=status),
    )


def test_watch_cursor_resumes_after_the_last_revision_and_drops_replays() -> None:
    cursor = _common.WatchCursor("workflows/w", None)
    assert not cursor.request().HasField("after_revision")
    assert cursor.accept(_message(1, workflow_pb2.WORKFLOW_STATUS_WAITING)) is not None
    assert cursor.request().after_revision == 1
    assert cursor.accept(_message(1, workflow_pb2.WORKFLOW_STATUS_WAITING)) is None
    assert not cursor.done
    event = cursor.accept(_message(2, workflow_pb2.WORKFLOW_STATUS_COMPLETED))
    assert event is not None and event.revision == 2
    assert cursor.done


def test_watch_cursor_knows_when_a_quiet_end_is_final() -> None:
    from statewright.models import Workflow

    cursor = _common.WatchCursor("workflows/w", 2)
    done = Workflow.from_proto(workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_COMPLETED))
    live = Workflow.from_proto(workflow(revision=2, status=workflow_pb2.WORKFLOW_STATUS_RUNNING))
    assert cursor.finished_quietly(done)
    assert not cursor.finished_quietly(live)
    assert not _common.WatchCursor("workflows/w", None).finished_quietly(done)
