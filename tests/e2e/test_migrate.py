"""MigrateWorkflow over real gRPC: waiting instances of version 1 move to version 2 (a
renamed wait state, new fields, one dropped). The dry run lists exactly what changes and
saves nothing; the migration applies it as one step in history; the instances resume in
the new state; a plan naming a missing state is refused with its path, changing nothing.

STATEWRIGHT_MIGRATE_E2E_COUNT sets how many instances move (default 100)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import grpc
import pytest
from statewright.v1 import workflow_service_pb2 as wpb

from tests.support.api import COMPLETED, WAITING, Client, context_of, expect_error, uid
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

COUNT = int(os.environ.get("STATEWRIGHT_MIGRATE_E2E_COUNT", "100"))

V1 = """
name: ticket
version: 1
context:
  amount: {type: int, default: 0}
  note:   {type: string, default: ""}
states:
  review:
    wait: true
  done: {}
transitions:
  - {from: review, on: approve, to: done}
  - {from: review, after: 1h, to: done}
"""

V2 = """
name: ticket
version: 2
context:
  amount:   {type: int, default: 0}
  priority: {type: int, default: 3}
  tier:     {type: string, default: ""}
states:
  approval:
    wait: true
  done: {}
transitions:
  - {from: approval, on: approve, to: done}
  - {from: approval, after: 2h, to: done}
"""


@pytest.fixture(scope="module")
def server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("migrate")
    definitions = definitions_dir(
        root / "definitions",
        examples=False,
        test_definitions=False,
        extra={"ticket-v1.yaml": V1, "ticket-v2.yaml": V2},
    )
    with running_server(module_database_url, definitions, cwd=root) as process:
        yield process
    assert "Traceback" not in process.log(), process.log()


@pytest.fixture
def client(server: ServerProcess) -> Iterator[Client]:
    with Client(server.target) as c:
        yield c


def _request(wid: str, **fields: object) -> wpb.MigrateWorkflowRequest:
    return wpb.MigrateWorkflowRequest(
        name=f"workflows/{wid}",
        to_version=2,
        state_map={"review": "approval"},
        set={"tier": "context.amount > 5 ? 'big' : 'small'"},
        reason="review renamed approval",
        **fields,  # type: ignore[arg-type]
    )


def test_waiting_instances_migrate_to_a_renamed_wait_state(client: Client) -> None:
    ids = [uid("ticket") for _ in range(COUNT)]
    for i, wid in enumerate(ids):
        client.start("ticket", workflow_id=wid, version=1, input={"amount": i, "note": "n"})

    for i, wid in enumerate(ids):
        dry = client.stub.MigrateWorkflow(_request(wid, dry_run=True), timeout=10)
        plan = dry.plan
        assert dry.dry_run and (plan.from_version, plan.to_version) == (1, 2)
        assert (plan.state_from, plan.state_to) == ("review", "approval")
        assert list(plan.defaulted_fields) == ["priority"]
        assert list(plan.set_fields) == ["tier"]
        assert list(plan.removed_fields) == ["note"]
        assert plan.timers_disarmed and plan.task_fate == wpb.MIGRATION_TASK_FATE_NONE
        changes = {
            c.field: (c.HasField("before"), c.HasField("after")) for c in dry.context_changes
        }
        assert changes == {"note": (True, False), "priority": (False, True), "tier": (False, True)}
        workflow = dry.workflow
        assert (workflow.version, workflow.state, workflow.status) == (2, "approval", WAITING)
        assert [t.after for t in workflow.timers] == ["2h"]
        tier = "big" if i > 5 else "small"
        assert context_of(workflow) == {"amount": i, "priority": 3, "tier": tier}
        stored = client.get(wid)
        assert (stored.version, stored.state, stored.revision) == (1, "review", 1), "dry run"

        done = client.stub.MigrateWorkflow(_request(wid, request_id=f"m-{wid}"), timeout=10)
        assert not done.dry_run and done.plan == plan
        assert list(done.context_changes) == list(dry.context_changes)
        moved = done.workflow
        assert (moved.version, moved.state, moved.status, moved.revision) == (
            2,
            "approval",
            WAITING,
            2,
        )
        assert context_of(moved) == context_of(workflow)
        assert [t.after for t in moved.timers] == ["2h"]

    # The same request id again: the original answer, no second step.
    again = client.stub.MigrateWorkflow(_request(ids[0], request_id=f"m-{ids[0]}"), timeout=10)
    assert again.workflow.revision == 2 and again.plan.state_to == "approval"

    for wid in ids:
        resumed = client.resume(wid, "approve").workflow
        assert (resumed.status, resumed.state, resumed.version) == (COMPLETED, "done", 2)

    stream = client.stub.WatchWorkflow(
        wpb.WatchWorkflowRequest(name=f"workflows/{ids[-1]}", after_revision=0), timeout=10
    )
    steps = []
    for message in stream:
        steps.append(message)
        if message.revision >= 3:
            break
    stream.cancel()
    assert [s.event for s in steps] == ["", "migrate", "approve"]
    migrated = steps[1]
    assert migrated.actor == "anonymous" and migrated.workflow.state == "approval"
    taken = dict(migrated.input)
    assert taken["reason"] == "review renamed approval"
    assert (taken["from_version"], taken["to_version"]) == (1, 2)


def test_a_plan_with_a_missing_state_is_refused_with_its_path(client: Client) -> None:
    wid = uid("ticket")
    client.start("ticket", workflow_id=wid, version=1)
    bad = wpb.MigrateWorkflowRequest(
        name=f"workflows/{wid}",
        to_version=2,
        state_map={"review": "aproval"},
        set={"priorty": "1"},
    )
    for dry_run in (True, False):
        bad.dry_run = dry_run
        info = expect_error(
            lambda: client.stub.MigrateWorkflow(bad, timeout=10),
            grpc.StatusCode.FAILED_PRECONDITION,
            "MIGRATION_INVALID",
        )
        assert info.metadata["problems"] == "2"
        assert info.metadata["path"] == "state_map[review]"
        assert "did you mean 'approval'?" in info.metadata["problem_1"]
        assert info.metadata["problem_2"].startswith("set[priorty]: ")
    stored = client.get(wid)
    assert (stored.version, stored.state, stored.revision) == (1, "review", 1)
    # Unmapped, the state keeps its name, which version 2 does not declare.
    info = expect_error(
        lambda: client.stub.MigrateWorkflow(
            wpb.MigrateWorkflowRequest(name=f"workflows/{wid}", to_version=2), timeout=10
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "MIGRATION_INVALID",
    )
    assert info.metadata["path"] == "state"
    expect_error(
        lambda: client.stub.MigrateWorkflow(
            wpb.MigrateWorkflowRequest(name=f"workflows/{wid}", to_version=7), timeout=10
        ),
        grpc.StatusCode.NOT_FOUND,
        "DEFINITION_NOT_FOUND",
    )
    assert client.get(wid).revision == 1
