"""History that tells the story: every step's input and its context change come back in
WatchWorkflow (replayed from history and live), on each backend."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from google.protobuf import json_format
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import Client, uid
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

STEP = pb.WATCH_EVENT_TYPE_STEP


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    with running_server(database_url, definitions_dir(tmp_path / "defs"), cwd=tmp_path) as proc:
        yield proc


def watch(client: Client, workflow_id: str, after: int | None) -> list[pb.WatchWorkflowResponse]:
    request = pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}")
    if after is not None:
        request.after_revision = after
    return list(client.stub.WatchWorkflow(request, timeout=60))


def as_json(message: pb.WatchWorkflowResponse) -> dict[str, Any]:
    return json_format.MessageToDict(message)


def context_of(message: pb.WatchWorkflowResponse) -> dict[str, Any]:
    context: dict[str, Any] = as_json(message)["workflow"].get("context", {})
    return context


def check_patches(messages: list[pb.WatchWorkflowResponse], before: dict[str, Any]) -> None:
    """Each step's patch, applied to the context before it, gives the step's context."""
    for message in messages:
        patch = as_json(message).get("contextPatch", [])
        assert jsonpatch.apply_patch(before, patch) == context_of(message), message.revision
        before = context_of(message)


def test_inputs_and_context_patches_come_back_from_history_and_live(
    server: ServerProcess,
) -> None:
    with Client(server.target) as client:
        wid = uid("story")
        client.start("gated-approval", workflow_id=wid, input={"amount": 5})
        live: list[pb.WatchWorkflowResponse] = []
        reader = threading.Thread(target=lambda: live.extend(watch(client, wid, None)))
        reader.start()
        client.resume(wid, "revise", input={"approver": "ann"})
        assert client.signal(wid, "resubmit", {"why": "typo", "lines": [1, 2]}).accepted
        client.resume(wid, "approve", input={"approver": "bob"})
        reader.join(30)
        assert not reader.is_alive()
        history = watch(client, wid, 0)
        tail = watch(client, wid, 2)

    assert [m.revision for m in history] == [1, 2, 3, 4]
    start, revise, resubmit, approve = (as_json(m) for m in history)
    assert start["input"] == {"amount": 5}
    assert revise["input"] == {"approver": "ann"}
    assert resubmit["input"] == {"why": "typo", "lines": [1, 2]}
    assert approve["input"] == {"approver": "bob"}
    # The start's patch is from nothing; each later one from the revision before.
    assert {"op": "add", "path": "/amount", "value": 5} in start["contextPatch"]
    assert revise["contextPatch"] == [{"op": "replace", "path": "/approver", "value": "ann"}]
    assert "contextPatch" not in resubmit  # the signal changed no context
    assert {"op": "replace", "path": "/approver", "value": "bob"} in approve["contextPatch"]
    assert {"op": "add", "path": "/notes/1", "value": "approved by bob"} in approve["contextPatch"]
    check_patches(history, {})

    # Replayed from a revision: the first patch is from that revision's saved context.
    assert [as_json(m) for m in tail] == [revise, resubmit, approve][1:]
    # Live: the CURRENT message has neither; every live step has both, as history says.
    steps = [m for m in live if m.type == STEP]
    assert not live[0].HasField("input") and not live[0].context_patch
    assert steps and steps[-1].revision == 4
    for message in steps:
        saved = as_json(history[message.revision - 1])
        assert as_json(message)["input"] == saved["input"]
        assert as_json(message).get("contextPatch") == saved.get("contextPatch")
    check_patches(steps, context_of(live[0]))


def test_a_cancellation_records_its_reason_as_its_input(server: ServerProcess) -> None:
    with Client(server.target) as client:
        wid = uid("story-cancel")
        client.start("tally", workflow_id=wid)
        assert client.signal(wid, "tick", {"id": "a"}).accepted
        client.cancel(wid, reason="customer withdrew")
        history = watch(client, wid, 0)
    tick, cancelled = (as_json(m) for m in history[1:])
    assert tick["input"] == {"id": "a"}
    assert sorted(tick["contextPatch"], key=str) == sorted(
        [
            {"op": "add", "path": "/seen/0", "value": "a"},
            {"op": "replace", "path": "/count", "value": 1},
        ],
        key=str,
    )
    assert cancelled["input"] == {"reason": "customer withdrew"}
    assert cancelled["workflow"]["status"] == "WORKFLOW_STATUS_CANCELLED"
    # The last row of a finished instance may store no context: the patch still holds.
    check_patches(history, {})
