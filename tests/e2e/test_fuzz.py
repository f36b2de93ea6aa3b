"""Random and mutated requests to every RPC of a real server, in bulk.

Three kinds of input, each sent to every method:
- random bytes as the request body;
- valid requests with bytes flipped, dropped or cut off;
- hypothesis-generated messages: every field of the request filled from a strategy of
  its type (long and odd strings, extreme numbers, unknown enum values, Structs with NaN,
  infinities, NUL characters and deep nesting).

Every answer must carry a code of the documented set, and every error exactly one
ErrorInfo in the service's domain. The module server (one per backend) then asserts at
teardown that nothing was an unhandled error in its log.

The same server's HTTP API gets the inputs an HTTP parser meets: bodies that are not UTF-8
or not JSON, charsets that lie, digits that are digits only to Unicode, numbers past every
integer type, query strings and headers past the parser's limits, requests that are not
HTTP at all, and hypothesis-generated bodies and query strings for every route of the
route table. Each must be answered below 500, an error with the API's JSON error body.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import random
import socket
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import grpc
import pytest
from google.protobuf import struct_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statewright.v1 import batch_service_pb2 as batch_pb
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.console.http_rules import Route, RouteTable, routes
from statewrightd.definitions import load_definition_file
from tests.support.api import FAILED, Client, error_info, rpc_failure
from tests.support.console import Http, console_url, http_error_info
from tests.support.deployment import (
    TEST_DEFINITIONS,
    definitions_dir,
    example_definitions,
    running_server,
)
from tests.support.server import ServerProcess

# Every RPC of these services: (service, method, request module).
SERVICES = [
    (pb.DESCRIPTOR.services_by_name["WorkflowService"], pb),
    (task_pb.DESCRIPTOR.services_by_name["TaskService"], task_pb),
    (batch_pb.DESCRIPTOR.services_by_name["BatchService"], batch_pb),
]
METHODS = sorted(
    f"{service.name}.{name}" for service, _ in SERVICES for name in service.methods_by_name
)

# The codes the API documents; anything else (UNKNOWN, INTERNAL, a deadline) is a defect.
DOCUMENTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNAVAILABLE,
}
EXAMPLES = 100
TRIED: dict[str, int] = {}


class Caller:
    """Sends one request (a message or raw bytes) to a method and checks the answer."""

    def __init__(self, server: ServerProcess) -> None:
        self.channel = server.channel()
        self.client = Client(server.target)
        self.unary: dict[str, Any] = {}
        self.stream: dict[str, Any] = {}
        for service, _ in SERVICES:
            for name, method in service.methods_by_name.items():
                path = f"/{service.full_name}/{name}"
                key = f"{service.name}.{name}"
                if method.server_streaming:
                    self.stream[key] = self.channel.unary_stream(path)
                else:
                    self.unary[key] = self.channel.unary_unary(path)
        self.watched: dict[str, int] = {}  # live instance -> its revision as last seen

    def revisions(self) -> dict[str, int]:
        listed = self.client.list_all(page_size=1000)
        return {w.workflow_id: w.revision for w in listed if w.workflow_id in self.watched}

    def check(self, method: str, body: bytes, kind: str) -> None:
        TRIED[kind] = TRIED.get(kind, 0) + 1
        if not self._answered_ok(method, body) and self.watched:
            # A refused request changes nothing: the live instances are as they were.
            assert self.revisions() == self.watched, (method, body[:200])
        elif self.watched:
            self.watched = self.revisions()

    def _answered_ok(self, method: str, body: bytes) -> bool:
        try:
            if method in self.stream:
                stream = self.stream[method](body, timeout=10)
                # An open stream on a live instance waits for steps: one message is enough.
                for _ in stream:
                    stream.cancel()
                    return True
            else:
                self.unary[method](body, timeout=10)
        except grpc.RpcError as err:
            call: Any = err
            code = call.code()
            if code is grpc.StatusCode.CANCELLED and method in self.stream:
                return True  # our own cancel after the first message
            assert code in DOCUMENTED, (method, code, call.details(), body[:200])
            error_info(err)
            return False
        return True


@pytest.fixture(scope="module")
def module_server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """The module's server (one per backend), with its HTTP API on too."""
    root = tmp_path_factory.mktemp("server")
    definitions = definitions_dir(root / "definitions")
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(module_database_url, definitions, cwd=root, extra_args=args) as server:
        yield server
    # Every failure the module provoked was an answered error, never an unhandled one.
    assert "Traceback" not in server.log(), server.log()


