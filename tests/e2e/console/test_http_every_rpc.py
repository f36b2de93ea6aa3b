"""Every RPC of the protos over HTTP, at the routes transcoded from its google.api.http
annotation, against a real server on PostgreSQL.

The first walk is generated from the descriptors, so an RPC added to a proto is walked
with no change here: each route is called with its path filled in and an empty request,
and answers as the same request over gRPC does (the same code and reason, or both
succeed). The second calls every RPC with a request that succeeds, and checks that each
answer is its response message; it names the RPCs it knows, and fails for one it does not.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import grpc
import pytest
from google.protobuf import json_format, message_factory
from google.protobuf.message import Message
from statewright.v1 import batch_service_pb2 as batch_pb
from statewright.v1 import schedule_service_pb2 as schedule_pb
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.console.http_rules import Route, RouteTable, routes
from tests.support.api import error_info, uid
from tests.support.console import Answer, Http
from tests.support.server import ServerProcess

SERVICES = [
    pb.DESCRIPTOR.services_by_name["WorkflowService"],
    task_pb.DESCRIPTOR.services_by_name["TaskService"],
    schedule_pb.DESCRIPTOR.services_by_name["ScheduleService"],
    batch_pb.DESCRIPTOR.services_by_name["BatchService"],
]
TABLE = RouteTable(routes(SERVICES))
EVERY_RPC = {route.method.name for route in TABLE}
_absent = itertools.count(1)


def _fill(route: Route) -> tuple[str, dict[str, str]]:
    """The route's path with each variable's wildcards filled with a name nobody uses."""
    path = route.template.text
    values: dict[str, str] = {}
    for variable in route.template.variables:
        start = path.index("{" + variable.field_path)
        end = path.index("}", start)
        _, _, pattern = path[start + 1 : end].partition("=")
        parts = [f"absent{next(_absent)}" if p == "*" else p for p in (pattern or "*").split("/")]
        value = "/".join(parts)
        values[variable.field_path] = value
        path = path[:start] + value + path[end + 1 :]
    return path, values


def _over_grpc(server: ServerProcess, route: Route, message: Message) -> tuple[str, str]:
    """(code, reason) of ``message`` sent to the route's RPC over gRPC; ("OK", "") if it
    succeeds (a stream: its first message arrives)."""
    response = message_factory.GetMessageClass(route.method.output_type)
    with server.channel() as channel:
        try:
            if route.streaming:
                call = channel.unary_stream(
                    route.rpc,
                    request_serializer=type(message).SerializeToString,
                    response_deserializer=response.FromString,
                )(message, timeout=10)
                next(iter(call))
                call.cancel()
            else:
                channel.unary_unary(
                    route.rpc,
                    request_serializer=type(message).SerializeToString,
                    response_deserializer=response.FromString,
                )(message, timeout=10)
        except grpc.RpcError as err:
            code: grpc.StatusCode = err.code()
            return code.name, error_info(err).reason
    return "OK", ""


def _over_http(http: Http, route: Route, path: str) -> Answer:
    if route.streaming:
        stream = http.events(path)
        try:
            body: Any = json.loads(stream.response.read()) if stream.status != 200 else {}
            return Answer(stream.status, body, {})
        finally:
            stream.close()
    body_text = "{}" if route.body else None
    headers = {"Content-Type": "application/json"} if route.body else None
    return http.request(route.http_method, path, body_text, headers=headers)


def test_every_route_of_the_protos_answers_as_its_rpc_does(
    console_server: ServerProcess, http: Http
) -> None:
    walked = set()
    for route in TABLE:
        path, values = _fill(route)
        answer = _over_http(http, route, path)
        assert answer.status < 500, (route.rpc, path, answer.body)
        message = message_factory.GetMessageClass(route.method.input_type)()
        for field, value in values.items():
            *parents, leaf = field.split(".")  # a path variable may name a nested field
            target = message
            for parent in parents:
                target = getattr(target, parent)
            setattr(target, leaf, value)
        grpc_code, grpc_reason = _over_grpc(console_server, route, message)
        if answer.status == 200:
            assert grpc_code == "OK", (route.rpc, grpc_code, grpc_reason)
            if not route.streaming:
                response = message_factory.GetMessageClass(route.method.output_type)()
                json_format.ParseDict(answer.body, response)
        else:
            code, reason = answer.error
            assert reason not in ("ENDPOINT_NOT_FOUND", "METHOD_NOT_ALLOWED"), (route.rpc, path)
            assert (code, reason) == (grpc_code, grpc_reason), (route.rpc, path, answer.body)
        walked.add(route.method.name)
    assert walked == {m.name for s in SERVICES for m in s.methods}


def _ok(answer: Answer, rpc: str, seen: set[str]) -> dict[str, Any]:
    assert answer.status == 200, (rpc, answer.status, answer.body)
    route = next(r for r in TABLE if r.method.name == rpc)
    response = message_factory.GetMessageClass(route.method.output_type)()
    json_format.ParseDict(answer.body, response)  # exactly the response message's fields
    seen.add(rpc)
    body: dict[str, Any] = answer.body
    return body


# Two versions of one definition, for MigrateWorkflow (its wait state renamed).
MIGRATING = """
name: migrating
version: {version}
states:
  {state}: {{wait: true}}
  done: {{}}
