"""The gRPC API's limits hold over HTTP too: a caller's rate, its open watches, and the
size of what it sends, each refused with the gRPC API's code and reason. Every stream,
gRPC or Server-Sent Events, counts against the caller's limit and the server's, and a
list stream's memory does not grow with the list."""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from tests.support.api import error_info
from tests.support.console import RETRY_INFO, EventStream, Http, console_url, http_error_info
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

W = "/api/v1/workflows"
RATE_CALLS = 40  # far more than the burst, sent back to back


@contextlib.contextmanager
def _console(root: Path, *flags: str) -> Iterator[Http]:
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    database = f"sqlite:///{root / 'statewright.db'}"
    args = ["--http-listen", "127.0.0.1:0", *flags]
    with running_server(database, definitions, cwd=root, extra_args=args) as server:
        yield Http(console_url(server))
        assert "Traceback" not in server.log(), server.log()


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Http]:
    flags = ["--max-watches", "1", "--max-request-size", "4096", "--max-string-size", "64"]
    with _console(tmp_path_factory.mktemp("console-limits"), *flags) as http:
        yield http


def test_a_caller_s_rate_is_limited_with_a_delay_to_wait(tmp_path: Path) -> None:
    with _console(tmp_path, "--rate-limit", "1", "--rate-burst", "3") as http:
        answers = [http.get("/api/v1/definitions") for _ in range(RATE_CALLS)]
        assert answers[0].status == 200
        refused = [a for a in answers if a.status != 200]
        assert refused, "no call was refused"
        assert {a.status for a in refused} == {429}
        first = refused[0]
        assert first.error == ("RESOURCE_EXHAUSTED", "RATE_LIMITED")
        retry = [d for d in first.body["error"]["details"] if d["@type"] == RETRY_INFO]
        delay = retry[0]["retryDelay"]
        assert delay.endswith("s") and float(delay[:-1]) > 0
        assert int(first.headers["retry-after"]) >= 1
        # Streams count against the same bucket: refused before they open.
        stream = http.events("/api/v1/diagnostics:watch")
        assert stream.status == 429
        stream.close()


def test_open_watches_per_caller_are_capped(limited: Http) -> None:
    started = limited.post(W, {"definition": "review-loop"})
    assert started.status == 200, started.body
    path = f"{W}/{started.body['workflow']['workflowId']}/watch"
    first = limited.events(path)
    try:
        assert first.until("current").id == "1"
        second = limited.events(path)
        assert second.status == 429
        body = second.response.read()
        second.close()
        assert b'"TOO_MANY_WATCHES"' in body and b'"RESOURCE_EXHAUSTED"' in body
    finally:
        first.close()

    def reopened() -> bool:
        again = limited.events(path)
        try:
            return again.status == 200
        finally:
            again.close()

    # The server sees the dropped connection and gives the watch back.
    assert wait_until(reopened, timeout=10, interval=0.2)


def test_what_a_caller_sends_is_bounded(limited: Http) -> None:
    huge = limited.post(W, {"definition": "review-loop", "input": {"document": "x" * 8000}})
    assert huge.status == 413 and huge.error == ("INVALID_ARGUMENT", "REQUEST_TOO_LARGE")
    # Said by the length the request declares, before a byte of its body is read.
    declared = limited.request(
        "POST",
        W,
        b"{" + b" " * 5000 + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert declared.status == 413 and declared.error == ("INVALID_ARGUMENT", "REQUEST_TOO_LARGE")
    long = limited.post(W, {"definition": "review-loop", "input": {"document": "x" * 100}})
    assert long.status == 400 and long.error == ("INVALID_ARGUMENT", "VALUE_TOO_LARGE")
    fits = limited.post(W, {"definition": "review-loop", "input": {"document": "x" * 60}})
    assert fits.status == 200, fits.body


# -- every stream counts -------------------------------------------------------------------

KEYS = {"ann": "sw-ann-5eed01", "bob": "sw-bob-5eed02"}


@contextlib.contextmanager
def _server(root: Path, *flags: str) -> Iterator[ServerProcess]:
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    database = f"sqlite:///{root / 'statewright.db'}"
    args = ["--http-listen", "127.0.0.1:0", *flags]
    with running_server(database, definitions, cwd=root, extra_args=args) as server:
        yield server
        assert "Traceback" not in server.log(), server.log()


def _grpc_watch(server: ServerProcess, workflow_id: str, token: str | None = None) -> str:
    """The code of a WatchWorkflow over gRPC: OK once its first message arrives."""
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    with server.channel() as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        call = stub.WatchWorkflow(
            pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}"), timeout=10, metadata=metadata
        )
        try:
            next(iter(call))
        except grpc.RpcError as err:
            code: grpc.StatusCode = err.code()
            assert error_info(err).reason == "TOO_MANY_WATCHES"
            return code.name
        finally:
            call.cancel()
    return "OK"


