"""A start's own recursion_limit over real gRPC (the Python client) and HTTP, on
PostgreSQL: it bounds a later step of the instance, not only the first, and a start
above the definition's limit is refused with the reason, nothing created."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from statewright import Client, WorkflowStatus
from statewright.errors import InvalidArgument

from tests.support.api import uid
from tests.support.console import Http, console_url
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess


@pytest.fixture(scope="module")
def module_backend() -> str:
    return "postgresql"


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("limit")
    definitions = definitions_dir(root / "definitions")
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(module_database_url, definitions, cwd=root, extra_args=args) as s:
        yield s
    assert "Traceback" not in s.log(), s.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def test_a_low_limit_fails_a_later_step_at_the_limit(client: Client) -> None:
    # fragile's "live" mode: the first step takes one transition (begin -> live); `go`
    # then chains two (live -> compute -> done), over a limit of 1 though under the
    # definition's 5.
    wid = uid("limit")
    started = client.start("fragile", {"mode": "live"}, workflow_id=wid, recursion_limit=1)
    assert started.workflow.status is WorkflowStatus.RUNNING
    assert started.workflow.recursion_limit == 1
    signalled = client.signal(wid, "go")
    assert signalled.accepted
    failed = client.get(wid)
    assert failed.status is WorkflowStatus.FAILED
    assert failed.error is not None and failed.error.reason == "RECURSION_LIMIT"
    assert failed.error.metadata["limit"] == "1"
    # The same path without a limit of its own runs under the definition's.
    other = uid("limit")
    client.start("fragile", {"mode": "live"}, workflow_id=other)
    client.signal(other, "go")
    unlimited = client.get(other)
    assert unlimited.error is None or unlimited.error.reason != "RECURSION_LIMIT"
    assert unlimited.recursion_limit is None


def test_the_request_id_covers_the_limit(client: Client) -> None:
    request_id = uid("limit-request")
    first = client.start("fragile", recursion_limit=2, request_id=request_id)
    again = client.start("fragile", recursion_limit=2, request_id=request_id)
    assert again.workflow.workflow_id == first.workflow.workflow_id
    with pytest.raises(InvalidArgument) as reused:
        client.start("fragile", recursion_limit=3, request_id=request_id)
    assert reused.value.reason == "REQUEST_ID_REUSED"


def test_a_limit_above_the_definitions_is_refused(client: Client, server: ServerProcess) -> None:
    wid = uid("limit")
    with pytest.raises(InvalidArgument) as refused:
        client.start("fragile", workflow_id=wid, recursion_limit=6)
    assert refused.value.reason == "RECURSION_LIMIT_TOO_HIGH"
    assert refused.value.metadata["requested"] == "6"
    assert refused.value.metadata["maximum"] == "5"
    with pytest.raises(InvalidArgument) as negative:
        client.signal_with_start("fragile", wid, "go", recursion_limit=-1)
    assert negative.value.reason == "INVALID_RECURSION_LIMIT"
    assert list(client.list(id_prefix=wid)) == []
    # The HTTP door takes the same field.
    http = Http(console_url(server))
    body = {"definition": "fragile", "workflowId": wid, "recursionLimit": 9}
    answer = http.post("/api/v1/workflows", body)
    assert answer.status == 400 and answer.error == ("INVALID_ARGUMENT", "RECURSION_LIMIT_TOO_HIGH")
    ok = http.post("/api/v1/workflows", {**body, "recursionLimit": 5})
    assert ok.status == 200, ok.body
    assert ok.body["workflow"]["recursionLimit"] == 5
