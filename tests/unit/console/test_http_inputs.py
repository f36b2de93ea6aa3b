"""What the HTTP API reads from a call before it becomes a request message: the Host, the
body's type and bytes, the query string, Last-Event-ID."""

from __future__ import annotations

import pytest
from multidict import MultiDict
from statewright.v1 import task_service_pb2 as task_pb
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd import errors
from statewrightd.console import inputs
from statewrightd.console.guard import HostGuard


def test_the_host_must_name_this_server() -> None:
    loopback = HostGuard("127.0.0.1")
    for ok in ("127.0.0.1:8080", "127.0.0.1", "localhost:8080", "LOCALHOST", "[::1]:8080", None):
        assert loopback.allows(ok), ok
    for refused in ("evil.example", "evil.example:8080", "127.0.0.1.nip.io", "10.0.0.1:8080"):
        assert not loopback.allows(refused), refused

    everywhere = HostGuard("0.0.0.0", ["console.example.com", ".internal"])
    for ok in ("10.1.2.3:80", "[fd00::1]", "localhost", "console.example.com.", "a.b.internal"):
        assert everywhere.allows(ok), ok
    for refused in ("example.com", "internal.evil", "console.example.com.evil"):
        assert not everywhere.allows(refused), refused

    named = HostGuard("console.example.com")
    assert named.allows("Console.Example.com:443") and not named.allows("localhost")
    assert HostGuard("127.0.0.1", ["*"]).allows("anything.at.all")


def test_bodies_are_json_in_utf8() -> None:
    inputs.check_json_type("application/json")
    inputs.check_json_type("Application/JSON; charset=UTF-8")
    for refused in (None, "", "text/plain", "application/x-www-form-urlencoded",
                    "multipart/form-data; boundary=x", "application/json; charset=utf-16",
                    "application/json; charset=bogus"):  # fmt: skip
        with pytest.raises(errors.InvalidArgument) as refusal:
            inputs.check_json_type(refused)
        assert refusal.value.reason == "UNSUPPORTED_MEDIA_TYPE"
    with pytest.raises(errors.InvalidArgument, match="not UTF-8") as bad:
        inputs.decode_body(b'{"definition": "\xff"}', "StartWorkflow")
    assert bad.value.reason == "MALFORMED_REQUEST"
    for text in ("[", "[]", "1", '{"definitionn": 1}', "[" * 100_000, '{"version": 1e999}'):
        with pytest.raises(errors.InvalidArgument) as refusal:
            inputs.parse_json(text, pb.StartWorkflowRequest(), "StartWorkflow")
        assert refusal.value.reason == "MALFORMED_REQUEST", text


def test_the_query_string_fills_fields_by_either_name() -> None:
    descriptor = pb.DeleteWorkflowRequest.DESCRIPTOR
    fields = inputs.query_fields(
        MultiDict([("allowMissing", "true"), ("expected_revision", "3")]), descriptor, "D", {}
    )
    message = pb.DeleteWorkflowRequest()
    inputs.parse_fields(fields, message, "D")
    assert message.allow_missing and message.expected_revision == 3
    poll = task_pb.PollTasksRequest()
    inputs.parse_fields(
        inputs.query_fields(MultiDict([("wait", "1.5s")]), poll.DESCRIPTOR, "P", {}), poll, "P"
    )
    assert poll.wait.ToMilliseconds() == 1500
    for query, bound in (
        ([("force", "true"), ("force", "false")], {}),  # a single field given twice
        ([("colour", "blue")], {}),
        ([("name", "workflows/x")], {"name": "workflows/y"}),  # the path gives it
        ([("expectedRevision", "²")], {}),
        ([("expectedRevision", "99999999999999999999")], {}),
    ):
        with pytest.raises(errors.InvalidArgument) as refusal:
            fields = inputs.query_fields(MultiDict(query), descriptor, "D", bound)
            inputs.parse_fields(fields, pb.DeleteWorkflowRequest(), "D")
        assert refusal.value.reason == "MALFORMED_REQUEST", query


def test_the_path_names_the_resource() -> None:
    message = pb.ResumeWorkflowRequest(name="workflows/a")
    inputs.bind_path({"name": "workflows/a"}, message, "ResumeWorkflow")
    with pytest.raises(errors.InvalidArgument):
        inputs.bind_path({"name": "workflows/b"}, message, "ResumeWorkflow")


def test_last_event_id_is_a_whole_number_that_fits() -> None:
    assert inputs.last_event_id(None) is None and inputs.last_event_id(" ") is None
    assert inputs.last_event_id("42") == 42
    for bad in ("²", "٣", "-1", "1.5", "9999999999999999999", "1" * 40, "x"):
        with pytest.raises(errors.InvalidArgument):
            inputs.last_event_id(bad)
