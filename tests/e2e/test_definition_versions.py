"""Definition versions across deploys, on PostgreSQL and SQLite: instances stay pinned to
the version they started on, every stored version stays runnable, and a (name, version)
whose content changed is refused at start, naming both sources."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from tests.support.api import COMPLETED, WAITING, Client, context_of, expect_error, uid
from tests.support.deployment import definitions_dir, run_server_to_exit, running_server

V1 = """\
name: versioned
version: 1
description: First version.
context:
  path: {type: list, reducer: append, default: []}
initial: parked
states:
  parked:
    wait: true
    entry: [{set: {path: "'v1:parked'"}}]
  done_v1:
    entry: [{set: {path: "'v1:done'"}}]
transitions:
  - {from: parked, on: go, to: done_v1}
"""

V2 = """\
name: versioned
version: 2
description: Second version, with a check before the end.
context:
  path:  {type: list, reducer: append, default: []}
  label: {type: string, default: "two"}
initial: parked
states:
  parked:
    wait: true
    entry: [{set: {path: "'v2:parked'"}}]
  checked:
    entry: [{set: {path: "'v2:checked'"}}]
  done_v2:
    entry: [{set: {path: "'v2:done'"}}]
transitions:
  - {from: parked, on: proceed, to: checked}
  - {from: checked, to: done_v2}
"""

V1_CHANGED = V1.replace("'v1:done'", "'v1:finished'")


def test_parked_v1_instances_resume_after_a_deploy_that_ships_only_v2(
    database_url: str, tmp_path: Path
) -> None:
    first = definitions_dir(tmp_path / "deploy-1", test_definitions=False, extra={"v.yaml": V1})
    with running_server(database_url, first, cwd=tmp_path) as server, Client(server.target) as c:
        parked = [
            c.start("versioned", workflow_id=uid("v1")).workflow,
            c.start("versioned", workflow_id=uid("v1"), version=1).workflow,
        ]
        expect_error(
            lambda: c.start("versioned", version=2),
            grpc.StatusCode.NOT_FOUND,
            "DEFINITION_NOT_FOUND",
        )
    for wf in parked:
        assert (wf.version, wf.status, context_of(wf)["path"]) == (1, WAITING, ["v1:parked"])

    second = definitions_dir(tmp_path / "deploy-2", test_definitions=False, extra={"v.yaml": V2})
    with running_server(database_url, second, cwd=tmp_path) as server, Client(server.target) as c:
        # Parked v1 instances run v1's rules: its event name, states and actions.
        assert list(c.get(parked[0].workflow_id).accepted_events) == ["go"]
        for wf in parked:
            resumed = c.resume(wf.workflow_id).workflow
            assert (resumed.version, resumed.state, resumed.status) == (1, "done_v1", COMPLETED)
            assert context_of(resumed) == {"path": ["v1:parked", "v1:done"]}
        # New instances start on the latest version.
        new = c.start("versioned").workflow
        assert (new.version, list(new.accepted_events)) == (2, ["proceed"])
        assert context_of(new) == {"path": ["v2:parked"], "label": "two"}
        done = c.resume(new.workflow_id).workflow
        assert (done.state, done.status) == ("done_v2", COMPLETED)
        assert context_of(done)["path"] == ["v2:parked", "v2:checked", "v2:done"]
        # Every stored version stays runnable on request.
        old = c.start("versioned", version=1).workflow
        assert (old.version, list(old.accepted_events)) == (1, ["go"])
        # Both versions are served, v1 from the store, with its original source.
        latest = c.definition("definitions/versioned").definition
        assert (latest.version, latest.source) == (2, V2)
        v1 = c.definition("definitions/versioned/versions/1").definition
        assert (v1.version, v1.source) == (1, V1)
        assert v1.source_name == str(first / "v.yaml")
        listed = c.definitions("versioned").definitions
        assert [d.name for d in listed] == [
            "definitions/versioned/versions/1",
            "definitions/versioned/versions/2",
        ]
        assert {d.name for d in listed} <= set(c.diagnostics().definitions)


def test_one_version_with_two_contents_in_one_directory_refuses_to_start(
    database_url: str, tmp_path: Path
) -> None:
    both = definitions_dir(
        tmp_path / "both",
        examples=False,
        test_definitions=False,
        extra={"a.yaml": V1, "b.yaml": V1_CHANGED},
    )
    ended = run_server_to_exit(database_url, both, cwd=tmp_path)
    assert ended.returncode != 0, ended.stdout
    assert str(both / "a.yaml") in ended.stdout and str(both / "b.yaml") in ended.stdout
    assert "serving on" not in ended.stdout


@pytest.mark.xfail(
    strict=True,
    reason="bug: DefinitionRegistry.load_directory records each file in the store before "
    "checking the rest, so a refused directory still makes its first file's (name, version) "
    "permanent",
)
def test_a_refused_directory_records_nothing(database_url: str, tmp_path: Path) -> None:
    both = definitions_dir(
        tmp_path / "both",
        examples=False,
        test_definitions=False,
        extra={"a.yaml": V1, "b.yaml": V1_CHANGED},
    )
    assert run_server_to_exit(database_url, both, cwd=tmp_path).returncode != 0
    # The operator removes the stale file and deploys the one they meant.
    fixed = definitions_dir(
        tmp_path / "fixed", test_definitions=False, extra={"b.yaml": V1_CHANGED}
    )
    with running_server(database_url, fixed, cwd=tmp_path) as server, Client(server.target) as c:
        wid = c.start("versioned").workflow.workflow_id
        assert context_of(c.resume(wid).workflow)["path"] == ["v1:parked", "v1:finished"]


def test_changed_content_under_a_recorded_version_refuses_to_start(
    database_url: str, tmp_path: Path
) -> None:
    recorded = definitions_dir(tmp_path / "recorded", test_definitions=False, extra={"v.yaml": V1})
    with running_server(database_url, recorded, cwd=tmp_path) as server, Client(server.target) as c:
        wid = c.start("versioned").workflow.workflow_id

    changed = definitions_dir(
        tmp_path / "changed", test_definitions=False, extra={"v.yaml": V1_CHANGED}
    )
    ended = run_server_to_exit(database_url, changed, cwd=tmp_path)
    assert ended.returncode != 0, ended.stdout
    assert str(recorded / "v.yaml") in ended.stdout, ended.stdout
    assert str(changed / "v.yaml") in ended.stdout, ended.stdout
    assert "serving on" not in ended.stdout

    # The same content from another file is no conflict, and nothing was lost.
    same = definitions_dir(tmp_path / "same", test_definitions=False, extra={"copy.yaml": V1})
    with running_server(database_url, same, cwd=tmp_path) as server, Client(server.target) as c:
        assert context_of(c.resume(wid).workflow)["path"] == ["v1:parked", "v1:done"]
