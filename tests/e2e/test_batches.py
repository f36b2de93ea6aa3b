"""Batch operations over real gRPC on PostgreSQL: a batch's operation is each instance's
single RPC, applied once however the replicas that work on it die; its progress, failures,
cancel and refusals as the API documents them; the HTTP door to the same code.

The big one, THE acceptance test: STATEWRIGHT_TEST_BATCH_SIZE (5,000 by default) FAILED
instances retried by one batch on two replicas, one of which is killed (SIGKILL) halfway:
every instance has exactly one retry step in its history, and the batch counts each once.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from statewright.v1 import batch_service_pb2 as pb
from statewright.v1 import batch_service_pb2_grpc as pb_grpc

from tests.support.api import FAILED, WAITING, Client, expect_error, uid
from tests.support.console import Http, console_url
from tests.support.databases import PostgresDatabases, read_all_history
from tests.support.deployment import api_keys_file, definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

BATCH_SIZE = int(os.environ.get("STATEWRIGHT_TEST_BATCH_SIZE", "5000"))

BATCHY = """
name: batchy
version: 1
initial: intake
context:
  tag: {type: string, default: ""}
  divisor: {type: int, default: 1}
search:
  tag: {type: keyword, value: "context.tag"}
states:
  intake:
    wait: true
  compute: {}
  done: {}
transitions:
  - {from: intake, on: go, to: compute}
  - {from: compute, to: done, guard: "100 / context.divisor > 0"}
"""


class Batches:
    """The BatchService, with an API key when the server asks for one."""

    def __init__(self, channel: grpc.Channel, key: str | None = None) -> None:
        self.stub = pb_grpc.BatchServiceStub(channel)
        self.metadata = () if key is None else (("authorization", f"Bearer {key}"),)

    def start(self, **fields: Any) -> pb.StartBatchOperationResponse:
        operation = fields.pop("operation", "pause")
        arguments = fields.pop("arguments", {})
        request = pb.StartBatchOperationRequest(**fields)
        getattr(request, operation).SetInParent()
        for name, value in arguments.items():
            field = getattr(request, operation)
            if isinstance(value, dict):
                getattr(field, name).update(value)
            else:
                setattr(field, name, value)
        answer: pb.StartBatchOperationResponse = self.stub.StartBatchOperation(
            request, timeout=30, metadata=self.metadata
        )
        return answer

    def get(self, name: str, **fields: Any) -> pb.GetBatchOperationResponse:
        request = pb.GetBatchOperationRequest(name=name, **fields)
        answer: pb.GetBatchOperationResponse = self.stub.GetBatchOperation(
            request, timeout=15, metadata=self.metadata
        )
        return answer

    def cancel(self, name: str, reason: str) -> pb.BatchOperation:
        request = pb.CancelBatchOperationRequest(name=name, reason=reason)
        return self.stub.CancelBatchOperation(request, timeout=15, metadata=self.metadata).batch

    def list(self, **fields: Any) -> pb.ListBatchOperationsResponse:
        request = pb.ListBatchOperationsRequest(**fields)
        answer: pb.ListBatchOperationsResponse = self.stub.ListBatchOperations(
            request, timeout=15, metadata=self.metadata
        )
        return answer

    def finished(self, name: str, timeout: float = 60.0) -> pb.BatchOperation:
        """The batch once it is no longer RUNNING."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            batch = self.get(name).batch
            if batch.state != pb.BATCH_STATE_RUNNING:
                return batch
            time.sleep(0.1)
        raise AssertionError(f"{name} still running after {timeout}s: {self.get(name)}")


# -- one server, for everything but the replicas and the roles --------------------------


@dataclass
class Setup:
    server: ServerProcess
    client: Client
    batches: Batches


