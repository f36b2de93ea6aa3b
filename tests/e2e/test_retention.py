"""Retention, the request window and DeleteWorkflow over real gRPC, on PostgreSQL and SQLite.

One server per backend runs with a retention of 2 s and a request window of 10 s, so that
the background purge does its work while the tests watch; definitions with a retention
of their own show that it overrides the server's.
"""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from statewright.v1 import workflow_service_pb2 as pb

from tests.e2e.test_metrics import metrics_url, scrape, value
from tests.support.api import (
    CANCELLED,
    COMPLETED,
    WAITING,
    Client,
    context_of,
    error_info,
    expect_error,
    rpc_failure,
    uid,
)
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

RETENTION = "2s"
WINDOW_SECONDS = 10
# Long enough for the purge (about once a second) to have run several times.
PURGE_WAIT = 30.0
NOT_FOUND = grpc.StatusCode.NOT_FOUND
TABLES = ("workflow_instances", "workflow_history", "workflow_timers", "workflow_tasks")

KEPT_FOREVER = """
name: kept-forever
version: 1
retention: forever
states:
  done: {}
"""
KEPT_AN_HOUR = """
name: kept-an-hour
version: 1
retention: 1h
context:
  topic: {type: string, default: ""}
states:
  waiting: {wait: true}
  done: {}
transitions:
  - {from: waiting, on: go, to: done}
"""
CHECK = """
name: short-check
version: 1
context:
  ok: {type: bool, default: false}
states:
  review: {wait: true}
  done: {}
transitions:
  - {from: review, on: reviewed, to: done}
"""
CHECKED = """
name: checked
version: 1
retention: forever
context:
  check: {type: map, default: {}}
states:
  checking:
    workflow: {definition: short-check, apply: {check: "result.context"}}
  waiting: {wait: true}
  done: {}
transitions:
  - {from: checking, to: waiting}
  - {from: waiting, on: go, to: done}
"""


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("retention")
    definitions = definitions_dir(
        root / "definitions",
        extra={
            "kept-forever.yaml": KEPT_FOREVER,
            "kept-an-hour.yaml": KEPT_AN_HOUR,
            "short-check.yaml": CHECK,
            "checked.yaml": CHECKED,
        },
    )
    args = [
        "--retention",
        RETENTION,
        "--request-window",
        f"{WINDOW_SECONDS}s",
        "--metrics-listen",
        "127.0.0.1:0",
    ]
    with running_server(module_database_url, definitions, cwd=root, extra_args=args) as served:
        yield served
    assert "Traceback" not in served.log(), served.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def rows_of(database_url: str, workflow_id: str) -> dict[str, int]:
    """How many rows each table holds for one instance, read straight from the database."""
    out: dict[str, int] = {}
    for table in (*TABLES, "workflow_requests"):
        sql = f"SELECT count(*) FROM {table} WHERE workflow_id = "
        if database_url.startswith("sqlite:///"):
            path = database_url.removeprefix("sqlite:///")
            with contextlib.closing(sqlite3.connect(path, timeout=10)) as conn:
                out[table] = conn.execute(sql + "?", (workflow_id,)).fetchone()[0]
        else:
            with psycopg.connect(database_url, connect_timeout=10) as pg:
                row = pg.execute((sql + "%s").encode(), (workflow_id,)).fetchone()
                out[table] = int(row[0]) if row else 0
    return out


def gone(client: Client, workflow_id: str) -> bool:
    try:
        client.get(workflow_id)
    except grpc.RpcError as err:
        assert err.code() == NOT_FOUND, err
        return True
    return False


def finish_mail(client: Client, workflow_id: str, request_id: str = "") -> Any:
    client.start("mail-approval", workflow_id=workflow_id, request_id=request_id)
    return client.resume(workflow_id, "approve").workflow


def delete(client: Client, workflow_id: str, **fields: Any) -> pb.DeleteWorkflowResponse:
    request = pb.DeleteWorkflowRequest(name=f"workflows/{workflow_id}", **fields)
    return client.stub.DeleteWorkflow(request, timeout=client.timeout)


# -- retention -------------------------------------------------------------------------


def test_a_finished_instance_expires_with_its_history(
    client: Client, module_database_url: str
) -> None:
    wid = uid("expire")
    done = finish_mail(client, wid, request_id=uid("rq"))
    assert done.status == COMPLETED
    due = done.expire_time.ToDatetime() - done.update_time.ToDatetime()
    assert due == timedelta(seconds=2)
    assert rows_of(module_database_url, wid)["workflow_history"] == 2

    assert wait_until(lambda: gone(client, wid), PURGE_WAIT)
    info = expect_error(lambda: client.get(wid), NOT_FOUND, "WORKFLOW_EXPIRED")
    assert info.metadata["workflow_id"] == wid
    assert info.metadata["expire_time"] and info.metadata["removed_time"]
    assert rows_of(module_database_url, wid) == dict.fromkeys((*TABLES, "workflow_requests"), 0)
    assert wid not in {w.workflow_id for w in client.list_all(definition="mail-approval")}
    # A step on it, and a watch of it, say the same.
    expect_error(lambda: client.resume(wid, "approve"), NOT_FOUND, "WORKFLOW_EXPIRED")
    watch = pb.WatchWorkflowRequest(name=f"workflows/{wid}", after_revision=0)
    code, found = rpc_failure(lambda: list(client.stub.WatchWorkflow(watch, timeout=30)))
    assert (code, found.reason) == (NOT_FOUND, "WORKFLOW_EXPIRED")