def _refused(stream: EventStream) -> tuple[int, dict[str, Any]]:
    if stream.status == 200:  # opened: its body never ends
        stream.close()
        return 200, {"reason": "", "metadata": {}}
    body = json.loads(stream.response.read())
    stream.close()
    assert body["error"]["code"] == stream.status, body
    return stream.status, http_error_info(body)


def test_every_stream_counts_against_the_caller_s_limit(tmp_path: Path) -> None:
    with _server(tmp_path, "--max-watches", "1") as server:
        http = Http(console_url(server))
        started = http.post(W, {"definition": "review-loop"})
        workflow_id = started.body["workflow"]["workflowId"]
        listing = http.events(f"{W}:watch")
        assert listing.until("page").data["workflows"]
        for path in ("/api/v1/diagnostics:watch", f"{W}:watch", f"{W}/{workflow_id}/watch"):
            status, body = _refused(http.events(path))
            assert (status, body["reason"]) == (429, "TOO_MANY_WATCHES"), path
        assert _grpc_watch(server, workflow_id) == "RESOURCE_EXHAUSTED"
        listing.close()

        def reopened() -> bool:
            again = http.events("/api/v1/diagnostics:watch")
            try:
                return again.status == 200
            finally:
                again.close()

        assert wait_until(reopened, timeout=10, interval=0.2)


def test_every_caller_s_streams_count_against_the_server_s_limit(tmp_path: Path) -> None:
    auth = tmp_path / "auth.yaml"
    lines = ["api_keys:"]
    for name, key in KEYS.items():
        digest = hashlib.sha256(key.encode()).hexdigest()
        lines.append(f"  - {{name: {name}, sha256: {digest}, grants: [{{role: admin}}]}}")
    auth.write_text("\n".join(lines) + "\n")
    flags = ["--auth-config", str(auth), "--max-watches", "10", "--max-watches-total", "2"]
    with _server(tmp_path, *flags) as server:
        ann, bob = (Http(console_url(server), token=KEYS[n]) for n in ("ann", "bob"))
        workflow_id = ann.post(W, {"definition": "review-loop"}).body["workflow"]["workflowId"]
        first = ann.events(f"{W}:watch")
        second = ann.events(f"{W}/{workflow_id}/watch")
        assert first.status == second.status == 200
        status, body = _refused(bob.events("/api/v1/diagnostics:watch"))
        assert (status, body["reason"], body["metadata"].get("scope")) == (
            429,
            "TOO_MANY_WATCHES",
            "server",
        )
        assert _grpc_watch(server, workflow_id, KEYS["bob"]) == "RESOURCE_EXHAUSTED"
        second.close()

        def bob_gets_one() -> bool:
            again = bob.events("/api/v1/diagnostics:watch")
            try:
                return again.status == 200
            finally:
                again.close()

        assert wait_until(bob_gets_one, timeout=10, interval=0.2)
        first.close()


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_list_streams_cost_memory_independent_of_the_list_s_size(tmp_path: Path) -> None:
    """Streams of a large listing that read nothing (a stalled page, a hostile client):
    the server keeps one copy of the page, not one per stream."""
    instances, streams = 40, 30
    with _server(tmp_path, "--max-watches", "100", "--max-string-size", "300000") as server:
        http = Http(console_url(server))
        document = "x" * 200_000
        for _ in range(instances):
            answer = http.post(W, {"definition": "review-loop", "input": {"document": document}})
            assert answer.status == 200, answer.body
        page = http.get(W, pageSize=1000)
        page_bytes = len(json.dumps(page.body))
        assert page_bytes > instances * len(document)
        path = f"{W}:watch?pageSize=1000"
        opened = [http.events(path)]  # the feed, and its one copy of the page
        time.sleep(1.0)
        before = _rss(server.proc.pid)
        opened += [http.events(path) for _ in range(streams)]
        assert all(s.status == 200 for s in opened)
        time.sleep(2.0)
        grown = _rss(server.proc.pid) - before
        print(f"{streams} more streams of a {page_bytes:,}-byte page: RSS +{grown:,} bytes")
        for stream in opened:
            stream.close()
        # One copy per stream would be streams x page_bytes (here about 240 MB).
        assert grown < 3 * page_bytes, (grown, page_bytes)