transitions:
  - {{from: {state}, on: go, to: done}}
"""


@pytest.fixture(scope="module")
def console_definitions() -> dict[str, str]:
    return {
        "migrating-v1.yaml": MIGRATING.format(version=1, state="hold"),
        "migrating-v2.yaml": MIGRATING.format(version=2, state="held"),
    }


def test_every_rpc_succeeds_over_http(http: Http) -> None:
    seen: set[str] = set()
    W = "/api/v1/workflows"
    _ok(http.get("/api/v1/definitions"), "ListDefinitions", seen)
    _ok(http.get("/api/v1/definitions/task-flow"), "GetDefinition", seen)

    def start(definition: str, **input_: Any) -> str:
        started = _ok(
            http.post(W, {"definition": definition, "input": input_}), "StartWorkflow", seen
        )
        workflow_id: str = started["workflow"]["workflowId"]
        return workflow_id

    waiting = start("mail-approval", topic="t")
    resumed = _ok(http.post(f"{W}/{waiting}/resume", {"event": "approve"}), "ResumeWorkflow", seen)
    assert resumed["workflow"]["status"] == "WORKFLOW_STATUS_COMPLETED"

    working = start("task-flow", route="cancel")
    _ok(http.get(f"{W}/{working}"), "GetWorkflow", seen)
    listed = _ok(http.get(W, definition="task-flow", pageSize=1000), "ListWorkflows", seen)
    assert working in {w["workflowId"] for w in listed["workflows"]}
    counted = _ok(http.get(f"{W}:count", filter="definition = task-flow"), "CountWorkflows", seen)
    assert int(counted["total"]) == len(listed["workflows"])
    _ok(http.get(f"{W}/{working}/diagnostics"), "GetWorkflowDiagnostics", seen)
    _ok(http.get("/api/v1/diagnostics"), "GetDiagnostics", seen)
    stream = http.events(f"{W}/{working}/watch")
    assert stream.until("current").data["revision"] == "1"
    stream.close()
    seen.add("WatchWorkflow")

    tasks = _ok(http.get("/api/v1/tasks", queue="e2e.cancel"), "ListTasks", seen)["tasks"]
    assert [t["name"].rpartition("/tasks/")[0] for t in tasks] == [f"workflows/{working}"]
    text = f"queue = e2e.cancel AND workflow = workflows/{working} AND status = SCHEDULED"
    assert http.get("/api/v1/tasks", filter=text).body["tasks"] == tasks
    poll = {"queue": "e2e.cancel", "identity": "http-test", "wait": "5s"}
    (task,) = _ok(http.post("/api/v1/tasks:poll", poll), "PollTasks", seen)["tasks"]
    name, lease = task["name"], {"leaseToken": task["leaseToken"]}
    _ok(http.get(f"/api/v1/{name}"), "GetTask", seen)
    _ok(http.post(f"/api/v1/{name}/heartbeat", lease), "HeartbeatTask", seen)
    done = _ok(
        http.post(
            f"/api/v1/{name}/complete", {**lease, "result": {"by": "http"}, "requestId": uid()}
        ),
        "CompleteTask",
        seen,
    )
    assert done["workflow"]["status"] == "WORKFLOW_STATUS_COMPLETED"

    retried = start("task-flow", route="retry")
    poll = {"queue": "e2e.retry", "identity": "http-test", "wait": "5s"}
    (task,) = _ok(http.post("/api/v1/tasks:poll", poll), "PollTasks", seen)["tasks"]
    failure = {"leaseToken": task["leaseToken"], "error": {"type": "FLAKY", "message": "once"}}
    failed = _ok(http.post(f"/api/v1/{task['name']}/fail", failure), "FailTask", seen)
    assert failed["task"]["status"] == "TASK_STATUS_BACKOFF"

    signalled = start("task-flow", route="cancel")
    answer = _ok(http.post(f"{W}/{signalled}/signal", {"event": "stop"}), "SignalWorkflow", seen)
    assert answer["accepted"] is True
    body: dict[str, Any] = {"definition": "task-flow", "workflowId": uid(), "event": "stop"}
    body["input"] = {"route": "cancel"}
    both = _ok(http.post(f"{W}:signalWithStart", body), "SignalWithStartWorkflow", seen)
    assert both["started"] is True and both["accepted"] is True

    held = _ok(http.post(W, {"definition": "migrating", "version": 1}), "StartWorkflow", seen)
    moving = held["workflow"]["workflowId"]
    body = {"toVersion": 2, "stateMap": {"hold": "held"}, "reason": "walk", "dryRun": True}
    plan = _ok(http.post(f"{W}/{moving}/migrate", body), "MigrateWorkflow", seen)["plan"]
    assert (plan["stateFrom"], plan["stateTo"]) == ("hold", "held")
    body["dryRun"] = False
    moved = _ok(http.post(f"{W}/{moving}/migrate", body), "MigrateWorkflow", seen)["workflow"]
    assert (moved["version"], moved["state"]) == (2, "held")

    paused = _ok(http.post(f"{W}/{retried}/pause", {"reason": "walk"}), "PauseWorkflow", seen)
    assert paused["workflow"]["paused"] is True and paused["workflow"]["pause"]["reason"] == "walk"
    body = {"reason": "walk", "dryRun": True}
    unpaused = _ok(http.post(f"{W}/{retried}/unpause", body), "UnpauseWorkflow", seen)
    assert unpaused["dryRun"] is True and unpaused["workflow"]["paused"] is False
    _ok(http.post(f"{W}/{retried}/unpause", {"reason": "walk"}), "UnpauseWorkflow", seen)
    cancelled = _ok(http.post(f"{W}/{retried}/cancel", {"reason": "walk"}), "CancelWorkflow", seen)
    assert cancelled["workflow"]["status"] == "WORKFLOW_STATUS_CANCELLED"
    back = _ok(http.post(f"{W}/{retried}/reset", {"toRevision": 1}), "ResetWorkflow", seen)
    assert back["workflow"]["status"] == "WORKFLOW_STATUS_RUNNING"
    broken = start("fragile", mode="compute", divisor=0)
    body = {"reason": "walk", "dryRun": True}
    again = _ok(http.post(f"{W}/{broken}/retry", body), "RetryWorkflow", seen)
    assert again["dryRun"] is True and again["workflow"]["status"] == "WORKFLOW_STATUS_FAILED"
    _ok(http.post(f"{W}/{retried}/cancel", {"reason": "walk"}), "CancelWorkflow", seen)
    deleted = _ok(http.request("DELETE", f"{W}/{retried}"), "DeleteWorkflow", seen)
    assert deleted["workflow"]["workflowId"] == retried
    assert http.get(f"{W}/{retried}").status == 404
    gone = _ok(http.request("DELETE", f"{W}/{retried}?allowMissing=true"), "DeleteWorkflow", seen)
    assert "workflow" not in gone or not gone["workflow"]["workflowId"]

    S = "/api/v1/schedules"
    sid = uid("http")
    schedule = {
        "spec": {"interval": "3600s"},
        "action": {"definition": "mail-approval", "input": {"topic": "hourly"}},
        "state": {"paused": True},
    }
    made = _ok(http.post(f"{S}?scheduleId={sid}", schedule), "CreateSchedule", seen)
    assert made["schedule"]["name"] == f"schedules/{sid}"
    _ok(http.get(f"{S}/{sid}"), "GetSchedule", seen)
    assert sid in {s["scheduleId"] for s in _ok(http.get(S), "ListSchedules", seen)["schedules"]}
    changed = {**schedule, "name": f"schedules/{sid}", "spec": {"interval": "7200s"}}
    updated = _ok(http.request("PATCH", f"{S}/{sid}", json.dumps(changed),
                               headers={"Content-Type": "application/json"}),
                  "UpdateSchedule", seen)  # fmt: skip
    assert updated["schedule"]["spec"]["interval"] == "7200s"
    _ok(http.post(f"{S}/{sid}:unpause", {"note": "go"}), "UnpauseSchedule", seen)
    _ok(http.post(f"{S}/{sid}:pause", {"note": "stop"}), "PauseSchedule", seen)
    fired = _ok(http.post(f"{S}/{sid}:trigger", {"force": True}), "TriggerSchedule", seen)
    assert fired["action"]["outcome"] == "SCHEDULE_ACTION_OUTCOME_STARTED"
    window = {"startTime": "2026-01-01T00:00:00Z", "endTime": "2026-01-01T03:00:00Z"}
    assert _ok(http.post(f"{S}/{sid}:backfill", window), "BackfillSchedule", seen)["fires"]
    _ok(http.request("DELETE", f"{S}/{sid}"), "DeleteSchedule", seen)
    limits = {"queue": "e2e.http-limits", "maxLeased": 3, "rate": 5}
    stored = _ok(
        http.request(
            "PUT",
            "/api/v1/queues/e2e.http-limits/config",
            json.dumps(limits),
            {"Content-Type": "application/json"},
        ),
        "SetQueueConfig",
        seen,
    )
    assert stored["config"]["maxLeased"] == 3
    got = _ok(http.get("/api/v1/queues/e2e.http-limits/config"), "GetQueueConfig", seen)
    assert got["config"]["rate"] == 5
    queues = _ok(http.get("/api/v1/queues", keyCount=3), "ListQueues", seen)["queues"]
    assert "e2e.http-limits" in [q["queue"] for q in queues]

    B = "/api/v1/batches"
    body = {"definition": "task-flow", "pause": {}, "reason": "walk", "dryRun": True}
    counted = _ok(http.post(B, body), "StartBatchOperation", seen)
    assert int(counted["batch"]["matched"]) >= 2 and counted["batch"]["name"] == ""
    # So slow that it is still running when it is cancelled below.
    body = {**body, "batchId": uid("walk"), "rate": 0.01, "dryRun": False}
    started = _ok(http.post(B, body), "StartBatchOperation", seen)["batch"]
    name = started["name"]
    assert name == f"batches/{body['batchId']}" and started["state"] == "BATCH_STATE_RUNNING"
    _ok(http.get(f"/api/v1/{name}", failuresPageSize=10), "GetBatchOperation", seen)
    batches = _ok(http.get(B, state="BATCH_STATE_RUNNING"), "ListBatchOperations", seen)["batches"]
    assert name in [b["name"] for b in batches]
    stopped = _ok(
        http.post(f"/api/v1/{name}:cancel", {"reason": "walk"}), "CancelBatchOperation", seen
    )
    assert stopped["batch"]["state"] == "BATCH_STATE_CANCELLED"

    assert seen == EVERY_RPC, f"walk these RPCs too: {sorted(EVERY_RPC - seen)}"


def test_the_openapi_document_describes_every_route(http: Http) -> None:
    answer = http.get("/api/v1/openapi.json")
    assert answer.status == 200 and answer.headers["content-type"].startswith("application/json")
    document = answer.body
    assert document["swagger"] == "2.0"
    # One operation per route; an RPC's additional bindings are numbered (GetDefinition2).
    operations = [
        operation["operationId"].rstrip("0123456789")
        for methods in document["paths"].values()
        for operation in methods.values()
    ]
    assert len(operations) == len(list(TABLE))
    assert set(operations) == {f"{r.method.containing_service.name}_{r.method.name}" for r in TABLE}
