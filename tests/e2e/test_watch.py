"""WatchWorkflow: ordered, gap-free, duplicate-free streams, from history and live."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from tests.support.api import COMPLETED, Client, expect_error, struct, uid
from tests.support.deployment import definitions_dir, running_server
from tests.support.ports import stable_port
from tests.support.server import ServerProcess

STEP = pb.WATCH_EVENT_TYPE_STEP
CURRENT = pb.WATCH_EVENT_TYPE_CURRENT


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[ServerProcess]:
    with running_server(database_url, definitions_dir(tmp_path / "defs"), cwd=tmp_path) as proc:
        yield proc


def watch_all(
    client: Client, workflow_id: str, after: int | None = None, delay: float = 0.0
) -> list[pb.WatchWorkflowResponse]:
    """Read a whole stream (it ends after the terminal revision), optionally slowly."""
    request = pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}")
    if after is not None:
        request.after_revision = after
    messages = []
    for message in client.stub.WatchWorkflow(request, timeout=60):
        messages.append(message)
        if delay:
            time.sleep(delay)
    return messages


def tick(client: Client, workflow_id: str, tick_id: str) -> bool:
    return client.signal(workflow_id, "tick", {"id": tick_id}).accepted


def assert_dense(messages: list[pb.WatchWorkflowResponse], first: int, last: int) -> None:
    assert [m.revision for m in messages] == list(range(first, last + 1))
    for message in messages:
        assert message.workflow.revision == message.revision


def test_first_message_is_current_then_every_step_then_ok(server: ServerProcess) -> None:
    with Client(server.target) as client:
        workflow_id = uid("tally")
        client.start("tally", workflow_id=workflow_id)
        result: list[pb.WatchWorkflowResponse] = []
        reader = threading.Thread(target=lambda: result.extend(watch_all(client, workflow_id)))
        reader.start()
        time.sleep(0.3)
        for i in range(5):
            assert tick(client, workflow_id, f"t{i}")
        client.signal(workflow_id, "close", {})
        reader.join(30)
        assert not reader.is_alive(), "stream did not end after the terminal revision"
    assert result[0].type == CURRENT
    assert [m.type for m in result[1:]] == [STEP] * (len(result) - 1)
    assert_dense(result, result[0].revision, 7)
    assert result[-1].workflow.status == COMPLETED
    assert [t.event for t in result[1].transitions] == ["tick"]
    assert result[1].event == "tick"


def test_after_revision_replays_history_and_a_finished_instance_just_ends(
    server: ServerProcess,
) -> None:
    with Client(server.target) as client:
        workflow_id = uid("tally")
        client.start("tally", workflow_id=workflow_id)
        for i in range(3):
            tick(client, workflow_id, f"t{i}")
        client.signal(workflow_id, "close", {})
        replay = watch_all(client, workflow_id, after=0)
        assert [m.type for m in replay] == [STEP] * 5
        assert_dense(replay, 1, 5)
        assert [m.workflow.state for m in replay] == ["open", "open", "open", "open", "closed"]
        assert watch_all(client, workflow_id, after=5) == []
        current = watch_all(client, workflow_id)
        assert [(m.type, m.revision) for m in current] == [(CURRENT, 5)]
        expect_error(
            lambda: watch_all(client, uid("missing")),
            grpc.StatusCode.NOT_FOUND,
            "WORKFLOW_NOT_FOUND",
        )


def test_order_under_concurrent_signals(server: ServerProcess) -> None:
    with Client(server.target) as client:
        workflow_id = uid("tally")
        client.start("tally", workflow_id=workflow_id)
        watched: list[pb.WatchWorkflowResponse] = []
        reader = threading.Thread(
            target=lambda: watched.extend(watch_all(client, workflow_id, after=0))
        )
        reader.start()
        ids = [f"t{i}" for i in range(120)]
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert all(pool.map(lambda i: tick(client, workflow_id, i), ids))
        client.signal(workflow_id, "close", {})
        reader.join(60)
    assert_dense(watched, 1, len(ids) + 2)
    # Each accepted tick shows up exactly once, as the event of its own revision.
    seen = [
        m.workflow.context.fields["seen"].list_value.values[-1].string_value for m in watched[1:-1]
    ]
    assert sorted(seen) == sorted(ids)
    assert len(set(seen)) == len(ids)


def test_slow_consumer_catches_up_from_history_and_loses_nothing(
    server: ServerProcess,
) -> None:
    workflow_id = uid("tally")
    watched: list[pb.WatchWorkflowResponse] = []
    # No BDP probing: the client's receive window stays small, so a reader slower than the
    # writers makes the server-side buffer overflow and the watcher fall back to history.
    slow_channel = grpc.insecure_channel(server.target, options=[("grpc.http2.bdp_probe", 0)])
    slow = pb_grpc.WorkflowServiceStub(slow_channel)

    def read_slowly() -> None:
        request = pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}")
        for message in slow.WatchWorkflow(request, timeout=120):
            watched.append(message)
            time.sleep(0.05)

    with Client(server.target) as client:
        client.start("tally", workflow_id=workflow_id)
        reader = threading.Thread(target=read_slowly)
        reader.start()
        time.sleep(0.3)
        # Long ids make later messages large (the context keeps every id), so few fit in
        # the client's receive window and the server's writes stall early.
        pad = "x" * 100
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda i: tick(client, workflow_id, f"t{i}-{pad}"), range(300)))
        client.signal(workflow_id, "close", {})
        reader.join(120)
        diagnostics = client.stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=10)
    slow_channel.close()
    assert watched[0].type == CURRENT
    assert_dense(watched, watched[0].revision, 302)
    assert diagnostics.watchers.catch_ups >= 1, "the overflow path was not exercised"


def test_a_thousand_watchers_on_one_instance_all_see_every_revision(
    server: ServerProcess,
) -> None:
    workflow_id = uid("tally")
    watchers = 1000

    async def scenario() -> list[list[int]]:
        channels = [grpc.aio.insecure_channel(server.target) for _ in range(10)]
        stubs = [pb_grpc.WorkflowServiceStub(ch) for ch in channels]
        await stubs[0].StartWorkflow(
            pb.StartWorkflowRequest(definition="tally", workflow_id=workflow_id), timeout=10
        )
        opened = asyncio.Event()
        ready = 0

        async def watch(stub: Any) -> list[int]:
            nonlocal ready
            revisions = []
            call = stub.WatchWorkflow(
                pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}"), timeout=120
            )
            async for message in call:
                revisions.append(message.revision)
                if message.type == CURRENT:
                    ready += 1
                    if ready == watchers:
                        opened.set()
            return revisions

        tasks = [asyncio.create_task(watch(stubs[i % len(stubs)])) for i in range(watchers)]
        await asyncio.wait_for(opened.wait(), 60)
        for i in range(5):
            await stubs[0].SignalWorkflow(
                pb.SignalWorkflowRequest(
                    name=f"workflows/{workflow_id}", event="tick", payload=struct({"id": str(i)})
                ),
                timeout=10,
            )
        await stubs[0].SignalWorkflow(
            pb.SignalWorkflowRequest(name=f"workflows/{workflow_id}", event="close"), timeout=10
        )
        results = await asyncio.wait_for(asyncio.gather(*tasks), 120)
        for channel in channels:
            await channel.close()
        return results

    results = asyncio.run(scenario())
    assert len(results) == watchers
    for revisions in results:
        assert revisions == [1, 2, 3, 4, 5, 6, 7]


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_watch_on_replica_b_sees_steps_committed_through_replica_a(
    database_url: str, tmp_path: Path
) -> None:
    defs = definitions_dir(tmp_path / "defs")
    with (
        running_server(database_url, defs, cwd=tmp_path) as replica_a,
        running_server(database_url, defs, cwd=tmp_path) as replica_b,
        Client(replica_a.target) as via_a,
        Client(replica_b.target) as via_b,
    ):
        workflow_id = uid("tally")
        via_a.start("tally", workflow_id=workflow_id)
        watched: list[pb.WatchWorkflowResponse] = []
        reader = threading.Thread(target=lambda: watched.extend(watch_all(via_b, workflow_id)))
        reader.start()
        time.sleep(0.5)
        for i in range(20):
            assert tick(via_a, workflow_id, f"t{i}")
        via_a.signal(workflow_id, "close", {})
        reader.join(60)
        assert not reader.is_alive()
    assert watched[0].type == CURRENT
    assert_dense(watched, watched[0].revision, 22)


def test_stream_survives_a_server_restart_by_resuming_after_the_last_revision(
    database_url: str, tmp_path: Path
) -> None:
    defs = definitions_dir(tmp_path / "defs")
    port = stable_port()
    target = f"127.0.0.1:{port}"
    listen = ["--listen", target]
    workflow_id = uid("tally")
    received: list[int] = []
    reconnects = 0

    def follow() -> None:
        # What a client does: on UNAVAILABLE, reconnect with after_revision = last seen.
        nonlocal reconnects
        deadline = time.monotonic() + 60
        channel = grpc.insecure_channel(target)
        stub = pb_grpc.WorkflowServiceStub(channel)
        while time.monotonic() < deadline:
            request = pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}")
            request.after_revision = received[-1] if received else 0
            try:
                for message in stub.WatchWorkflow(request, timeout=30):
                    received.append(message.revision)
                channel.close()
                return
            except grpc.RpcError as err:
                assert err.code() is grpc.StatusCode.UNAVAILABLE, err
                reconnects += 1
                time.sleep(0.2)
        channel.close()

    with (
        running_server(database_url, defs, cwd=tmp_path, extra_args=listen) as server,
        Client(server.target) as client,
    ):
        client.start("tally", workflow_id=workflow_id)
        reader = threading.Thread(target=follow)
        reader.start()
        for i in range(3):
            tick(client, workflow_id, f"a{i}")
        deadline = time.monotonic() + 10
        while len(received) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    # The first server is gone, the stream with it; a new process takes over the port.
    with (
        running_server(database_url, defs, cwd=tmp_path, extra_args=listen) as restarted,
        Client(restarted.target) as client,
    ):
        # Channels to one target share a connection that is still backing off from the
        # refused reconnects while no server listened: wait for it to come up.
        grpc.channel_ready_future(client.channel).result(timeout=15)
        for i in range(2):
            tick(client, workflow_id, f"b{i}")
        client.signal(workflow_id, "close", {})
        reader.join(60)
    assert not reader.is_alive()
    assert reconnects >= 1
    assert received == [1, 2, 3, 4, 5, 6, 7]


def test_drain_ends_watch_streams_with_unavailable(server: ServerProcess) -> None:
    with Client(server.target) as client:
        workflow_id = uid("tally")
        client.start("tally", workflow_id=workflow_id)
        outcome: list[object] = []

        def read() -> None:
            try:
                outcome.extend(watch_all(client, workflow_id))
            except grpc.RpcError as err:
                outcome.append(err.code())

        reader = threading.Thread(target=read)
        reader.start()
        time.sleep(0.3)
        server.signal()
        reader.join(30)
        assert server.wait(30) == 0
    assert outcome[-1] == grpc.StatusCode.UNAVAILABLE
