"""The HTTP route table read from the protos' google.api.http annotations."""

from __future__ import annotations

from typing import Any

import pytest
from google.api import annotations_pb2, http_pb2
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.descriptor import ServiceDescriptor
from statewright.v1 import batch_service_pb2, task_service_pb2, workflow_service_pb2

from statewrightd.console.http_rules import (
    RouteTable,
    TemplateError,
    parse_template,
    routes,
)

SERVICES = [
    workflow_service_pb2.DESCRIPTOR.services_by_name["WorkflowService"],
    task_service_pb2.DESCRIPTOR.services_by_name["TaskService"],
    batch_service_pb2.DESCRIPTOR.services_by_name["BatchService"],
]


def test_every_rpc_of_every_service_has_a_route() -> None:
    table = RouteTable(routes(SERVICES))
    routed = {route.rpc for route in table}
    every = {f"/{s.full_name}/{m.name}" for s in SERVICES for m in s.methods}
    assert routed == every


def test_today_s_console_paths_are_kept() -> None:
    table = RouteTable(routes(SERVICES))

    def rpc(method: str, path: str) -> tuple[str, dict[str, str]]:
        found = table.match(method, path)
        assert found is not None, (method, path)
        return found[0].method.name, found[1]

    assert rpc("POST", "/api/v1/workflows") == ("StartWorkflow", {})
    assert rpc("GET", "/api/v1/workflows") == ("ListWorkflows", {})
    assert rpc("GET", "/api/v1/workflows/o-1") == ("GetWorkflow", {"name": "workflows/o-1"})
    assert rpc("DELETE", "/api/v1/workflows/o-1") == ("DeleteWorkflow", {"name": "workflows/o-1"})
    for verb in ("resume", "signal", "cancel"):
        assert rpc("POST", f"/api/v1/workflows/o-1/{verb}")[0] == f"{verb.title()}Workflow"
    assert rpc("GET", "/api/v1/workflows/o-1/watch")[0] == "WatchWorkflow"
    assert rpc("GET", "/api/v1/workflows/o-1/diagnostics")[0] == "GetWorkflowDiagnostics"
    assert rpc("GET", "/api/v1/diagnostics")[0] == "GetDiagnostics"
    assert rpc("GET", "/api/v1/definitions")[0] == "ListDefinitions"
    assert rpc("GET", "/api/v1/definitions/mail") == ("GetDefinition", {"name": "definitions/mail"})
    assert rpc("GET", "/api/v1/definitions/mail/versions/2") == (
        "GetDefinition",
        {"name": "definitions/mail/versions/2"},
    )
    assert rpc("POST", "/api/v1/tasks:poll")[0] == "PollTasks"
    assert rpc("GET", "/api/v1/workflows/o-1/tasks/3") == (
        "GetTask",
        {"name": "workflows/o-1/tasks/3"},
    )
    # Percent-encoded characters of an id arrive decoded.
    assert rpc("GET", "/api/v1/workflows/a%3Ab")[1] == {"name": "workflows/a:b"}
    assert rpc("POST", "/api/v1/batches")[0] == "StartBatchOperation"
    assert rpc("GET", "/api/v1/batches")[0] == "ListBatchOperations"
    assert rpc("GET", "/api/v1/batches/b-1") == ("GetBatchOperation", {"name": "batches/b-1"})
    assert rpc("POST", "/api/v1/batches/b-1:cancel") == (
        "CancelBatchOperation",
        {"name": "batches/b-1"},
    )


def test_no_route_and_a_wrong_method_are_told_apart() -> None:
    table = RouteTable(routes(SERVICES))
    assert table.match("GET", "/api/v1/nothing") is None
    assert table.match("GET", "/api/v1/workflows/") is None  # an empty segment
    assert table.match("GET", "/api/v1/workflows:watch") is None  # an event stream's
    head = table.match("HEAD", "/api/v1/workflows/o-1")
    assert head is not None and head[0].method.name == "GetWorkflow"
    with pytest.raises(LookupError):
        table.match("HEAD", "/api/v1/workflows/o-1/watch")  # a stream has no HEAD
    with pytest.raises(LookupError) as allowed:
        table.match("PUT", "/api/v1/workflows/o-1")
    assert allowed.value.args[0] == ["DELETE", "GET"]
    with pytest.raises(UnicodeDecodeError):
        table.match("GET", "/api/v1/workflows/%ff")


def test_templates_follow_the_grammar() -> None:
    template = parse_template("/v1/{name=shelves/*/books/**}:get")
    assert template.verb == "get"
    assert template.match("/v1/shelves/s/books/a/b%2Fc:get") == {"name": "shelves/s/books/a/b%2Fc"}
    assert template.match("/v1/shelves/s/books/a") is None
    plain = parse_template("/v1/{a}/{b.c=x/*}")
    assert plain.match("/v1/1/x/2") == {"a": "1", "b.c": "x/2"}
    assert plain.literals < parse_template("/v1/{a}/x/y").literals
    for bad in ("v1/x", "/v1/{a", "/v1/{A}", "/v1/**/x", "/v1/x/", "/v1/{a}/{a}", "/v1/a b"):
        with pytest.raises(TemplateError):
            parse_template(bad)


def _planted(package: str, template: str) -> ServiceDescriptor:
    """A service of one RPC, with ``template`` as its GET route (none when empty)."""
    file = descriptor_pb2.FileDescriptorProto(
        name=f"{package}.proto", package=package, dependency=["google/api/annotations.proto"]
    )
    file.message_type.add(name="Req").field.add(
        name="name", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING
    )
    method = file.service.add(name="Planted").method.add(
        name="Call", input_type=f".{package}.Req", output_type=f".{package}.Req"
    )
    if template:
        http: Any = annotations_pb2.http  # its stubs type it as a plain field
        method.options.Extensions[http].CopyFrom(http_pb2.HttpRule(get=template))
    pool = descriptor_pool.Default()
    pool.Add(file)
    return pool.FindServiceByName(f"{package}.Planted")


def test_an_rpc_without_a_route_or_with_a_bad_one_stops_the_start() -> None:
    assert len(routes([_planted("planted.ok", "/v1/{name=things/*}")])) == 1
    with pytest.raises(TemplateError, match=r"no google\.api\.http"):
        routes([_planted("planted.none", "")])
    with pytest.raises(TemplateError, match="not a singular string field"):
        routes([_planted("planted.bad", "/v1/{other}")])