def test_a_definitions_retention_overrides_the_servers(client: Client) -> None:
    forever = client.start("kept-forever").workflow
    assert forever.status == COMPLETED and not forever.HasField("expire_time")
    hour = client.start("kept-an-hour").workflow
    hour = client.resume(hour.workflow_id, "go").workflow
    assert hour.expire_time.ToDatetime() - hour.update_time.ToDatetime() == timedelta(hours=1)
    default = finish_mail(client, uid("default"))
    assert wait_until(lambda: gone(client, default.workflow_id), PURGE_WAIT)
    assert client.get(forever.workflow_id).status == COMPLETED
    assert client.get(hour.workflow_id).expire_time == hour.expire_time


def test_a_child_goes_once_its_parent_has_taken_its_end(client: Client) -> None:
    parent = uid("checked")
    client.start("checked", workflow_id=parent)
    child = f"{parent}.checking.1"
    assert wait_until(lambda: not gone(client, child), PURGE_WAIT), "the child did not start"
    client.resume(child, "reviewed", input={"ok": True})
    assert wait_until(lambda: client.get(parent).state == "waiting", PURGE_WAIT)
    assert context_of(client.get(parent))["check"] == {"ok": True}
    # Taken by its parent, the child is released to its retention (2 s) and removed.
    assert wait_until(lambda: gone(client, child), PURGE_WAIT)
    expect_error(lambda: client.get(child), NOT_FOUND, "WORKFLOW_EXPIRED")


def test_live_instances_are_never_removed(client: Client) -> None:
    waiting = client.start("mail-approval").workflow
    assert waiting.status == WAITING and not waiting.HasField("expire_time")
    marker = finish_mail(client, uid("marker"))
    assert wait_until(lambda: gone(client, marker.workflow_id), PURGE_WAIT)
    assert client.get(waiting.workflow_id).revision == waiting.revision


def test_the_purge_is_visible_in_diagnostics_and_metrics(
    client: Client, server: ServerProcess
) -> None:
    done = finish_mail(client, uid("seen"))
    assert wait_until(lambda: gone(client, done.workflow_id), PURGE_WAIT)
    retention = client.diagnostics().retention
    assert retention.retention.ToTimedelta() == timedelta(seconds=2)
    assert retention.request_window.ToTimedelta() == timedelta(seconds=WINDOW_SECONDS)
    assert retention.instances_purged >= 1 and retention.history_purged >= 2
    assert retention.HasField("last_run_time") and retention.HasField("counted_time")
    samples = scrape(metrics_url(server))
    purged = value(samples, "statewright_retention_purged_rows_total", table="workflow_history")
    assert purged >= 2
    assert value(samples, "statewright_retention_last_run_timestamp_seconds") > 0
    assert value(samples, "statewright_retention_overdue", kind="instance") >= 0
    assert value(samples, "statewright_retention_oldest_overdue_seconds", kind="request") >= 0


# -- the request window ----------------------------------------------------------------


def test_a_retry_replays_inside_the_request_window_and_not_after(client: Client) -> None:
    wid, rid = uid("window"), uid("rq")
    first = client.start("kept-an-hour", workflow_id=wid, request_id=rid)
    again = client.start("kept-an-hour", workflow_id=wid, request_id=rid)
    assert again == first and again.created

    def answered_as_a_new_request() -> bool:
        try:
            replayed = client.start("kept-an-hour", workflow_id=wid, request_id=rid)
        except grpc.RpcError as err:
            # Out of the window the request runs again, and the id it starts is taken.
            assert error_info(err).reason == "WORKFLOW_ALREADY_EXISTS", err
            return True
        assert replayed == first  # still inside the window: the original answer
        return False

    assert wait_until(answered_as_a_new_request, WINDOW_SECONDS + PURGE_WAIT, interval=0.25)
    assert client.get(wid).revision == 1


# -- DeleteWorkflow --------------------------------------------------------------------


def test_delete_removes_a_finished_instance_at_once_and_leaves_no_trace(
    client: Client, module_database_url: str
) -> None:
    done = client.start("kept-an-hour").workflow
    done = client.resume(done.workflow_id, "go").workflow
    answer = delete(client, done.workflow_id, etag=done.etag)
    assert answer.workflow == done and not answer.cancelled
    assert rows_of(module_database_url, done.workflow_id) == dict.fromkeys(
        (*TABLES, "workflow_requests"), 0
    )
    expect_error(lambda: client.get(done.workflow_id), NOT_FOUND, "WORKFLOW_NOT_FOUND")
    expect_error(lambda: delete(client, done.workflow_id), NOT_FOUND, "WORKFLOW_NOT_FOUND")
    assert delete(client, done.workflow_id, allow_missing=True) == pb.DeleteWorkflowResponse()