@pytest.fixture(scope="module")
def caller(module_server: ServerProcess) -> Iterator[Caller]:
    caller = Caller(module_server)
    yield caller
    caller.channel.close()
    caller.client.close()


@pytest.fixture(scope="module")
def live_ids(module_server: ServerProcess, caller: Caller) -> list[str]:
    """Instances that exist, so that generated requests sometimes name a real one."""
    with Client(module_server.target) as c:
        ids = [
            c.start("tally", version=1).workflow.workflow_id,
            c.start("mail-approval").workflow.workflow_id,
            c.start("hostile").workflow.workflow_id,
            c.start("task-flow", input={"route": "cancel"}).workflow.workflow_id,
        ]
    caller.watched = dict.fromkeys(ids, 0)
    caller.watched = caller.revisions()
    return ids


# -- strategies -----------------------------------------------------------------------------

TEXT = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)
# Inputs that once got through or broke something: ids with a final newline or another
# character outside the documented set, and durations past the longest a timer may wait.
FOUND = [
    "wf-nl\n",
    "\nwf",
    "wf\t1",
    "wf\r",
    "wf@tenant:a.b_c-d",
    "87600000h",
    "99999999999d",
    "-87600000h",
    "876000h",
    "2026-01-01T00:00:00Z",
]
ODD_TEXT = st.one_of(
    TEXT,
    st.text(st.characters(blacklist_categories=["Cs"]), min_size=100, max_size=2_000),
    st.sampled_from(["", " ", "\x00", "workflows/", "definitions/x/versions/99", "é" * 300]),
    st.sampled_from(FOUND),
    st.builds(lambda n: "x" * n, st.sampled_from([129, 257, 1_025, 100_000])),
)
NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**70), 2**70).map(float),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 2.0**53 + 1]),
)
LEAVES = st.one_of(st.none(), st.booleans(), NUMBERS, ODD_TEXT)
JSON = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=25,
)


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for n in range(depth):
        value = {"n": value} if n % 2 else [value]
    return value


STRUCT_VALUES = st.one_of(
    st.dictionaries(TEXT, JSON, max_size=6),
    st.fixed_dictionaries({"respond_within": st.sampled_from(FOUND)}),
    st.builds(lambda d, key: {key: _deep(d)}, st.integers(15, 40), st.sampled_from(["big", "x"])),
    st.fixed_dictionaries({"big": st.lists(st.integers(0, 400), max_size=400)}),
    # The hostile guard over a list at the item limit: refused from its cost estimate
    # (it used to hold the EventLoop for seconds).
    st.just({"big": list(range(10_000))}),
)
# A poll's answer size: zero (the default), the bounds and just past them.
POLL_BYTES = st.one_of(
    st.sampled_from([0, 1, 16 * 1024 - 1, 16 * 1024, 3 * 2**20, 2**28, 2**28 + 1, -1]),
    st.integers(-(2**31), 2**31 - 1),
)


def _names(live: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        ODD_TEXT,
        st.sampled_from([f"workflows/{wid}" for wid in live]),
        TEXT.map(lambda t: f"workflows/{t}"),
        st.sampled_from(["definitions/tally", "definitions/hostile/versions/1"]),
        st.sampled_from([f"workflows/{wid}/tasks/1" for wid in live]),
        st.sampled_from([f"workflows/{wid}{odd}" for wid in live for odd in ("\n", "\t", " ")]),
    )


