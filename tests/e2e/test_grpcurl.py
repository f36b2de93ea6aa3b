"""grpcurl, as a user runs it, against a real server: list, describe and call through reflection.

grpcurl is built from its Go module into .tools/ (gitignored) the first time, with the
machine's Go toolchain, and reused afterwards. A machine that cannot build it fails this
module: the point is that the tool users already have works, so it is never skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.descriptor import FileDescriptor
from google.rpc import status_pb2
from statewright.v1 import (
    batch_service_pb2,
    definition_pb2,
    diagnostics_pb2,
    schedule_service_pb2,
    task_pb2,
    task_service_pb2,
    workflow_pb2,
    workflow_service_pb2,
)

from tests.support.deployment import REPO, definitions_dir, running_server
from tests.support.server import ServerProcess

GRPCURL_VERSION = "v1.9.4"
GRPCURL_MODULE = "github.com/fullstorydev/grpcurl/cmd/grpcurl"
SERVICE = "statewright.v1.WorkflowService"
TASK_SERVICE = "statewright.v1.TaskService"
SCHEDULE_SERVICE = "statewright.v1.ScheduleService"
BATCH_SERVICE = "statewright.v1.BatchService"
REFLECTION_SERVICES = (
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
)


@pytest.fixture(scope="module")
def grpcurl() -> Path:
    directory = REPO / ".tools" / f"grpcurl-{GRPCURL_VERSION}"
    binary = directory / "grpcurl"
    if binary.exists():
        return binary
    go = shutil.which("go")
    assert go is not None, "the Go toolchain is needed to build grpcurl for this test"
    # A private GOBIN, then a rename: an interrupted build never leaves half a binary.
    staging = Path(tempfile.mkdtemp(dir=REPO, prefix=".tools.staging."))
    try:
        built = subprocess.run(
            [go, "install", f"{GRPCURL_MODULE}@{GRPCURL_VERSION}"],
            env={
                **os.environ,
                "GOBIN": str(staging),
                "GOFLAGS": "-mod=mod",
                "GOTOOLCHAIN": "local",
            },
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert built.returncode == 0, f"building grpcurl failed:\n{built.stderr[-3000:]}"
        directory.mkdir(parents=True, exist_ok=True)
        os.replace(staging / "grpcurl", binary)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return binary


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Reflection does not depend on the backend: one SQLite-backed server is enough.
    root = tmp_path_factory.mktemp("grpcurl")
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    database = f"sqlite:///{root / 'statewright.db'}"
    with running_server(database, definitions, cwd=root, extra_args=["--reflection"]) as server:
        yield server
    assert "Traceback" not in server.log(), server.log()


def _run(
    grpcurl: Path, server: ServerProcess, *args: str, data: object = None, ok: bool = True
) -> str:
    flags = ["-plaintext", "-max-time", "20"]
    if data is not None:
        flags += ["-d", json.dumps(data)]
    done = subprocess.run(
        [str(grpcurl), *flags, server.target, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    else:
        assert done.returncode != 0, (args, done.stdout)
    return done.stdout + done.stderr


def _symbols(file: FileDescriptor) -> Iterator[str]:
    """Every named thing a user may describe: services, methods, messages, enums, values."""

    def message(descriptor: Any) -> Iterator[str]:
        yield descriptor.full_name
        for nested in descriptor.nested_types:
            if not nested.GetOptions().map_entry:
                yield from message(nested)
        for enum in descriptor.enum_types:
            yield from enum_symbols(enum)

    def enum_symbols(enum: Any) -> Iterator[str]:
        yield enum.full_name
        for value in enum.values:
            yield f"{enum.full_name}.{value.name}"

    for service in file.services_by_name.values():
        yield service.full_name
        for method in service.methods:
            yield method.full_name
    for descriptor in file.message_types_by_name.values():
        yield from message(descriptor)
    for enum in file.enum_types_by_name.values():
        yield from enum_symbols(enum)


def test_list_shows_every_service_and_method(grpcurl: Path, server: ServerProcess) -> None:
    services = _run(grpcurl, server, "list").split()
    ours = [SERVICE, TASK_SERVICE, SCHEDULE_SERVICE, BATCH_SERVICE]
    assert services == sorted([*ours, "grpc.health.v1.Health", *REFLECTION_SERVICES])
    for name, module in (
        (SERVICE, workflow_service_pb2),
        (TASK_SERVICE, task_service_pb2),
        (SCHEDULE_SERVICE, schedule_service_pb2),
        (BATCH_SERVICE, batch_service_pb2),
    ):
        methods = _run(grpcurl, server, "list", name).split()
        declared = module.DESCRIPTOR.services_by_name[name.rpartition(".")[2]].methods
        assert methods == sorted(m.full_name for m in declared)


def test_describe_a_service_a_method_and_a_message(grpcurl: Path, server: ServerProcess) -> None:
    service = _run(grpcurl, server, "describe", SERVICE)
    assert f"{SERVICE} is a service:" in service
    assert (
        "rpc WatchWorkflow ( .statewright.v1.WatchWorkflowRequest ) returns "
        "( stream .statewright.v1.WatchWorkflowResponse )"
    ) in service
    # Each RPC shows its HTTP route, the google.api.http annotation.
    assert 'get: "/api/v1/{name=workflows/*}/watch"' in service

    method = _run(grpcurl, server, "describe", f"{SERVICE}.StartWorkflow")
    assert f"{SERVICE}.StartWorkflow is a method:" in method
    assert (
        "rpc StartWorkflow ( .statewright.v1.StartWorkflowRequest ) returns "
        "( .statewright.v1.StartWorkflowResponse )"
    ) in method

    message = _run(grpcurl, server, "describe", "statewright.v1.StartWorkflowRequest")
    assert "statewright.v1.StartWorkflowRequest is a message:" in message
    assert "string definition = 1;" in message
    assert ".google.protobuf.Struct input = 4;" in message
    assert ".statewright.v1.IfExistsPolicy if_exists = 6;" in message

    value = _run(grpcurl, server, "describe", "statewright.v1.IfExistsPolicy.IF_EXISTS_POLICY_FAIL")
    assert "is an enum value:" in value and "IF_EXISTS_POLICY_FAIL = 1;" in value


def _comment_above(proto: str, line: str) -> str:
    """The comment the proto file has right above ``line``, as grpcurl prints it."""
    lines = (REPO / "proto/statewright/v1" / proto).read_text(encoding="utf-8").splitlines()
    at = next(i for i, text in enumerate(lines) if text.strip().startswith(line))
    above: list[str] = []
    while lines[at - 1].strip().startswith("//"):
        at -= 1
        above.insert(0, lines[at].strip())
    assert above, f"{proto} has no comment above {line}"
    return "\n".join(above)


def test_describe_shows_the_protos_comments(grpcurl: Path, server: ServerProcess) -> None:
    service = _run(grpcurl, server, "describe", SERVICE)
    assert _comment_above("workflow_service.proto", "service WorkflowService") in service
    method = _run(grpcurl, server, "describe", f"{SERVICE}.StartWorkflow")
    assert _comment_above("workflow_service.proto", "rpc StartWorkflow(") in method
    message = _run(grpcurl, server, "describe", "statewright.v1.Workflow")
    assert _comment_above("workflow.proto", "message Workflow {") in message
    tasks = _run(grpcurl, server, "describe", f"{TASK_SERVICE}.PollTasks")
    assert _comment_above("task_service.proto", "rpc PollTasks(") in tasks


def test_health_list_answers_every_service(grpcurl: Path, server: ServerProcess) -> None:
    listed = json.loads(_run(grpcurl, server, "grpc.health.v1.Health/List"))
    statuses = {name: value["status"] for name, value in listed["statuses"].items()}
    assert statuses == {
        "": "SERVING",
        SERVICE: "SERVING",
        TASK_SERVICE: "SERVING",
        SCHEDULE_SERVICE: "SERVING",
        BATCH_SERVICE: "SERVING",
        "liveness": "SERVING",
        "readiness": "SERVING",
    }


def test_every_symbol_resolves(grpcurl: Path, server: ServerProcess) -> None:
    files = [
        workflow_service_pb2,
        workflow_pb2,
        definition_pb2,
        diagnostics_pb2,
        task_service_pb2,
        task_pb2,
        batch_service_pb2,
    ]
    symbols = [s for module in files for s in _symbols(module.DESCRIPTOR)]
    # The well-known types and error types the API uses, and the services beside it.
    symbols += [
        "google.protobuf.Struct",
        "google.protobuf.Value",
        "google.protobuf.ListValue",
        "google.protobuf.NullValue",
        "google.protobuf.Duration",
        "google.protobuf.Timestamp",
        "google.protobuf.Any",
        status_pb2.Status.DESCRIPTOR.full_name,
        "google.rpc.ErrorInfo",
        "grpc.health.v1.Health.Check",
        *REFLECTION_SERVICES,
        *(f"{s}.ServerReflectionInfo" for s in REFLECTION_SERVICES),
    ]
    assert len(symbols) > 80
    unresolved = []
    for symbol in symbols:
        done = subprocess.run(
            [str(grpcurl), "-plaintext", "-max-time", "20", server.target, "describe", symbol],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if done.returncode != 0 or f"{symbol} is a" not in done.stdout:
            unresolved.append((symbol, done.stderr.strip()))
    assert unresolved == []
    # A member that does not exist is still not found.
    missing = _run(grpcurl, server, "describe", f"{SERVICE}.NoSuchMethod", ok=False)
    assert "Symbol not found" in missing


def test_both_reflection_versions_answer(grpcurl: Path, server: ServerProcess) -> None:
    for service in REFLECTION_SERVICES:
        out = _run(grpcurl, server, f"{service}/ServerReflectionInfo", data={"list_services": ""})
        response = json.loads(out)
        # grpcio's reflection file declares its JSON names as the proto names.
        listed = response.get("listServicesResponse") or response["list_services_response"]
        names = [s["name"] for s in listed["service"]]
        assert SERVICE in names and service in names


def test_calls_through_reflection(grpcurl: Path, server: ServerProcess) -> None:
    started = json.loads(
        _run(
            grpcurl,
            server,
            f"{SERVICE}/StartWorkflow",
            data={"definition": "mail-approval", "input": {"topic": "grpcurl"}},
        )
    )
    workflow = started["workflow"]
    assert workflow["status"] == "WORKFLOW_STATUS_WAITING"
    assert workflow["context"]["draft"] == "Dear team: grpcurl"
    assert started["created"] is True

    diagnostics = json.loads(_run(grpcurl, server, f"{SERVICE}/GetDiagnostics"))
    assert "definitions/mail-approval/versions/2" in diagnostics["definitions"]

    # An error's ErrorInfo is decoded too: its type resolves through reflection.
    failed = _run(
        grpcurl, server, f"{SERVICE}/GetWorkflow", data={"name": "workflows/absent"}, ok=False
    )
    assert "Code: NotFound" in failed
    assert '"@type": "type.googleapis.com/google.rpc.ErrorInfo"' in failed
    assert '"reason": "WORKFLOW_NOT_FOUND"' in failed