def test_delete_refuses_a_live_instance_unless_forced(client: Client) -> None:
    live = client.start("mail-approval").workflow
    info = expect_error(
        lambda: delete(client, live.workflow_id),
        grpc.StatusCode.FAILED_PRECONDITION,
        "WORKFLOW_NOT_FINISHED",
    )
    assert info.metadata["status"] == "WAITING"
    assert client.get(live.workflow_id) == live


def test_a_forced_delete_cancels_first_and_its_watcher_sees_the_end(client: Client) -> None:
    live = client.start("mail-approval").workflow
    seen: list[pb.WatchWorkflowResponse] = []
    outcome: list[grpc.StatusCode] = []
    subscribed = threading.Event()

    def watch() -> None:
        request = pb.WatchWorkflowRequest(name=f"workflows/{live.workflow_id}")
        try:
            for message in client.stub.WatchWorkflow(request, timeout=60):
                seen.append(message)
                subscribed.set()
            outcome.append(grpc.StatusCode.OK)
        except grpc.RpcError as err:
            outcome.append(err.code())

    watcher = threading.Thread(target=watch)
    watcher.start()
    assert subscribed.wait(30)
    answer = delete(client, live.workflow_id, force=True, expected_revision=live.revision)
    watcher.join(60)
    assert not watcher.is_alive()
    assert answer.cancelled and answer.workflow.status == CANCELLED
    assert answer.workflow.revision == live.revision + 1
    assert outcome == [grpc.StatusCode.OK]
    assert [m.workflow.status for m in seen] == [WAITING, CANCELLED]
    expect_error(lambda: client.get(live.workflow_id), NOT_FOUND, "WORKFLOW_NOT_FOUND")


def test_a_forced_delete_takes_the_open_task_and_the_timers_with_it(
    client: Client, module_database_url: str
) -> None:
    tasked = client.start("task-flow", input={"route": "apply"}).workflow
    timed = client.start("ticket-escalation", input={"respond_within": "1h"}).workflow
    for wf in (tasked, timed):
        before = rows_of(module_database_url, wf.workflow_id)
        assert before["workflow_tasks"] + before["workflow_timers"] >= 1, before
        assert delete(client, wf.workflow_id, force=True).cancelled
        assert rows_of(module_database_url, wf.workflow_id) == dict.fromkeys(
            (*TABLES, "workflow_requests"), 0
        )


def test_a_stale_or_foreign_etag_is_refused(client: Client) -> None:
    wf = client.start("kept-an-hour").workflow
    moved = client.resume(wf.workflow_id, "go").workflow
    info = expect_error(
        lambda: delete(client, wf.workflow_id, etag=wf.etag),
        grpc.StatusCode.ABORTED,
        "REVISION_MISMATCH",
    )
    assert (info.metadata["expected_revision"], info.metadata["actual_revision"]) == ("1", "2")
    other = client.start("kept-forever").workflow
    for etag in (other.etag, "W/nonsense", '"x"'):
        expect_error(
            functools.partial(delete, client, wf.workflow_id, etag=etag),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_FIELD",
        )
    expect_error(
        lambda: delete(client, wf.workflow_id, etag=moved.etag, expected_revision=1),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FIELD",
    )
    assert client.get(wf.workflow_id) == moved
    assert delete(client, wf.workflow_id, etag=moved.etag, expected_revision=2).workflow == moved


# -- replicas --------------------------------------------------------------------------


def test_two_replicas_purge_together_without_double_work(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    url = postgres_databases.create()
    try:
        definitions = definitions_dir(tmp_path / "definitions", test_definitions=False)
        args = ["--retention", "1s"]
        with (
            running_server(url, definitions, cwd=tmp_path, extra_args=args) as a,
            running_server(url, definitions, cwd=tmp_path, extra_args=args) as b,
            Client(a.target) as on_a,
            Client(b.target) as on_b,
        ):
            total = 200
            ids = [uid("pair") for _ in range(total)]
            for i, wid in enumerate(ids):
                started = (on_a if i % 2 else on_b).start("order-pricing", workflow_id=wid)
                assert started.workflow.status == COMPLETED

            def purged() -> int:
                return sum(c.diagnostics().retention.instances_purged for c in (on_a, on_b))

            assert wait_until(lambda: purged() >= total, 60, interval=0.5)
            assert purged() == total  # each instance removed once, by one of them
            for wid in ids[:10]:
                assert gone(on_a, wid) and gone(on_b, wid)
        for replica in (a, b):
            assert "Traceback" not in replica.log(), replica.log()
            assert "retention purge failed" not in replica.log(), replica.log()
    finally:
        postgres_databases.drop_soon(url)


def test_an_id_never_used_is_not_found_without_an_expiry(client: Client) -> None:
    info = expect_error(lambda: client.get(uid("never")), NOT_FOUND, "WORKFLOW_NOT_FOUND")
    assert "expire_time" not in info.metadata