def _field(field: FieldDescriptor, live: list[str]) -> st.SearchStrategy[Any]:
    if field.message_type is not None:
        if field.message_type.full_name == "google.protobuf.Struct":
            return STRUCT_VALUES
        if field.message_type.GetOptions().map_entry:
            entry = field.message_type.fields_by_name
            return st.dictionaries(
                _field(entry["key"], live), _field(entry["value"], live), max_size=4
            )
        return _message(field.message_type, live)
    if field.type == FieldDescriptor.TYPE_STRING:
        if field.name in ("name", "workflow_id"):
            return _names(live)
        if field.name == "definition":
            names = ["tally", "hostile", "mail-approval", "ticket-escalation"]
            return st.one_of(st.sampled_from(names), ODD_TEXT)
        if field.full_name == "statewright.v1.QueueConfig.queue":
            # Limits set by the fuzzer stay off the queues the other tests poll.
            return st.one_of(st.sampled_from(["fuzz.limits", ""]), ODD_TEXT)
        if field.name == "queue":
            return st.one_of(st.sampled_from(["e2e.cancel", "payments", ""]), ODD_TEXT)
        if field.name == "event":
            return st.one_of(st.sampled_from(["tick", "go", "deepen", "approve", ""]), ODD_TEXT)
        return ODD_TEXT
    if field.full_name == "statewright.v1.PollTasksRequest.max_bytes":
        return POLL_BYTES
    if field.full_name == "statewright.v1.DeleteWorkflowRequest.force":
        # A forced delete of a live instance succeeds by design: it would leave the
        # methods fuzzed after it no live instance whose revisions a refusal must keep.
        return st.just(False)
    if field.full_name == "statewright.v1.StartBatchOperationRequest.dry_run":
        # A batch that starts changes instances later, by design: the live instances whose
        # revisions a refusal must keep would change under the methods fuzzed after it.
        return st.just(True)
    if field.type == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if field.type == FieldDescriptor.TYPE_ENUM:
        return st.integers(-3, 12)
    if field.type in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32):
        return st.integers(-(2**31), 2**31 - 1)
    if field.type in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64):
        return st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-3, 5))
    if field.type in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_UINT64):
        return st.integers(0, 2**32 - 1)
    if field.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return st.one_of(st.floats(), st.sampled_from([0.0, 0.5, -1.0, 1e300]))
    raise AssertionError(f"no strategy for {field.full_name}")


# Fields every generated message of its type sets (the rest are set or not).
ALWAYS_SET = {"statewright.v1.StartBatchOperationRequest.dry_run"}


def _message(descriptor: Descriptor, live: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    fields = {f.name: _field(f, live) for f in descriptor.fields}
    always = {f.name: fields.pop(f.name) for f in descriptor.fields if f.full_name in ALWAYS_SET}
    return st.fixed_dictionaries(always, optional=fields)


def _build(cls: type[Message], values: dict[str, Any]) -> Message:
    message = cls()
    for name, value in values.items():
        field = cls.DESCRIPTOR.fields_by_name[name]
        if field.message_type is not None and field.message_type.full_name == (
            "google.protobuf.Struct"
        ):
            target: struct_pb2.Struct = getattr(message, name)
            target.update(value)
        elif field.message_type is not None and field.message_type.GetOptions().map_entry:
            getattr(message, name).update(value)
        elif field.message_type is not None:
            getattr(message, name).CopyFrom(_build(type(getattr(message, name)), value))
        else:
            setattr(message, name, value)
    return message


def _method(key: str) -> Any:
    service_name, _, name = key.partition(".")
    for service, module in SERVICES:
        if service.name == service_name:
            return service.methods_by_name[name], module
    raise AssertionError(key)


def _request_class(method: str) -> type[Message]:
    descriptor, module = _method(method)
    cls: type[Message] = getattr(module, descriptor.input_type.name)
    return cls


# -- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_random_bytes(caller: Caller, method: str) -> None:
    rng = random.Random(f"bytes-{method}")
    for _ in range(EXAMPLES):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 120)))
        caller.check(method, body, "random bytes")


