"""What a new user meets in the first hour, against real servers: a status in either
spelling, "did you mean" for a mistyped event or definition (and never a definition a
scoped caller's grants do not reach, over TLS with real API keys), health's List, and the
command-line client's version, tables, JSON and readable failures."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.support.api import WAITING, Client, expect_error, uid
from tests.support.certs import ScratchCA
from tests.support.console import Http, console_url
from tests.support.databases import PostgresDatabases
from tests.support.deployment import api_keys_file, definitions_dir, running_server
from tests.support.server import ServerProcess

NOT_FOUND = grpc.StatusCode.NOT_FOUND
INVALID = grpc.StatusCode.INVALID_ARGUMENT
CLI = Path(sys.executable).parent / "statewright"


@pytest.fixture(scope="module")
def server(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("first-hour")
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    url = postgres_databases.create()
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(url, definitions, cwd=root, extra_args=args) as server:
        yield server
    assert "Traceback" not in server.log(), server.log()


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Http:
    return Http(console_url(server))


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def _cli(server: ServerProcess, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(CLI), "--address", server.target, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


# -- a status in either spelling -----------------------------------------------------------------


def test_the_http_api_takes_a_status_in_either_spelling(client: Client, http: Http) -> None:
    definition = "review-loop"
    waiting = client.start("mail-approval", workflow_id=uid("short")).workflow
    assert waiting.status == WAITING
    client.start(definition, workflow_id=uid("running"), input={"document": "x"})
    names = []
    for spelling in ("WAITING", "waiting", "WORKFLOW_STATUS_WAITING", "Workflow_Status_Waiting"):
        answer = http.get("/api/v1/workflows", status=spelling, definition="mail-approval")
        assert answer.status == 200, (spelling, answer.body)
        found = answer.body["workflows"]
        assert {w["status"] for w in found} == {"WORKFLOW_STATUS_WAITING"}, spelling
        names.append(sorted(w["name"] for w in found))
    assert waiting.name in names[0] and names.count(names[0]) == 4
    refused = http.get("/api/v1/workflows", status="SLEEPING")
    assert refused.status == 400 and refused.error == ("INVALID_ARGUMENT", "MALFORMED_REQUEST")


def test_the_cli_takes_a_status_in_either_spelling(server: ServerProcess, client: Client) -> None:
    started = client.start("mail-approval", workflow_id=uid("cli-status")).workflow
    for spelling in ("waiting", "WORKFLOW_STATUS_WAITING"):
        listed = json.loads(
            _cli(
                server, "list", "--definition", "mail-approval", "--status", spelling, "--json"
            ).stdout
        )
        assert started.workflow_id in {w["workflow_id"] for w in listed}, spelling
        assert {w["status"] for w in listed} == {"WAITING"}


# -- did you mean ------------------------------------------------------------------------------


def test_a_mistyped_definition_or_event_gets_a_suggestion(client: Client, http: Http) -> None:
    info = expect_error(lambda: client.start("mail-aproval"), NOT_FOUND, "DEFINITION_NOT_FOUND")
    assert info.metadata["did_you_mean"] == "mail-approval"
    answer = http.post("/api/v1/workflows", {"definition": "mail-aproval"})
    assert answer.status == 404
    assert answer.message.endswith("did you mean 'mail-approval'?")
    assert answer.metadata["did_you_mean"] == "mail-approval"

    waiting = client.start("mail-approval").workflow
    info = expect_error(
        lambda: client.resume(waiting.workflow_id, "aprove"), INVALID, "UNKNOWN_EVENT"
    )
    assert (info.metadata["event"], info.metadata["did_you_mean"]) == ("aprove", "approve")
    running = client.start("review-loop", input={"document": "x"}).workflow
    info = expect_error(
        lambda: client.signal(running.workflow_id, "scroe"), INVALID, "UNKNOWN_EVENT"
    )
    assert info.metadata["did_you_mean"] == "score"
    # Nothing alike: no suggestion.
    info = expect_error(lambda: client.start("payroll"), NOT_FOUND, "DEFINITION_NOT_FOUND")
    assert "did_you_mean" not in info.metadata


def test_the_cli_shows_the_suggestion(server: ServerProcess) -> None:
    done = _cli(server, "start", "mail-aproval", ok=False)
    assert done.returncode == 1
    error = json.loads(done.stderr)["error"]
    assert error["reason"] == "DEFINITION_NOT_FOUND"
    assert error["message"].endswith("; did you mean 'mail-approval'?")
    done = _cli(server, "get", "no-such-instance", ok=False)
    assert done.returncode == 1
    assert done.stderr.startswith("statewright: NOT_FOUND WORKFLOW_NOT_FOUND: ")
    assert done.stderr.count("\n") == 1


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerProcess, ScratchCA]]:
    root = tmp_path_factory.mktemp("scoped")
    ca = ScratchCA(root / "ca")
    cert = ca.issue("server", server=True)
    keys = {"admin": ("sw-first-hour-admin", "{role: admin}"),
            "mail": ("sw-first-hour-mail", '{role: client, definitions: ["mail-*"]}')}  # fmt: skip
    auth = api_keys_file(root / "auth.yaml", keys)
    args = ["--tls-cert", str(cert.cert), "--tls-key", str(cert.key), "--auth-config", str(auth)]
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    database = f"sqlite:///{root / 'statewright.db'}"
    with running_server(database, definitions, cwd=root, extra_args=args) as server:
        yield server, ca
    assert "Traceback" not in server.log(), server.log()


def _secure_client(setup: tuple[ServerProcess, ScratchCA], token: str) -> Client:
    server, ca = setup
    credentials = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(root_certificates=ca.pem()),
        grpc.access_token_call_credentials(token),
    )
    return Client(server.target, channel=grpc.secure_channel(server.target, credentials))


def test_a_scoped_caller_is_never_told_of_a_definition_out_of_its_scope(
    secured: tuple[ServerProcess, ScratchCA],
) -> None:
    # "mail-review-loop" is within mail-*; the likeliest known name, review-loop, is not.
    with _secure_client(secured, "sw-first-hour-admin") as admin:
        info = expect_error(
            lambda: admin.start("mail-review-loop"), NOT_FOUND, "DEFINITION_NOT_FOUND"
        )
        assert info.metadata["did_you_mean"] == "review-loop"
    with _secure_client(secured, "sw-first-hour-mail") as scoped:
        try:
            scoped.start("mail-review-loop")
        except grpc.RpcError as err:
            assert err.code() == NOT_FOUND
            assert "review-loop" not in (err.details() or "").replace("mail-review-loop", "")
            raw: Any = err
            trailers = dict(raw.trailing_metadata() or ())
            details: bytes = trailers["grpc-status-details-bin"]
            assert b"review-loop" not in details.replace(b"mail-review-loop", b"")
        else:
            raise AssertionError("a start of an unknown definition succeeded")
        # What its grants reach is suggested as to anyone.
        info = expect_error(lambda: scoped.start("mail-aproval"), NOT_FOUND, "DEFINITION_NOT_FOUND")
        assert info.metadata["did_you_mean"] == "mail-approval"


# -- health's List -----------------------------------------------------------------------------


def test_health_list_answers_every_service(server: ServerProcess) -> None:
    with grpc.insecure_channel(server.target) as channel:
        call: Any = channel.unary_unary(
            "/grpc.health.v1.Health/List",
            request_serializer=lambda _: b"",
            response_deserializer=lambda data: data,
        )
        data: Any = call(None, timeout=10)
        health: Any = health_pb2_grpc.HealthStub(channel)
        one = health.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=10)
    listed = health_pb2.HealthListResponse.FromString(data)  # type: ignore[attr-defined]
    statuses = {name: response.status for name, response in listed.statuses.items()}
    assert set(statuses) == {
        "",
        "statewright.v1.WorkflowService",
        "statewright.v1.TaskService",
        "statewright.v1.ScheduleService",
        "statewright.v1.BatchService",
        "liveness",
        "readiness",
    }
    assert set(statuses.values()) == {health_pb2.HealthCheckResponse.SERVING}
    assert statuses["readiness"] == one.status
    assert "NotImplementedError" not in server.log()


# -- the command-line client ---------------------------------------------------------------------


def test_the_cli_names_its_version(server: ServerProcess) -> None:
    done = _cli(server, "--version")
    assert re.fullmatch(
        r"statewright \d+\.\d+\.\d+\S* \(Python client of the statewright\.v1 API\)\n", done.stdout
    )


def test_get_list_and_history_print_tables_and_json_on_request(
    server: ServerProcess, client: Client
) -> None:
    workflow_id = uid("table")
    client.start("mail-approval", workflow_id=workflow_id, input={"topic": "launch"})
    client.resume(workflow_id, "approve", input={"approver": "ann"})

    table = _cli(server, "get", workflow_id).stdout.splitlines()
    assert table[0].split() == ["name:", f"workflows/{workflow_id}"]
    assert "status:      COMPLETED" in table and "revision:    2" in table
    assert '  topic: "launch"' in table
    as_json = json.loads(_cli(server, "get", workflow_id, "-o", "json").stdout)
    assert (as_json["status"], as_json["revision"]) == ("COMPLETED", 2)
    assert json.loads(_cli(server, "--json", "get", workflow_id).stdout) == as_json

    rows = _cli(server, "list", "--definition", "mail-approval", "--status", "completed")
    header, *lines = rows.stdout.splitlines()
    assert header.split() == ["WORKFLOW", "DEFINITION", "STATUS", "STATE", "REV", "UPDATED"]
    (mine,) = [line for line in lines if line.startswith(workflow_id + " ")]
    cells = mine.split()
    assert cells[1] == "mail-approval" and re.fullmatch(r"v\d+", cells[2])
    assert cells[3:6] == ["COMPLETED", "send", "2"]

    history = _cli(server, "history", workflow_id).stdout.splitlines()
    assert history[0].split() == [
        *("REV", "TIME", "EVENT", "TRANSITIONS", "STATUS", "STATE", "INPUT", "CONTEXT", "CHANGE")
    ]
    assert history[1].split()[0] == "1" and "(start)" in history[1]
    assert '"topic": "launch"' in history[1] or '"topic":"launch"' in history[1]
    assert history[2].split()[0] == "2" and " approve " in history[2]
    assert "awaiting_approval -approve-> send" in history[2] and "COMPLETED" in history[2]
    steps = json.loads(_cli(server, "history", workflow_id, "-o", "json").stdout)
    assert [s["revision"] for s in steps] == [1, 2]


def test_a_command_s_help_leaves_the_connection_options_to_the_main_help() -> None:
    sub = subprocess.run([str(CLI), "get", "--help"], capture_output=True, text=True, check=True)
    assert "--tls-cert" not in sub.stdout.split("The connection options")[0]
    top = subprocess.run([str(CLI), "--help"], capture_output=True, text=True, check=True)
    assert "connection options (before or after the command):" in top.stdout


def test_a_refused_connection_is_one_readable_line() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = subprocess.run(
        [str(CLI), "--address", f"127.0.0.1:{port}", "--timeout", "5", "get", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (
        f"statewright: cannot reach the server at 127.0.0.1:{port}: connection refused. "
        "Is it running? ('make dev' starts one; --address HOST:PORT or $STATEWRIGHT_ADDRESS "
        "names another)\n"
    )
