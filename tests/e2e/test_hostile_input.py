"""Input a careless or hostile caller can send, answered over real gRPC.

Each test names the promise it holds the server to: an expensive guard fails its step
cleanly and releases the instance; values too deep for clients to decode are refused at
the door; errors never echo huge values back; undecodable bodies get INVALID_ARGUMENT with
one ErrorInfo; unknown enum values and bad page tokens are refused alike; a watch after a
revision that does not exist yet is refused instead of hanging.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import (
    FAILED,
    RUNNING,
    Client,
    context_of,
    error_info,
    expect_error,
    rpc_failure,
    uid,
)
from tests.support.server import ServerProcess

INVALID = grpc.StatusCode.INVALID_ARGUMENT
# The documented nesting limit of context values (maps and lists inside a field's value).
MAX_NESTING = 20
# Well above what any error needs, well below any client's metadata limit (8 KiB).
MAX_TRAILER_BYTES = 4096


def nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"n": value}
    return value


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


def step_error(workflow: workflow_pb2.Workflow) -> error_details_pb2.ErrorInfo:
    (detail,) = workflow.error.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info)
    return info


def trailer_bytes(err: grpc.RpcError) -> int:
    call: Any = err
    size = len((call.details() or "").encode())
    for key, value in call.trailing_metadata() or ():
        size += len(key) + len(value if isinstance(value, bytes) else value.encode())
    return size


# -- an expensive guard -----------------------------------------------------------------------


def test_a_guard_over_the_evaluation_budget_fails_the_step_and_releases_the_instance(
    client: Client,
) -> None:
    wid = uid("budget")
    client.start("hostile", workflow_id=wid, input={"big": list(range(300))})
    response = client.signal(wid, "go", timeout=10)
    assert response.accepted
    workflow = response.workflow
    assert workflow.status == FAILED, workflow
    info = step_error(workflow)
    assert info.reason == "EVALUATION_BUDGET_EXCEEDED", info
    assert info.metadata["path"] == "transitions[0].guard", info
    assert info.metadata["limit"], info
    # The instance is released: later calls get their own answers at once.
    assert client.get(wid).status == FAILED
    expect_error(
        lambda: client.cancel(wid), grpc.StatusCode.FAILED_PRECONDITION, "ALREADY_TERMINAL"
    )
    refused = client.signal(wid, "stop", timeout=10)
    assert not refused.accepted
    assert refused.reason == pb.SIGNAL_REJECTION_NOT_RUNNING


def test_the_same_guard_within_the_budget_is_evaluated(client: Client) -> None:
    wid = uid("budget")
    client.start("hostile", workflow_id=wid, input={"big": list(range(50))})
    response = client.signal(wid, "go")
    assert response.accepted
    assert response.workflow.status == RUNNING
    assert response.workflow.revision == 1  # every guard false: nothing changed


# -- nesting ------------------------------------------------------------------------------------


def test_input_nested_beyond_the_limit_is_refused_and_nothing_is_stored(client: Client) -> None:
    wid = uid("deep")
    info = expect_error(
        lambda: client.start("hostile", workflow_id=wid, input={"blob": nested(MAX_NESTING + 1)}),
        INVALID,
        "VALUE_TOO_DEEP",
    )
    assert info.metadata["field"] == "input.blob", info
    assert info.metadata["limit"] == str(MAX_NESTING), info
    expect_error(lambda: client.get(wid), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")


def test_a_value_at_the_limit_is_stored_and_every_read_decodes_it(client: Client) -> None:
    wid = uid("deep")
    deepest = {"blob": nested(MAX_NESTING), "big": [nested(MAX_NESTING - 1)]}
    started = client.start("hostile", workflow_id=wid, input=deepest).workflow
    assert depth_of(context_of(started)["blob"]) == MAX_NESTING
    assert context_of(client.get(wid))["blob"] == nested(MAX_NESTING)
    assert any(w.workflow_id == wid for w in client.list_all(definition="hostile"))
    request = pb.WatchWorkflowRequest(name=f"workflows/{wid}")
    stream = client.stub.WatchWorkflow(request, timeout=5)
    current = next(iter(stream))
    stream.cancel()
    assert context_of(current.workflow)["blob"] == nested(MAX_NESTING)


def test_payloads_and_resume_input_beyond_the_limit_are_refused_and_change_nothing(
    client: Client,
) -> None:
    wid = uid("deep")
    client.start("hostile", workflow_id=wid)
    info = expect_error(
        lambda: client.signal(wid, "stop", {"x": nested(MAX_NESTING + 1)}),
        INVALID,
        "VALUE_TOO_DEEP",
    )
    assert info.metadata["field"] == "payload.x", info
    assert client.signal(wid, "park").workflow.status == workflow_pb2.WORKFLOW_STATUS_WAITING
    info = expect_error(
        lambda: client.resume(wid, "wake", input={"blob": nested(MAX_NESTING + 1)}),
        INVALID,
        "VALUE_TOO_DEEP",
    )
    assert info.metadata["field"] == "input.blob", info
    assert client.get(wid).revision == 2


def test_set_building_a_value_beyond_the_limit_fails_the_step_cleanly(client: Client) -> None:
    wid = uid("deep")
    client.start("hostile", workflow_id=wid)
    for hop in range(1, MAX_NESTING + 1):
        workflow = client.signal(wid, "deepen").workflow
        assert workflow.status == RUNNING, (hop, workflow)
    failed = client.signal(wid, "deepen").workflow
    assert failed.status == FAILED, failed
    info = step_error(failed)
    assert info.reason == "VALUE_TOO_DEEP", info
    assert info.metadata["field"] == "nest", info
    # The failed instance keeps what it had before the step, and every read decodes it.
    assert depth_of(context_of(client.get(wid))["nest"]) == MAX_NESTING


# -- long values --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "call"),
    [
        ("workflow_id", lambda c: c.start("hostile", workflow_id="w" * 10_000)),
        ("name", lambda c: c.get("w" * 10_000)),
        ("event", lambda c: c.signal("some-id", "e" * 100_000)),
        ("definition", lambda c: c.start("d" * 100_000)),
        ("request_id", lambda c: c.start("hostile", request_id="r" * 100_000)),
        ("reason", lambda c: c.cancel("some-id", reason="x" * 100_000)),
    ],
)
def test_long_ids_names_and_events_get_invalid_argument_with_small_trailers(
    client: Client, field: str, call: Any
) -> None:
    code, info = rpc_failure(lambda: call(client))
    assert code is INVALID, (code, info)
    assert info.metadata["field"] == field, info
    assert "limit" in info.metadata, info


def test_no_error_trailer_exceeds_a_few_kilobytes_whatever_the_input(client: Client) -> None:
    key = "k" * 100_000
    cases: list[Callable[[], object]] = [
        lambda: client.start("hostile", input={key: 1}),
        lambda: client.start("hostile", workflow_id="w" * 10_000),
        lambda: client.signal("x" * 50_000, "go"),
        lambda: client.start("hostile", input={"hops": "x" * 100_000}),
    ]
    for case in cases:
        with pytest.raises(grpc.RpcError) as caught:
            case()
        err: Any = caught.value
        assert err.code() is INVALID, err
        error_info(err)
        assert trailer_bytes(err) <= MAX_TRAILER_BYTES, trailer_bytes(err)


# Outside the documented id characters: a final newline (which a regular expression's ``$``
# lets through), other control characters, spaces, quotes and non-ASCII letters.
BAD_IDS = ["nl-id\n", "tab\tid", "nul\x00id", "cr-id\r", "sp id", "q'id", "caf\u00e9", "pct%id"]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_ids_outside_the_documented_set_are_refused_naming_the_field(
    client: Client, bad: str
) -> None:
    live = client.start("tally", version=1).workflow.workflow_id
    calls: list[tuple[str, Callable[[], object]]] = [
        ("workflow_id", lambda: client.start("tally", version=1, workflow_id=bad)),
        ("workflow_id", lambda: client.start("tally", version=1, workflow_id="ok-" + bad)),
        ("request_id", lambda: client.start("tally", version=1, request_id=bad)),
        ("request_id", lambda: client.signal(live, "tick", {"id": "a"}, request_id=bad)),
        ("request_id", lambda: client.cancel(live, request_id=bad)),
        ("name", lambda: client.get(bad)),
        ("name", lambda: client.signal(bad, "tick", {"id": "a"})),
    ]
    for field, call in calls:
        code, info = rpc_failure(call)
        assert (code, info.reason, info.metadata["field"]) == (INVALID, "INVALID_FIELD", field)
    # Nothing was stored under the id, and the live instance was not touched.
    listed = {w.workflow_id for w in client.list_all(page_size=1000)}
    assert not any(wid.startswith(("nl-id", "ok-")) for wid in listed)
    assert client.get(live).revision == 1


# -- undecodable bodies -------------------------------------------------------------------------

METHODS = sorted(pb.DESCRIPTOR.services_by_name["WorkflowService"].methods_by_name)
STREAMING = {"WatchWorkflow"}


def raw_call(server: ServerProcess, method: str, body: bytes) -> tuple[grpc.StatusCode, Any]:
    """Send ``body`` as the request of ``method``; return the code and the error."""
    with server.channel() as channel:
        path = f"/statewright.v1.WorkflowService/{method}"
        try:
            # No serializers: the body goes on the wire exactly as given.
            if method in STREAMING:
                open_stream: Any = channel.unary_stream(path)
                list(open_stream(body, timeout=5))
            else:
                call: Any = channel.unary_unary(path)
                call(body, timeout=5)
        except grpc.RpcError as err:
            return err.code(), err
    raise AssertionError(f"{method} accepted an undecodable body")


# A length-delimited field 1 whose bytes are not UTF-8: every request's field 1 is a string.
INVALID_UTF8 = b"\x0a\x02\xff\xfe"
GARBAGE = [b"\xff\xff\xff\xff", b"\x0a\xff\xff\xff\xff\x0f", INVALID_UTF8, b"\x08"]


@pytest.mark.parametrize("method", METHODS)
def test_undecodable_bodies_get_malformed_request_with_one_error_info(
    module_server: ServerProcess, method: str
) -> None:
    for body in GARBAGE:
        if method in {"GetDiagnostics"} and body == INVALID_UTF8:
            continue  # its request has no fields: unknown fields are skipped, as protobuf says
        code, err = raw_call(module_server, method, body)
        assert code is INVALID, (method, body, err)
        assert error_info(err).reason == "MALFORMED_REQUEST", (method, body)


def test_a_flood_of_undecodable_bodies_logs_a_few_lines_not_a_traceback_each(
    module_server: ServerProcess,
) -> None:
    before = len(module_server.lines)
    for _ in range(50):
        raw_call(module_server, "GetWorkflow", b"\xff\xff\xff\xff")
    logged = module_server.lines[before:]
    assert len([line for line in logged if "malformed" in line.lower()]) <= 2, logged
    assert not any("Traceback" in line for line in logged), logged


# -- enums, page tokens, revisions that do not exist yet ----------------------------------------


def test_an_unknown_if_exists_value_is_refused(client: Client) -> None:
    unknown: Any = 7
    info = expect_error(
        lambda: client.start("hostile", if_exists=unknown), INVALID, "INVALID_FIELD"
    )
    assert info.metadata["field"] == "if_exists", info


def test_bad_page_tokens_get_the_same_reason_from_every_list(client: Client) -> None:
    for call in (
        lambda: client.stub.ListWorkflows(pb.ListWorkflowsRequest(page_token="nope"), timeout=5),
        lambda: client.stub.ListDefinitions(
            pb.ListDefinitionsRequest(page_token="nope"), timeout=5
        ),
    ):
        info = expect_error(call, INVALID, "INVALID_PAGE_TOKEN")
        assert info.metadata["field"] == "page_token", info


def test_a_watch_after_a_revision_that_does_not_exist_yet_is_refused(client: Client) -> None:
    wid = uid("watch")
    client.start("hostile", workflow_id=wid)
    request = pb.WatchWorkflowRequest(name=f"workflows/{wid}", after_revision=1_000)
    info = expect_error(
        lambda: list(client.stub.WatchWorkflow(request, timeout=5)),
        grpc.StatusCode.OUT_OF_RANGE,
        "REVISION_OUT_OF_RANGE",
    )
    assert info.metadata["current_revision"] == "1", info
    # At the current revision the watch is valid: it waits for the next step.
    client.signal(wid, "stop")
    at_current = pb.WatchWorkflowRequest(name=f"workflows/{wid}", after_revision=1)
    (step,) = list(client.stub.WatchWorkflow(at_current, timeout=5))
    assert step.revision == 2