@pytest.mark.parametrize("method", METHODS)
def test_mutated_valid_requests(caller: Caller, live_ids: list[str], method: str) -> None:
    rng = random.Random(f"mutate-{method}")
    cls = _request_class(method)
    seed = cls()
    for name in ("name", "workflow_id"):
        if name in cls.DESCRIPTOR.fields_by_name:
            setattr(seed, name, f"workflows/{live_ids[0]}" if name == "name" else live_ids[0])
    if "definition" in cls.DESCRIPTOR.fields_by_name:
        seed.definition = "tally"  # type: ignore[attr-defined]
    if "event" in cls.DESCRIPTOR.fields_by_name:
        seed.event = "tick"  # type: ignore[attr-defined]
    valid = bytearray(seed.SerializeToString())
    mutations: list[Callable[[bytearray], bytes]] = [
        lambda b: bytes(b[: rng.randrange(len(b) + 1)]),
        lambda b: bytes(b) + bytes([rng.randrange(256) for _ in range(rng.randrange(1, 8))]),
        lambda b: (
            bytes(b[:i] + bytes([rng.randrange(256)]) + b[i + 1 :])
            if (i := rng.randrange(max(len(b), 1))) < len(b)
            else bytes(b)
        ),
        lambda b: bytes(b[:i] + b[i + 2 :]) if (i := rng.randrange(max(len(b), 1))) else bytes(b),
    ]
    for _ in range(EXAMPLES):
        caller.check(method, rng.choice(mutations)(valid), "mutated")


@pytest.mark.parametrize("method", METHODS)
def test_generated_messages(caller: Caller, live_ids: list[str], method: str) -> None:
    cls = _request_class(method)

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(_message(_method(method)[0].input_type, live_ids))
    def send(values: dict[str, Any]) -> None:
        caller.check(method, _build(cls, values).SerializeToString(), "generated")

    send()


INVALID = grpc.StatusCode.INVALID_ARGUMENT


def test_the_inputs_found_before_get_their_documented_answers(
    caller: Caller, live_ids: list[str]
) -> None:
    """Each input that once got through, or broke the server, answered as documented."""
    c, live = caller.client, live_ids[0]
    for odd in ("\n", "\r", "\t", " ", "\x00", "/x", "é"):
        calls: list[tuple[str, Callable[[], object]]] = [
            ("workflow_id", functools.partial(c.start, "tally", version=1, workflow_id=f"nl{odd}")),
            ("name", functools.partial(c.get, f"{live}{odd}")),
            ("name", functools.partial(c.signal, f"{live}{odd}", "tick", {"id": "x"})),
        ]
        if odd != "/x":  # '/' is one of a request id's characters
            calls.append(
                ("request_id", functools.partial(c.start, "tally", version=1, request_id=f"r{odd}"))
            )
        for field, call in calls:
            code, info = rpc_failure(call)
            assert (code, info.reason, info.metadata["field"]) == (INVALID, "INVALID_FIELD", field)
    # A timer ten thousand years ahead fails its step with its reason, never INTERNAL.
    far = c.start("ticket-escalation", input={"respond_within": "87600000h"}).workflow
    assert far.status == FAILED and not far.timers
    assert "100 years" in far.error.message
    assert c.get(far.workflow_id) == far


# -- the HTTP API ---------------------------------------------------------------------------

HTTP_ROUTES = RouteTable(routes([service for service, _ in SERVICES]))
JSON_TYPE = {"Content-Type": "application/json"}


@pytest.fixture(scope="module")
def http(module_server: ServerProcess) -> Http:
    return Http(console_url(module_server), timeout=20)


def _answered(answer_status: int, body: Any, what: object) -> None:
    """Below 500; an error is the API's JSON error body."""
    TRIED["http"] = TRIED.get("http", 0) + 1
    assert answer_status < 500, (what, answer_status, body)
    if answer_status >= 400:
        assert isinstance(body, dict), (what, answer_status, body)
        assert body.get("error", {}).get("code") == answer_status, (what, body)
        http_error_info(body)  # Google's error shape, with one ErrorInfo


