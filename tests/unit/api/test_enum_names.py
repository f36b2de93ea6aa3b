"""Enum values read as text take either spelling: the proto's and the short one."""

from __future__ import annotations

from google.protobuf import json_format
from statewright.v1 import task_pb2, task_service_pb2, workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.api.enum_names import enum_value_name, full_enum_names

STATUS = workflow_pb2.WorkflowStatus.DESCRIPTOR


def test_each_value_by_its_proto_name_or_its_short_name_in_any_case() -> None:
    for text in (
        "WAITING",
        "waiting",
        " Waiting ",
        "WORKFLOW_STATUS_WAITING",
        "workflow_status_waiting",
    ):
        assert enum_value_name(STATUS, text) == "WORKFLOW_STATUS_WAITING", text
    assert enum_value_name(STATUS, "SLEEPING") is None
    assert enum_value_name(STATUS, "STATUS_WAITING") is None


def test_a_request_parses_alike_from_either_spelling() -> None:
    for text in ("COMPLETED", "WORKFLOW_STATUS_COMPLETED", "completed"):
        message = json_format.ParseDict(
            full_enum_names(pb.ListWorkflowsRequest(), {"status": text, "pageSize": "5"}),
            pb.ListWorkflowsRequest(),
        )
        assert message.status == workflow_pb2.WORKFLOW_STATUS_COMPLETED
        assert message.page_size == 5
    tasks = task_service_pb2.ListTasksRequest()
    json_format.ParseDict(full_enum_names(tasks, {"status": "timed_out"}), tasks)
    assert tasks.status == task_pb2.TASK_STATUS_TIMED_OUT
    start = pb.StartWorkflowRequest()
    json_format.ParseDict(
        full_enum_names(start, {"if_exists": "return_existing", "input": {"status": "WAITING"}}),
        start,
    )
    assert start.if_exists == pb.IF_EXISTS_POLICY_RETURN_EXISTING
    assert start.input["status"] == "WAITING", "a Struct's values are the caller's own"


def test_a_value_that_names_nothing_is_left_for_the_parser_to_refuse() -> None:
    assert full_enum_names(pb.ListWorkflowsRequest(), {"status": "SLEEPING", "x": 1}) == {
        "status": "SLEEPING",
        "x": 1,
    }
