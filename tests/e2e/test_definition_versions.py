"""Definition versions across deploys, on PostgreSQL and SQLite: instances stay pinned to
the version they started on, every stored version stays runnable, and a (name, version)
whose content changed is refused at start, naming both sources."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from tests.support.api import COMPLETED, WAITING, Client, context_of, expect_error, uid
from tests.support.databases import PostgresDatabases
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


@dataclass
class _RollingDeploy:
    old: Client  # started first, with v1 only
    new: Client  # started later, with v1 and v2


@pytest.fixture(scope="module")
def rolling_deploy(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[_RollingDeploy]:
    """Two replicas on one PostgreSQL database in the middle of a rolling deploy: the old
    one keeps running while the new one records version 2."""
    root = tmp_path_factory.mktemp("rolling")
    url = postgres_databases.create()
    old_dir = definitions_dir(
        root / "old",
        examples=False,
        test_definitions=False,
        extra={"v.yaml": V1, "listed.yaml": LISTED_V1},
    )
    new_dir = definitions_dir(
        root / "new",
        examples=False,
        test_definitions=False,
        extra={
            "v1.yaml": V1,
            "v2.yaml": V2,
            "listed-1.yaml": LISTED_V1,
            "listed-2.yaml": LISTED_V1.replace("version: 1", "version: 2"),
        },
    )
    with (
        running_server(url, old_dir, cwd=root) as old_server,
        Client(old_server.target) as old,
    ):
        assert old.definition("definitions/versioned").definition.version == 1
        with running_server(url, new_dir, cwd=root) as new_server, Client(new_server.target) as new:
            yield _RollingDeploy(old, new)
    postgres_databases.drop_soon(url)


LISTED_V1 = V1.replace("name: versioned", "name: listed")


def test_a_replica_runs_versions_another_replica_recorded(rolling_deploy: _RollingDeploy) -> None:
    old, new = rolling_deploy.old, rolling_deploy.new
    # An instance the new replica started on v2 resumes through the old replica, by v2's rules.
    wid = new.start("versioned").workflow.workflow_id
    assert new.get(wid).version == 2
    done = old.resume(wid).workflow
    assert (done.version, done.state) == (2, "done_v2")
    assert context_of(done)["path"] == ["v2:parked", "v2:checked", "v2:done"]
    # The old replica starts v2 on request, from the store.
    assert old.start("versioned", version=2).workflow.version == 2
    v2 = old.definition("definitions/versioned/versions/2").definition
    assert v2.source == V2


def test_every_replica_lists_every_recorded_version(rolling_deploy: _RollingDeploy) -> None:
    listed = [d.name for d in rolling_deploy.old.definitions("listed").definitions]
    assert listed == ["definitions/listed/versions/1", "definitions/listed/versions/2"]


def test_a_refused_start_logs_every_problem_of_every_file(
    database_url: str, tmp_path: Path
) -> None:
    broken = definitions_dir(
        tmp_path / "broken",
        examples=False,
        test_definitions=False,
        extra={
            "a.yaml": V1.replace("on: go", "on: resume").replace("version: 1", "verison: 1"),
            "b.yaml": V2 + "  - {from: checked, to: nowhere\n",
            "c.yaml": V2.replace("name: versioned", "name: fine"),
        },
    )
    ended = run_server_to_exit(database_url, broken, cwd=tmp_path)
    assert ended.returncode == 2, ended.stdout
    a, b = broken / "a.yaml", broken / "b.yaml"
    for line in (
        "statewrightd cannot start: 3 error(s) in the definitions in",
        f"{a}: error: verison: unknown key 'verison'; did you mean 'version'?",
        f"{a}: error: transitions[0].on: 'resume' is reserved",
        f"{b}:19:5: error: <document>: not valid YAML: expected ',' or '}}'",
        "      - {from: checked, to: nowhere",
    ):
        assert line in ended.stdout, ended.stdout
    assert "version is required" not in ended.stdout  # the misspelt key says it all
    assert str(broken / "c.yaml") not in ended.stdout
    assert "serving on" not in ended.stdout


def test_several_processes_report_the_problems_once(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    # Each server process would refuse the same files: the supervisor checks them first.
    url = postgres_databases.create()
    broken = definitions_dir(
        tmp_path / "broken",
        examples=False,
        test_definitions=False,
        extra={"a.yaml": V1.replace("version: 1", "verison: 1")},
    )
    try:
        ended = run_server_to_exit(url, broken, cwd=tmp_path, processes=2)
    finally:
        postgres_databases.drop_soon(url)
    assert ended.returncode == 2, ended.stdout
    problem = f"{broken / 'a.yaml'}: error: verison: unknown key 'verison'; did you mean 'version'?"
    assert ended.stdout.count(problem) == 1, ended.stdout
    assert ended.stdout.count("statewrightd cannot start: 1 error(s) in the definitions") == 1
    assert "server process 0 started" not in ended.stdout  # refused before any process
