"""The server process: health services, every RPC answering, malformed input, SIGTERM drain."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import duration_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from tests.support.api import Client, error_info
from tests.support.deployment import definitions_dir
from tests.support.server import STATEWRIGHTD, ServerProcess, wait_until

HEALTH_SERVICES = [
    "",
    "statewright.v1.WorkflowService",
    "statewright.v1.TaskService",
    "statewright.v1.ScheduleService",
    "statewright.v1.BatchService",
    "liveness",
    "readiness",
]


def well_formed_calls(
    stub: pb_grpc.WorkflowServiceStub,
) -> dict[str, Callable[[], Any]]:
    name = "workflows/wf-1"
    return {
        "StartWorkflow": lambda: stub.StartWorkflow(
            pb.StartWorkflowRequest(definition="mail-approval"), timeout=5
        ),
        "ResumeWorkflow": lambda: stub.ResumeWorkflow(
            pb.ResumeWorkflowRequest(name=name, event="approve"), timeout=5
        ),
        "SignalWorkflow": lambda: stub.SignalWorkflow(
            pb.SignalWorkflowRequest(name=name, event="go"), timeout=5
        ),
        "GetWorkflow": lambda: stub.GetWorkflow(pb.GetWorkflowRequest(name=name), timeout=5),
        "ListWorkflows": lambda: stub.ListWorkflows(pb.ListWorkflowsRequest(), timeout=5),
        "CancelWorkflow": lambda: stub.CancelWorkflow(
            pb.CancelWorkflowRequest(name=name), timeout=5
        ),
        "DeleteWorkflow": lambda: stub.DeleteWorkflow(
            pb.DeleteWorkflowRequest(name=name), timeout=5
        ),
        "WatchWorkflow": lambda: list(
            stub.WatchWorkflow(pb.WatchWorkflowRequest(name=name), timeout=5)
        ),
        "GetDiagnostics": lambda: stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=5),
        "GetWorkflowDiagnostics": lambda: stub.GetWorkflowDiagnostics(
            pb.GetWorkflowDiagnosticsRequest(name=name), timeout=5
        ),
        "ListDefinitions": lambda: stub.ListDefinitions(pb.ListDefinitionsRequest(), timeout=5),
        "GetDefinition": lambda: stub.GetDefinition(
            pb.GetDefinitionRequest(name="definitions/mail-approval"), timeout=5
        ),
        "CountWorkflows": lambda: stub.CountWorkflows(
            pb.CountWorkflowsRequest(filter="status = WAITING"), timeout=5
        ),
        "SignalWithStartWorkflow": lambda: stub.SignalWithStartWorkflow(
            pb.SignalWithStartWorkflowRequest(
                definition="review-loop", workflow_id="wf-1", event="score"
            ),
            timeout=5,
        ),
        "RetryWorkflow": lambda: stub.RetryWorkflow(
            pb.RetryWorkflowRequest(name=name, dry_run=True), timeout=5
        ),
        "ResetWorkflow": lambda: stub.ResetWorkflow(
            pb.ResetWorkflowRequest(name=name, to_revision=1, dry_run=True), timeout=5
        ),
        "MigrateWorkflow": lambda: stub.MigrateWorkflow(
            pb.MigrateWorkflowRequest(name=name, to_version=1, dry_run=True), timeout=5
        ),
        "PauseWorkflow": lambda: stub.PauseWorkflow(
            pb.PauseWorkflowRequest(name=name, dry_run=True), timeout=5
        ),
        "UnpauseWorkflow": lambda: stub.UnpauseWorkflow(
            pb.UnpauseWorkflowRequest(name=name, dry_run=True), timeout=5
        ),
    }


MALFORMED: list[tuple[str, Callable[[pb_grpc.WorkflowServiceStub], Any], str]] = [
    ("DeleteWorkflow", lambda s: s.DeleteWorkflow(pb.DeleteWorkflowRequest()), "name"),
    ("StartWorkflow", lambda s: s.StartWorkflow(pb.StartWorkflowRequest()), "definition"),
    (
        "StartWorkflow",
        lambda s: s.StartWorkflow(pb.StartWorkflowRequest(definition="Bad Name")),
        "definition",
    ),
    (
        "StartWorkflow",
        lambda s: s.StartWorkflow(
            pb.StartWorkflowRequest(definition="mail-approval", workflow_id="has space")
        ),
        "workflow_id",
    ),
    ("ResumeWorkflow", lambda s: s.ResumeWorkflow(pb.ResumeWorkflowRequest()), "name"),
    (
        "ResumeWorkflow",
        lambda s: s.ResumeWorkflow(
            pb.ResumeWorkflowRequest(name="workflows/a", expected_revision=-1)
        ),
        "expected_revision",
    ),
    (
        "SignalWorkflow",
        lambda s: s.SignalWorkflow(pb.SignalWorkflowRequest(name="workflows/a")),
        "event",
    ),
    ("GetWorkflow", lambda s: s.GetWorkflow(pb.GetWorkflowRequest(name="wf-1")), "name"),
    (
        "ListWorkflows",
        lambda s: s.ListWorkflows(pb.ListWorkflowsRequest(page_size=-5)),
        "page_size",
    ),
    ("CancelWorkflow", lambda s: s.CancelWorkflow(pb.CancelWorkflowRequest()), "name"),
    ("RetryWorkflow", lambda s: s.RetryWorkflow(pb.RetryWorkflowRequest()), "name"),
    ("PauseWorkflow", lambda s: s.PauseWorkflow(pb.PauseWorkflowRequest()), "name"),
    ("UnpauseWorkflow", lambda s: s.UnpauseWorkflow(pb.UnpauseWorkflowRequest()), "name"),
    (
        "ResetWorkflow",
        lambda s: s.ResetWorkflow(pb.ResetWorkflowRequest(name="workflows/a")),
        "to_revision",
    ),
    (
        "MigrateWorkflow",
        lambda s: s.MigrateWorkflow(pb.MigrateWorkflowRequest(name="workflows/a")),
        "to_version",
    ),
    (
        "SignalWithStartWorkflow",
        lambda s: s.SignalWithStartWorkflow(
            pb.SignalWithStartWorkflowRequest(definition="tally", event="tick")
        ),
        "workflow_id",
    ),
    (
        "StartWorkflow",
        lambda s: s.StartWorkflow(
            pb.StartWorkflowRequest(
                definition="tally", start_delay=duration_pb2.Duration(seconds=-5)
            )
        ),
        "start_delay",
    ),
    (
        "WatchWorkflow",
        lambda s: list(s.WatchWorkflow(pb.WatchWorkflowRequest(name="workflows/"))),
        "name",
    ),
    (
        "GetWorkflowDiagnostics",
        lambda s: s.GetWorkflowDiagnostics(pb.GetWorkflowDiagnosticsRequest()),
        "name",
    ),
    (
        "GetDefinition",
        lambda s: s.GetDefinition(pb.GetDefinitionRequest(name="definitions/x/versions/0")),
        "name",
    ),
]


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Any:
    with ServerProcess(database_url=database_url, grace=4.0, cwd=tmp_path) as proc:
        yield proc


def test_all_four_health_services_report_serving(server: ServerProcess) -> None:
    health: Any = health_pb2_grpc.HealthStub(server.channel())
    for service in HEALTH_SERVICES:
        response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert response.status == health_pb2.HealthCheckResponse.SERVING, service


def test_reflection_lists_the_services_when_asked_for(database_url: str, tmp_path: Path) -> None:
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    with ServerProcess(
        database_url=database_url, cwd=tmp_path, extra_args=["--reflection"]
    ) as proc:
        stub: Any = reflection_pb2_grpc.ServerReflectionStub(proc.channel())
        (response,) = list(stub.ServerReflectionInfo(iter([request]), timeout=5))
    names = {s.name for s in response.list_services_response.service}
    assert {"statewright.v1.WorkflowService", "statewright.v1.TaskService"} <= names
    assert "grpc.health.v1.Health" in names


def test_serve_offers_no_reflection_unless_asked(server: ServerProcess) -> None:
    stub: Any = reflection_pb2_grpc.ServerReflectionStub(server.channel())
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    try:
        list(stub.ServerReflectionInfo(iter([request]), timeout=5))
    except grpc.RpcError as err:
        assert err.code() == grpc.StatusCode.UNIMPLEMENTED
    else:
        raise AssertionError("serve answered reflection without --reflection")


def test_every_rpc_answers_for_real_or_unimplemented(server: ServerProcess) -> None:
    stub = pb_grpc.WorkflowServiceStub(server.channel())
    calls = well_formed_calls(stub)
    assert set(calls) == set(pb.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name)
    for method, call in calls.items():
        try:
            call()
        except grpc.RpcError as err:
            # A real answer may be an application error; what is never acceptable is a
            # bare UNKNOWN or a status without ErrorInfo.
            assert err.code() is not grpc.StatusCode.UNKNOWN, method
            info = error_info(err)
            if err.code() is grpc.StatusCode.UNIMPLEMENTED:
                assert info.reason == "NOT_IMPLEMENTED", method
                assert info.metadata["method"].endswith("/" + method)


@pytest.mark.parametrize(
    ("method", "call", "field"), MALFORMED, ids=[m[0] + ":" + m[2] for m in MALFORMED]
)
def test_malformed_requests_get_invalid_argument_with_error_info(
    server: ServerProcess,
    method: str,
    call: Callable[[pb_grpc.WorkflowServiceStub], Any],
    field: str,
) -> None:
    stub = pb_grpc.WorkflowServiceStub(server.channel())
    with pytest.raises(grpc.RpcError) as caught:
        call(stub)
    err = caught.value
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT, (method, err.details())
    info = error_info(err)
    assert info.reason in {"FIELD_REQUIRED", "INVALID_FIELD"}
    assert info.metadata["field"] == field


def test_sigterm_drains_readiness_first_and_exits_zero_within_grace(
    server: ServerProcess,
) -> None:
    channel = server.channel()
    health: Any = health_pb2_grpc.HealthStub(channel)
    seen: list[tuple[str, int]] = []
    not_serving = threading.Event()

    def watch(service: str) -> None:
        try:
            for response in health.Watch(health_pb2.HealthCheckRequest(service=service)):
                seen.append((service, response.status))
                if (
                    service == "readiness"
                    and response.status == health_pb2.HealthCheckResponse.NOT_SERVING
                ):
                    not_serving.set()
        except grpc.RpcError:
            pass  # the server ends the stream when it stops

    watchers = [
        threading.Thread(target=watch, args=(s,), daemon=True) for s in ("readiness", "liveness")
    ]
    for thread in watchers:
        thread.start()
    deadline = time.monotonic() + 5
    while len(seen) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ("readiness", health_pb2.HealthCheckResponse.SERVING) in seen

    server.signal()
    assert not_serving.wait(5), f"readiness never turned NOT_SERVING: {seen}\n{server.log()}"
    # The open watch streams are in-flight RPCs: the server gives them the grace period
    # (4 s here) and then exits cleanly.
    rc = server.wait(timeout=4.0 + 5.0)
    assert rc == 0, server.log()
    for thread in watchers:
        thread.join(5)
    # A draining process is still alive: liveness never left SERVING while readiness did.
    assert ("liveness", health_pb2.HealthCheckResponse.NOT_SERVING) not in seen, seen
    log = server.log()
    assert log.index("readiness NOT_SERVING") < log.index("stopped"), log


def test_every_rpc_in_flight_when_the_drain_starts_gets_its_real_answer(
    database_url: str, tmp_path: Path
) -> None:
    """Signals arrive back to back while SIGTERM lands: each one is answered for real (OK,
    or UNAVAILABLE for a call the draining server refused), never CANCELLED or left to
    its deadline."""
    definitions = definitions_dir(tmp_path / "definitions")
    threads, per_thread = 12, 400
    with ServerProcess(
        database_url=database_url, definitions=definitions, grace=10.0, cwd=tmp_path
    ) as server:
        with Client(server.target) as setup:
            ids = [setup.start("tally", version=1).workflow.workflow_id for _ in range(threads)]
        codes: list[grpc.StatusCode] = []
        lock = threading.Lock()
        began = threading.Barrier(threads + 1)

        def hammer(wid: str) -> None:
            with Client(server.target) as c:
                began.wait()
                for n in range(per_thread):
                    try:
                        c.signal(wid, "tick", {"id": str(n)}, timeout=20)
                        code = grpc.StatusCode.OK
                    except grpc.RpcError as err:
                        code = err.code()
                    with lock:
                        codes.append(code)
                    if code is not grpc.StatusCode.OK:
                        return  # the server is going away: stop sending

        workers = [threading.Thread(target=hammer, args=(wid,), daemon=True) for wid in ids]
        for worker in workers:
            worker.start()
        began.wait()
        assert wait_until(lambda: len(codes) >= 200, 30)
        server.signal()
        for worker in workers:
            worker.join(40)
        assert server.wait(30) == 0, server.log()
    unexpected = [c for c in codes if c not in (grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE)]
    assert not unexpected, (unexpected, len(codes))


def test_a_port_taken_by_another_program_is_one_clear_line(tmp_path: Path) -> None:
    holder = socket.socket()  # no SO_REUSEPORT: the port is this test's alone
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    port = holder.getsockname()[1]
    try:
        ended = subprocess.run(
            [*STATEWRIGHTD, "serve", "--listen", f"127.0.0.1:{port}", "--database",
             f"sqlite:///{tmp_path / 'statewright.db'}"],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        )  # fmt: skip
    finally:
        holder.close()
    assert ended.returncode == 2, ended.stderr
    line = f"statewrightd cannot start: port {port} (127.0.0.1:{port}) is already in use by pid"
    assert f"{line} {os.getpid()} (" in ended.stderr, ended.stderr
    assert "Traceback" not in ended.stderr


def _second_server(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A server with a database of its own, expected to refuse to start."""
    return subprocess.run(
        [*STATEWRIGHTD, *args, "--database", f"sqlite:///{tmp_path / 'second.db'}"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip


def _refusals(ended: subprocess.CompletedProcess[str]) -> list[str]:
    assert ended.returncode == 2, ended.stderr
    assert "Traceback" not in ended.stderr, ended.stderr
    return [line for line in ended.stderr.splitlines() if "cannot start" in line]


def test_a_second_server_on_a_port_one_holds_fails_at_start_naming_it(tmp_path: Path) -> None:
    definitions = definitions_dir(tmp_path / "definitions")
    first = ServerProcess(
        database_url=f"sqlite:///{tmp_path / 'first.db'}",
        definitions=definitions,
        cwd=tmp_path,
        extra_args=["--http-listen", "127.0.0.1:0", "--health-listen", "127.0.0.1:0"],
    )
    with first, Client(first.target) as client:
        grpc_port = first.port
        http_port = int(first.log().split("web console on http://127.0.0.1:")[1].split("/")[0])
        health_port = int(
            first.log().split("health checks (plaintext) on 127.0.0.1:")[1].split()[0]
        )
        for command in (
            ["serve", "--listen", f"127.0.0.1:{grpc_port}"],
            ["dev", "--listen", f"127.0.0.1:{grpc_port}", "--definitions", str(definitions)],
            # The host written another way is the same port.
            ["serve", "--listen", f"localhost:{grpc_port}"],
        ):
            (line,) = _refusals(_second_server(tmp_path, *command))
            assert f"port {grpc_port} (" in line and f"by pid {first.proc.pid} (" in line, line
            assert "--listen HOST:PORT" in line
        http = ["serve", "--listen", "127.0.0.1:0", "--http-listen", f"127.0.0.1:{http_port}"]
        (line,) = _refusals(_second_server(tmp_path, *http))
        assert f"port {http_port} (" in line and f"by pid {first.proc.pid} (" in line, line
        assert "--http-listen HOST:PORT" in line
        # The probes' port too: a kubelet's probe must reach the server it is about.
        health = ["serve", "--listen", "127.0.0.1:0", "--health-listen", f"127.0.0.1:{health_port}"]
        (line,) = _refusals(_second_server(tmp_path, *health))
        assert f"port {health_port} (" in line and f"by pid {first.proc.pid} (" in line, line
        assert "--health-listen HOST:PORT" in line
        # The first server alone has every instance: nothing went to another database.
        started = [client.start("mail-approval").workflow.workflow_id for _ in range(10)]
        assert all(client.get(wid).workflow_id == wid for wid in started)
    assert not (tmp_path / "second.db").exists() or first.proc.returncode is not None
