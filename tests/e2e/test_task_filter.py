"""ListTasks' filter over real gRPC, on PostgreSQL and SQLite: a filtered listing answers
what the started instances' tasks say, page by page, and a bad filter is refused with its
position and problem. (The HTTP door's `?filter=` is in console/test_http_every_rpc.py.)"""

from __future__ import annotations

import grpc
from statewright.v1 import task_service_pb2 as pb
from statewright.v1 import task_service_pb2_grpc

from tests.support.api import Client, expect_error, uid


def _listed(client: Client, text: str) -> list[str]:
    tasks = task_service_pb2_grpc.TaskServiceStub(client.channel)
    names: list[str] = []
    token = ""
    for _ in range(50):
        request = pb.ListTasksRequest(filter=text, page_size=2, page_token=token)
        page = tasks.ListTasks(request, timeout=10)
        names += [t.workflow for t in page.tasks]
        token = page.next_page_token
        if not token:
            return names
    raise AssertionError("the listing did not end")


def test_a_task_filter_lists_the_tasks_it_names(client: Client) -> None:
    started = {}
    for route in ("apply", "apply", "apply", "retry", "retry"):
        wid = uid(f"filter-{route}")
        client.start("task-flow", workflow_id=wid, input={"route": route})
        started[f"workflows/{wid}"] = route
    applied = [w for w, r in started.items() if r == "apply"]
    listed = _listed(client, "queue = e2e.apply AND status = SCHEDULED AND attempt = 0")
    assert set(applied) <= set(listed)
    assert not set(listed) & {w for w, r in started.items() if r == "retry"}
    first, last = applied[0], list(started)[-1]
    both = _listed(client, f"workflow = {first} OR workflow = {last.removeprefix('workflows/')}")
    assert sorted(both) == sorted([first, last])
    assert _listed(client, f"workflow = {first} AND state = applying") == [first]
    assert _listed(client, f"workflow = {first} AND definition = task-flow") == [first]
    assert _listed(client, f"workflow = {first} AND definition != task-flow") == []
    assert _listed(client, f"workflow = {first} AND NOT state = applying") == []
    info = expect_error(
        lambda: _listed(client, "status = RUNNING"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FILTER",
    )
    assert info.metadata["position"] == "9"
    assert info.metadata["problem"].startswith("status is one of BACKOFF, CANCELLED")