def _send(
    http: Http,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> None:
    headers = headers or {}
    answer = http.request(method, path, body, headers=headers)
    _answered(answer.status, answer.body, (method, path[:200], (body or b"")[:200], headers))


def _raw(http: Http, request: bytes) -> tuple[int, Any]:
    """``request`` as sent, on a connection of its own; the status and JSON body of the
    answer (0 when the server closed without one)."""
    url = urlsplit(http.base)
    assert url.hostname is not None and url.port is not None
    with socket.create_connection((url.hostname, url.port), timeout=20) as conn:
        conn.sendall(request)
        # A server that answered at once and closed has already shut the connection: what
        # it sent is still to be read.
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    if not received:
        return 0, None
    head, _, payload = received.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, json.loads(payload) if b"application/json" in head.lower() else payload


def test_http_bodies_in_bad_encodings(http: Http) -> None:
    start = "/api/v1/workflows"
    valid = b'{"definition": "tally"}'
    for body, content_type in (
        (b'{"definition": "tally", "workflowId": "\xff\xfe"}', "application/json"),
        (b'{"definition": "\xc3"}', "application/json; charset=utf-8"),
        (valid, "application/json; charset=bogus"),
        (valid, "application/json; charset=utf-16"),
        (valid, "application/json; charset=latin-1"),
        (valid.decode().encode("utf-16"), "application/json; charset=utf-16"),
        (valid, "text/plain"),
        (b"", "text/plain"),
        (b"", "application/x-www-form-urlencoded"),
        (b"definition=tally", "application/x-www-form-urlencoded"),
        (valid, "multipart/form-data; boundary=x"),
        (valid, "application/json; charset"),
        (valid, ";;;"),
        (b"[]", "application/json"),
        (b"null", "application/json"),
        (b'"x"', "application/json"),
        (b'{"definition": "tally", "version": 1e999}', "application/json"),
        (b'{"definition": "tally", "version": 99999999999999999999}', "application/json"),
        (
            b'{"definition": "tally", "input": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
            "application/json",
        ),
        (b'{"definition": "tally", "input": {"x": NaN}}', "application/json"),
        (b'{"definition": "tally", "definition": "tally"}', "application/json"),
        (b"\x00" * 64, "application/json"),
    ):
        _send(http, "POST", start, body, {"Content-Type": content_type})
    # No Content-Type at all, and a write with an empty body: refused, not applied.
    _send(http, "POST", f"{start}/fuzz-absent/cancel", b"")
    refused = http.request("POST", f"{start}/fuzz-absent/cancel", b"", headers={})
    assert refused.error == ("INVALID_ARGUMENT", "UNSUPPORTED_MEDIA_TYPE")


def test_http_odd_digits_and_numbers(http: Http) -> None:
    odd = [
        "²",
        "٣",
        "\uff11",
        "-1",
        "0",
        "1.5",
        "1e3",
        "9999999999999999999",
        "9" * 40,
        " 1",
        "0x10",
    ]
    for text in odd:
        token = quote(text)
        _send(http, "GET", f"/api/v1/definitions/tally/versions/{token}")
        _send(http, "GET", f"/api/v1/definitions?pageSize={token}")
        _send(http, "GET", f"/api/v1/definitions?pageToken=o{token}")
        _send(http, "GET", f"/api/v1/workflows?pageSize={token}&status={token}")
        _send(http, "GET", f"/api/v1/tasks?pageSize={token}")
        _send(http, "DELETE", f"/api/v1/workflows/fuzz-absent?expectedRevision={token}")
        etag = quote(f'"fuzz-absent/{text}"')
        _send(http, "DELETE", f"/api/v1/workflows/fuzz-absent?etag={etag}")
        _send(http, "DELETE", f"/api/v1/workflows/fuzz-absent?force={token}")
        _send(http, "GET", f"/api/v1/workflows/fuzz-absent/watch?afterRevision={token}")
        body = json.dumps({"expectedRevision": text, "event": "tick"}).encode()
        _send(http, "POST", "/api/v1/workflows/fuzz-absent/resume", body, JSON_TYPE)
        for stream in ("/api/v1/workflows/fuzz-absent/watch", "/api/v1/diagnostics:watch"):
            status, payload = _raw(
                http,
                f"GET {stream} HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: {text}\r\n"
                "Connection: close\r\n\r\n".encode(),
            )
            if (
                text.isascii()
                and text.isdigit()
                and int(text) < 2**63
                and stream.endswith("s:watch")
            ):
                continue  # a fine id: the stream opened, and our shutdown ended it
            _answered(status, payload, (stream, text))


def test_http_inputs_past_the_parser_s_limits(http: Http) -> None:
    for size in (8_000, 20_000, 100_000):
        _send(http, "GET", "/api/v1/workflows?definition=" + "x" * size)
        _send(http, "GET", "/api/v1/workflows/" + "x" * size)
        _send(http, "GET", "/api/v1/definitions", None, {"X-Padding": "x" * size})
        _send(http, "GET", "/api/v1/definitions", None, {"Authorization": "Bearer " + "x" * size})
    for request in (
        b"GET /api/v1/definitions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + b"".join(b"X-%d: y\r\n" % n for n in range(300))
        + b"\r\n",
        b"GET /api/v1/definitions HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header: x\r\n\r\n",
        b"GET /api/v1/definitions HTTP/1.1\r\nHost: \x00\xff\r\n\r\n",
        b"POST /api/v1/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
        b"\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"POST /api/v1/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
        b"POST /api/v1/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n"
        b"Content-Length: 2\r\n\r\n{}",
        b"GET /api/v1/workflows/%ff HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /api/v1/workflows?definition=%ff%fe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /api/v1/workflows/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /api/v1/\xff\xfe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"BREW /api/v1/workflows HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        b"GET /api/v1/definitions HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        bytes(range(256)) * 4,
    ):
        status, payload = _raw(http, request)
        if status:
            _answered(status, payload, request[:120])


def _route_path(route: Route, data: st.DataObject) -> str:
    path = route.template.text
    while "{" in path:
        start, end = path.index("{"), path.index("}")
        _, _, pattern = path[start + 1 : end].partition("=")
        parts = [
            quote(data.draw(st.one_of(st.just("fuzz-absent"), TEXT.filter(bool))), safe="")
            if p == "*"
            else p
            for p in (pattern or "*").split("/")
        ]
        path = path[:start] + "/".join(parts) + path[end + 1 :]
    return path


@pytest.mark.parametrize(
    "route", list(HTTP_ROUTES), ids=lambda r: f"{r.http_method} {r.template.text}"
)
def test_http_generated_requests(http: Http, route: Route) -> None:
    @settings(
        max_examples=EXAMPLES // 4,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def send(data: st.DataObject) -> None:
        path = _route_path(route, data)
        fields = data.draw(st.dictionaries(TEXT, st.one_of(ODD_TEXT, NUMBERS.map(str)), max_size=4))
        body = None
        if route.body:
            value = data.draw(st.one_of(JSON, st.dictionaries(TEXT, JSON, max_size=6)))
            body = json.dumps(value, allow_nan=True).encode()
        elif fields:
            path += "?" + urlencode(fields)
        if route.streaming:
            status, payload = _raw(
                http,
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode(),
            )
            if status != 200:
                _answered(status, payload, path)
            return
        _send(http, route.http_method, path, body, JSON_TYPE if body is not None else None)

    send()


def test_report_the_number_of_inputs_tried(caller: Caller) -> None:
    # Runs after the others of its backend (pytest keeps file order): a visible count.
    total = sum(TRIED.values())
    print(f"fuzz inputs tried on this backend so far: {total} {TRIED}")
    assert total >= 2 * EXAMPLES * len(METHODS)  # hypothesis may stop early on small spaces


def test_names_the_fuzzer_invented_are_not_remembered(caller: Caller) -> None:
    """Thousands of made-up queue names were polled above: only the queues a definition
    names are remembered (and shown), whatever a caller sends."""
    named = {
        state.task.queue
        for path in [*example_definitions(), *TEST_DEFINITIONS.glob("*.yaml")]
        for state in load_definition_file(path).states.values()
        if state.task is not None
    }
    shown = {q.queue for q in caller.client.diagnostics().task_queues}
    assert shown <= named, shown - named