@pytest.fixture(scope="module")
def setup(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("batches")
    url = postgres_databases.create()
    definitions = definitions_dir(
        root / "definitions", examples=False, extra={"batchy.yaml": BATCHY}
    )
    args = ["--http-listen", "127.0.0.1:0"]
    with (
        running_server(url, definitions, cwd=root, extra_args=args) as server,
        Client(server.target) as client,
    ):
        yield Setup(server, client, Batches(client.channel))
    assert "Traceback" not in server.log(), server.log()
    postgres_databases.drop_soon(url)


def _instances(client: Client, tag: str, count: int, *, failed: int = 0) -> list[str]:
    """``count`` batchy instances tagged ``tag``, WAITING in intake; the first ``failed``
    of them then FAILED (their `go` divides by zero)."""
    ids = [f"{tag}-{i:03d}" for i in range(count)]
    for i, wid in enumerate(ids):
        divisor = 0 if i < failed else 1
        client.start("batchy", workflow_id=wid, input={"tag": tag, "divisor": divisor})
        if i < failed:
            assert client.resume(wid, "go").workflow.status == FAILED
    return ids


def _filter(tag: str) -> str:
    return f'search.tag = "{tag}"'


def test_a_dry_run_counts_and_samples_and_saves_nothing(setup: Setup) -> None:
    tag = uid("dry")
    ids = _instances(setup.client, tag, 25)
    answer = setup.batches.start(
        definition="batchy", filter=_filter(tag), reason="look first", dry_run=True
    )
    batch = answer.batch
    assert (batch.name, batch.state, batch.matched, batch.done) == (
        "",
        pb.BATCH_STATE_UNSPECIFIED,
        25,
        0,
    )
    assert (batch.definition, batch.reason, batch.rate) == ("batchy", "look first", 50.0)
    assert list(answer.sample) == [f"workflows/{w}" for w in sorted(ids)[:20]]
    listed = setup.batches.list(page_size=1000).batches
    assert all(b.reason != "look first" for b in listed)
    assert all(not setup.client.get(w).paused for w in ids)


def test_a_batch_pauses_then_another_unpauses(setup: Setup) -> None:
    tag = uid("pause")
    ids = _instances(setup.client, tag, 12)
    started = setup.batches.start(
        definition="batchy", filter=_filter(tag), reason="maintenance", rate=200
    ).batch
    assert started.name.startswith("batches/") and started.matched == 12
    assert started.state == pb.BATCH_STATE_RUNNING and started.actor == "anonymous"
    paused = setup.batches.finished(started.name)
    assert (paused.state, paused.done, paused.failed) == (pb.BATCH_STATE_COMPLETED, 12, 0)
    assert paused.HasField("end_time")
    for wid in ids:
        workflow = setup.client.get(wid)
        assert workflow.paused and workflow.pause.reason == "maintenance", workflow
    unpaused = setup.batches.start(
        definition="batchy", filter=_filter(tag), reason="done", operation="unpause"
    ).batch
    assert setup.batches.finished(unpaused.name).done == 12
    assert all(not setup.client.get(w).paused for w in ids)
    # Each instance's step carries the batch's request id: one pause, one unpause each.
    history = setup.client.steps(ids[0], setup.client.get(ids[0]).revision)
    assert [s.event for s in history] == ["", "pause", "unpause"]


def test_a_running_batch_is_cancelled_and_starts_nothing_after(setup: Setup) -> None:
    tag = uid("stop")
    ids = _instances(setup.client, tag, 30)
    started = setup.batches.start(
        definition="batchy", filter=_filter(tag), reason="slowly", rate=4
    ).batch
    assert wait_until(lambda: setup.batches.get(started.name).batch.done >= 2, 30)
    cancelled = setup.batches.cancel(started.name, "enough")
    assert cancelled.state == pb.BATCH_STATE_CANCELLED
    assert cancelled.cancel_reason == "anonymous: enough" and cancelled.HasField("end_time")
    time.sleep(1.0)  # what an item in flight at the answer needs to end
    after = setup.batches.get(started.name).batch
    paused = [w for w in ids if setup.client.get(w).paused]
    # Each paused instance is counted, and none was started on after the answer.
    assert after.done == len(paused) < 30 and after.failed == 0
    assert after.state == pb.BATCH_STATE_CANCELLED
    assert setup.batches.cancel(started.name, "again").cancel_reason == "anonymous: enough"
    time.sleep(0.5)
    assert [w for w in ids if setup.client.get(w).paused] == paused


def test_a_reset_to_the_state_each_instance_entered(setup: Setup) -> None:
    tag = uid("reset")
    ids = _instances(setup.client, tag, 4, failed=4)
    started = setup.batches.start(
        definition="batchy",
        filter=_filter(tag),
        reason="back to intake",
        operation="reset",
        arguments={"entered_state": "intake"},
    ).batch
    done = setup.batches.finished(started.name)
    assert (done.done, done.failed, done.reset.entered_state) == (4, 0, "intake")
    for wid in ids:
        workflow = setup.client.get(wid)
        assert (workflow.state, workflow.status, workflow.revision) == ("intake", WAITING, 3)
        (step,) = setup.client.steps(wid, 3)[-1:]
        assert step.event == "reset" and dict(step.input)["to_revision"] == 1


def test_item_failures_are_reported_with_their_codes_paged(setup: Setup) -> None:
    tag = uid("fail")
    ids = _instances(setup.client, tag, 5, failed=2)
    started = setup.batches.start(
        definition="batchy", filter=_filter(tag), reason="retry", operation="retry"
    ).batch
    done = setup.batches.finished(started.name)
    assert (done.matched, done.done, done.failed) == (5, 2, 3)
    first = setup.batches.get(started.name, failures_page_size=2)
    assert len(first.failures) == 2 and first.next_failures_page_token
    rest = setup.batches.get(
        started.name, failures_page_size=2, failures_page_token=first.next_failures_page_token
    )
    failures = [*first.failures, *rest.failures]
    assert not rest.next_failures_page_token
    assert [f.workflow for f in failures] == [f"workflows/{w}" for w in ids[2:]]
    for failure in failures:
        assert (failure.code, failure.reason) == ("FAILED_PRECONDITION", "NOT_FAILED")
        assert "not FAILED" in failure.message and failure.HasField("time")


def test_a_batch_id_answers_the_same_request_and_refuses_another(setup: Setup) -> None:
    tag, batch_id = uid("same"), uid("batch")
    first = setup.batches.start(
        batch_id=batch_id, definition="batchy", filter=_filter(tag), reason="once"
    ).batch
    # It matched nothing: it is complete at once.
    assert (first.name, first.state, first.matched) == (
        f"batches/{batch_id}",
        pb.BATCH_STATE_COMPLETED,
        0,
    )
    again = setup.batches.start(
        batch_id=batch_id, definition="batchy", filter=_filter(tag), reason="once"
    ).batch
    assert again == first
    expect_error(
        lambda: setup.batches.start(
            batch_id=batch_id, definition="batchy", filter=_filter(tag), reason="twice"
        ),
        grpc.StatusCode.ALREADY_EXISTS,
        "BATCH_EXISTS",
    )
    expect_error(
        lambda: setup.batches.cancel(first.name, "too late"),
        grpc.StatusCode.FAILED_PRECONDITION,
        "BATCH_FINISHED",
    )
    expect_error(
        lambda: setup.batches.get("batches/no-such-batch"),
        grpc.StatusCode.NOT_FOUND,
        "BATCH_NOT_FOUND",
    )
    listed = setup.batches.list(state=pb.BATCH_STATE_COMPLETED, page_size=1000).batches
    assert first.name in [b.name for b in listed]
    assert all(b.state == pb.BATCH_STATE_COMPLETED for b in listed)
    times = [b.create_time.ToDatetime() for b in listed]
    assert times == sorted(times, reverse=True)


def test_an_id_prefix_narrows_a_batch_as_it_narrows_a_listing(setup: Setup) -> None:
    tag = uid("prefix")
    ids = _instances(setup.client, tag, 12)
    # Ten of the twelve ids start with this (000 to 009); the filter alone matches all.
    prefix = f"{tag}-00"
    narrowed = [w for w in ids if w.startswith(prefix)]
    assert 0 < len(narrowed) < len(ids)
    fields = {"definition": "batchy", "filter": _filter(tag), "reason": "the first few"}
    dry = setup.batches.start(**fields, id_prefix=prefix, dry_run=True)
    assert dry.batch.matched == len(narrowed) and dry.batch.id_prefix == prefix
    assert list(dry.sample) == [f"workflows/{w}" for w in narrowed]
    batch_id = uid("batch")
    started = setup.batches.start(**fields, id_prefix=prefix, batch_id=batch_id).batch
    done = setup.batches.finished(started.name)
    assert (done.matched, done.done, done.id_prefix) == (len(narrowed), len(narrowed), prefix)
    assert [setup.client.get(w).paused for w in ids] == [w in narrowed for w in ids]
    # The prefix is part of the request: the same id with another prefix, or none, is
    # another batch.
    again = setup.batches.start(**fields, id_prefix=prefix, batch_id=batch_id).batch
    assert again.name == started.name and again.id_prefix == prefix
    for other in ("", f"{tag}-"):
        expect_error(
            functools.partial(setup.batches.start, **fields, id_prefix=other, batch_id=batch_id),
            grpc.StatusCode.ALREADY_EXISTS,
            "BATCH_EXISTS",
        )
    # A prefix takes an id's characters, as ListWorkflows' does.
    expect_error(
        functools.partial(setup.batches.start, **fields, id_prefix="no spaces"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FIELD",
    )


def test_a_start_is_refused_before_it_matches_anything(setup: Setup) -> None:
    for fields, reason in (
        ({"definition": "batchy", "reason": ""}, "FIELD_REQUIRED"),
        ({"definition": "no-such", "reason": "x"}, "DEFINITION_NOT_FOUND"),
        ({"filter": "status = ", "reason": "x"}, "INVALID_FILTER"),
        ({"reason": "x", "rate": 1001}, "INVALID_FIELD"),
    ):
        code = (
            grpc.StatusCode.NOT_FOUND
            if reason == "DEFINITION_NOT_FOUND"
            else grpc.StatusCode.INVALID_ARGUMENT
        )
        expect_error(functools.partial(setup.batches.start, **fields), code, reason)
    expect_error(
        lambda: setup.batches.start(
            definition="batchy", reason="x", operation="migrate", arguments={"to_version": 9}
        ),
        grpc.StatusCode.NOT_FOUND,
        "DEFINITION_NOT_FOUND",
    )


def test_the_http_door_starts_and_reads_batches(setup: Setup) -> None:
    http = Http(console_url(setup.server))
    tag = uid("http")
    ids = _instances(setup.client, tag, 3)
    body = {"definition": "batchy", "filter": _filter(tag), "pause": {}, "reason": "over http"}
    dry = http.post("/api/v1/batches", {**body, "dryRun": True})
    assert dry.status == 200, dry.body
    assert dry.body["batch"]["matched"] == "3" and len(dry.body["sample"]) == 3
    narrowed = http.post("/api/v1/batches", {**body, "dryRun": True, "idPrefix": ids[0]})
    assert narrowed.status == 200, narrowed.body
    assert narrowed.body["sample"] == [f"workflows/{ids[0]}"]
    assert narrowed.body["batch"]["idPrefix"] == ids[0]
    started = http.post("/api/v1/batches", body)
    assert started.status == 200, started.body
    name = started.body["batch"]["name"]
    assert started.body["batch"]["state"] == "BATCH_STATE_RUNNING"
    assert setup.batches.finished(name).done == 3
    read = http.get(f"/api/v1/{name}")
    assert read.status == 200 and read.body["batch"]["state"] == "BATCH_STATE_COMPLETED"
    assert read.body["batch"]["pause"] == {} and read.body["batch"]["done"] == "3"
    listed = http.get("/api/v1/batches", pageSize=1000)
    assert name in [b["name"] for b in listed.body["batches"]]
    refused = http.post(f"/api/v1/{name}:cancel", {"reason": "late"})
    assert refused.error == ("FAILED_PRECONDITION", "BATCH_FINISHED")
    assert all(setup.client.get(w).paused for w in ids)


# -- who may start which batch ----------------------------------------------------------

KEYS = {
    "client": ("sw-batch-client", "{role: client}"),
    "operator": ("sw-batch-operator", "{role: operator}"),
    "mail-operator": ("sw-batch-mail-operator", '{role: operator, definitions: ["mail-*"]}'),
    "admin": ("sw-batch-admin", "{role: admin}"),
}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("batch-roles")
    auth = api_keys_file(root / "auth.yaml", KEYS)
    definitions = definitions_dir(root / "definitions", extra={"batchy.yaml": BATCHY})
    args = ["--auth-config", str(auth)]
    url = f"sqlite:///{root / 'statewright.db'}"
    with running_server(url, definitions, cwd=root, extra_args=args) as server:
        yield server
    assert "Traceback" not in server.log(), server.log()


def test_a_batch_needs_the_role_of_its_operation_within_the_caller_s_scope(
    guarded: ServerProcess,
) -> None:
    channel = guarded.channel()

    def as_(who: str) -> Batches:
        return Batches(channel, KEYS[who][0])

    denied, ok = grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED"
    dry = {"reason": "check", "dry_run": True}
    # cancel and signal are a client's; retry an operator's; delete an admin's.
    assert as_("client").start(operation="cancel", **dry).batch.matched == 0
    expect_error(lambda: as_("client").start(operation="retry", **dry), denied, ok)
    assert as_("operator").start(operation="retry", **dry).batch.matched == 0
    expect_error(lambda: as_("operator").start(operation="delete", **dry), denied, ok)
    assert as_("admin").start(operation="delete", **dry).batch.matched == 0
    # A scoped caller names a definition in its scope, as it lists.
    mail = as_("mail-operator")
    expect_error(lambda: mail.start(operation="retry", **dry), denied, ok)
    expect_error(lambda: mail.start(definition="batchy", operation="retry", **dry), denied, ok)
    assert mail.start(definition="mail-approval", operation="retry", **dry).batch.matched == 0
    # Reading and cancelling batches is an operator's.
    expect_error(lambda: as_("client").list(), denied, ok)
    assert list(as_("operator").list().batches) == []
    channel.close()


# -- THE acceptance test: two replicas, one killed halfway ------------------------------


def _start_failed(target: str, count: int) -> list[str]:
    ids = [f"acc-{i:05d}" for i in range(count)]

    def start(chunk: list[str]) -> None:
        with Client(target) as client:
            for wid in chunk:
                answer = client.start(
                    "fragile", workflow_id=wid, input={"mode": "compute", "divisor": 0}
                )
                assert answer.workflow.status == FAILED, answer

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(start, [ids[i::8] for i in range(8)]))
    return ids


def test_a_batch_retry_survives_a_replica_killed_halfway(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    definitions = definitions_dir(tmp_path / "definitions", examples=False)
    with (
        running_server(url, definitions, cwd=tmp_path) as first,
        running_server(url, definitions, cwd=tmp_path) as second,
    ):
        ids = _start_failed(first.target, BATCH_SIZE)
        on_first, on_second = Batches(first.channel()), Batches(second.channel())
        started = on_first.start(
            definition="fragile",
            filter="status = FAILED",
            reason="the divisor is fixed",
            operation="retry",
            rate=1000,
        ).batch
        assert started.matched == BATCH_SIZE
        halfway = BATCH_SIZE // 3
        assert wait_until(lambda: on_second.get(started.name).batch.done >= halfway, 60)
        first.kill()  # SIGKILL, with items in flight and their ends not yet recorded
        done = on_second.finished(started.name, timeout=120)
        assert (done.state, done.matched, done.done, done.failed) == (
            pb.BATCH_STATE_COMPLETED,
            BATCH_SIZE,
            BATCH_SIZE,
            0,
        )
        assert "Traceback" not in second.log(), second.log()
    history = read_all_history(url)
    retries = {wid: sum(1 for row in history[wid] if row.event == "retry") for wid in ids}
    assert set(retries.values()) == {1}, {w: n for w, n in retries.items() if n != 1}
    postgres_databases.drop_soon(url)
