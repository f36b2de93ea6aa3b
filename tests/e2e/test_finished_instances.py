"""A finished instance, as every read shows it, on PostgreSQL and SQLite: the last state it
was really in and COMPLETED, never the `__finish__` marker (which names only the target of
the transition taken); rows an earlier version saved with the marker read the same way; and
its last transitions stay in its diagnostics after the runtime let go of it."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.definitions import load_definition_file
from statewrightd.domain import Status
from statewrightd.store.backends import open_repository
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save
from tests.support.api import COMPLETED, WAITING, Client, uid
from tests.support.deployment import EXAMPLES, definitions_dir, running_server
from tests.support.server import ServerProcess

FINISH = "__finish__"


def _watch(client: Client, workflow_id: str) -> list[pb.WatchWorkflowResponse]:
    request = pb.WatchWorkflowRequest(name=f"workflows/{workflow_id}", after_revision=0)
    return list(client.stub.WatchWorkflow(request, timeout=60))


def _cli(target: str, *args: str) -> str:
    statewright = Path(sys.executable).parent / "statewright"
    done = subprocess.run(
        [str(statewright), "--target", target, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


def _listed(client: Client, workflow_id: str) -> str:
    (found,) = [
        w for w in client.list_all(definition="mail-approval") if w.workflow_id == workflow_id
    ]
    return str(found.state)


def _every_read_says(client: Client, target: str, workflow_id: str, state: str) -> None:
    got = client.get(workflow_id)
    assert (got.status, got.state) == (COMPLETED, state)
    assert _listed(client, workflow_id) == state
    steps = _watch(client, workflow_id)
    assert [(m.revision, m.workflow.state) for m in steps] == [
        (1, "awaiting_approval"),
        (2, state),
    ]
    assert [t.to_state for t in steps[-1].transitions][-1] == FINISH
    shown = json.loads(_cli(target, "get", f"workflows/{workflow_id}", "-o", "json"))
    assert shown["state"] == state
    history = _cli(target, "history", f"workflows/{workflow_id}", "--format", "text")
    last = history.splitlines()[-1]
    assert last.endswith(f"{state} -> {FINISH} => COMPLETED in {state}"), history


def test_a_finished_instance_shows_the_state_it_finished_from(
    module_server: ServerProcess, client: Client
) -> None:
    started = client.start("mail-approval", input={"topic": "x"}).workflow
    done = client.resume(started.workflow_id, "approve").workflow
    assert (done.status, done.state) == (COMPLETED, "send")
    _every_read_says(client, module_server.target, started.workflow_id, "send")
    # Right after the terminal step the runtime has let the instance go: its last
    # transitions come from its history.
    recent = client.workflow_diagnostics(started.workflow_id).diagnostics.recent_transitions
    assert [(t.from_state, t.to_state, t.event) for t in recent] == [
        ("draft", "awaiting_approval", ""),
        ("awaiting_approval", "send", "approve"),
        ("send", FINISH, ""),
    ]


def _legacy_instance(database_url: str, workflow_id: str) -> None:
    """An instance finished and saved as an earlier version saved it: `__finish__` as its
    state, in its instance row and in its last history row."""
    definition = load_definition_file(EXAMPLES / "mail-approval.yaml")
    context = {name: f.default_value() for name, f in definition.context_fields.items()}
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    waiting = InstanceRecord(
        workflow_id, "mail-approval", definition.version, "awaiting_approval", Status.WAITING,
        context, 1, None,
        t0, t0,
    )  # fmt: skip
    finished = dataclasses.replace(
        waiting, state=FINISH, status=Status.COMPLETED, revision=2, update_time=t0 + timedelta(1)
    )

    def row(
        record: InstanceRecord, event: str | None, moves: list[tuple[str, str]]
    ) -> HistoryRecord:
        taken = [
            {"from": a, "to": b, "event": event if i == 0 else None}
            for i, (a, b) in enumerate(moves)
        ]
        return HistoryRecord(
            workflow_id, record.revision, event, taken, record.state, record.status,
            record.context, None, record.update_time,
        )  # fmt: skip

    repo = open_repository(database_url, migrate=True)
    try:
        repo.create(Create(waiting, row(waiting, None, [("draft", "awaiting_approval")])))
        moves = [("awaiting_approval", "send"), ("send", FINISH)]
        repo.save(Save(finished, 1, row(finished, "approve", moves)))
        assert repo.load(workflow_id).state == FINISH
    finally:
        repo.close()


def test_rows_saved_with_the_marker_read_as_the_state_before_it(
    database_url: str, tmp_path: Path
) -> None:
    workflow_id = uid("legacy")
    _legacy_instance(database_url, workflow_id)
    definitions = definitions_dir(tmp_path / "definitions", test_definitions=False)
    with (
        running_server(database_url, definitions, cwd=tmp_path) as server,
        Client(server.target) as c,
    ):
        _every_read_says(c, server.target, workflow_id, "send")
        # Loaded into the runtime (a signal it refuses), it is the same instance.
        refused = c.signal(workflow_id, "approve")
        assert not refused.accepted and refused.workflow.state == "send"
        assert c.get(workflow_id).status != WAITING
