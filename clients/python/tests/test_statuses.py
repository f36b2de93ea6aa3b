"""The Python client reads a status in either spelling: WAITING or WORKFLOW_STATUS_WAITING."""

from __future__ import annotations

import pytest
from statewright import TaskStatus, WorkflowStatus
from statewright._common import list_request
from statewright.v1 import workflow_pb2


@pytest.mark.parametrize(
    "text",
    ["WAITING", "waiting", " Waiting ", "WORKFLOW_STATUS_WAITING", "workflow_status_waiting"],
)
def test_a_workflow_status_parses_from_either_spelling(text: str) -> None:
    assert WorkflowStatus.parse(text) is WorkflowStatus.WAITING
    request = list_request(definition=None, status=text, page_size=None, page_token="")
    assert request.status == workflow_pb2.WORKFLOW_STATUS_WAITING


def test_an_unknown_status_names_the_choices() -> None:
    with pytest.raises(ValueError, match="one of RUNNING, WAITING, COMPLETED, FAILED, CANCELLED"):
        WorkflowStatus.parse("sleeping")
    with pytest.raises(ValueError):
        WorkflowStatus.parse("WORKFLOW_STATUS_WORKFLOW_STATUS_WAITING")
    assert WorkflowStatus.parse(WorkflowStatus.FAILED) is WorkflowStatus.FAILED


def test_a_task_status_parses_from_either_spelling() -> None:
    assert TaskStatus.parse("TASK_STATUS_TIMED_OUT") is TaskStatus.TIMED_OUT
    assert TaskStatus.parse("timed_out") is TaskStatus.TIMED_OUT
    with pytest.raises(ValueError, match="TaskStatus"):
        TaskStatus.parse("DONE")
