"""`statewrightd dev` reloads its definitions directory, on PostgreSQL and SQLite: an edit
becomes the next version, running instances stay on theirs, a broken edit is reported and
changes nothing, a new file loads; `serve` on the same store keeps versions as declared."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.api import COMPLETED, WAITING, Client, context_of
from tests.support.deployment import definitions_dir, run_server_to_exit
from tests.support.server import STATEWRIGHTD, ServerProcess, wait_until

# The watcher polls every second; a change shows within a few polls, even on a busy machine.
RELOAD_TIMEOUT = 30.0

DRAFT = """\
name: drafting
version: 1
context:
  path: {type: list, reducer: append, default: []}
states:
  parked:
    wait: true
    entry: [{set: {path: "'parked'"}}]
  done:
    entry: [{set: {path: "'first wording'"}}]
transitions:
  - {from: parked, on: go, to: done}
"""
EDITED = DRAFT.replace("'first wording'", "'second wording'")
BROKEN = EDITED.replace("to: done}", "to: dnoe}").replace("wait: true", "wiat: true")
OTHER = DRAFT.replace("name: drafting", "name: added-later")


@pytest.fixture
def dev_server(database_url: str, tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    directory = definitions_dir(
        tmp_path / "definitions",
        examples=False,
        test_definitions=False,
        extra={"drafting.yaml": DRAFT},
    )
    server = ServerProcess(database_url=database_url, cwd=tmp_path)
    server.args = [
        *STATEWRIGHTD,
        "dev",
        "--listen",
        "127.0.0.1:0",
        "--database",
        database_url,
        "--definitions",
        str(directory),
        "--grace",
        "2",
    ]
    with server:
        yield server, directory
        server.stop(timeout=15)
    assert "Traceback" not in server.log(), server.log()


def _latest(client: Client, name: str) -> int:
    return int(client.definition(f"definitions/{name}").definition.version)


def _logged(server: ServerProcess, text: str) -> bool:
    return any(text in line for line in server.lines)


def test_an_edit_becomes_the_next_version_and_running_instances_keep_theirs(
    dev_server: tuple[ServerProcess, Path],
) -> None:
    server, directory = dev_server
    file = directory / "drafting.yaml"
    with Client(server.target) as c:
        before = c.start("drafting").workflow
        assert (before.version, before.status) == (1, WAITING)

        file.write_text(EDITED, encoding="utf-8")
        assert wait_until(lambda: _latest(c, "drafting") == 2, RELOAD_TIMEOUT), server.log()
        assert _logged(server, f"{file} changed 'drafting' version 1: recorded as version 2")
        latest = c.definition("definitions/drafting").definition
        assert latest.source == EDITED.replace("version: 1", "version: 2")
        assert c.definition("definitions/drafting/versions/1").definition.source == DRAFT

        after = c.start("drafting").workflow
        assert after.version == 2
        old = c.resume(before.workflow_id, "go").workflow
        new = c.resume(after.workflow_id, "go").workflow
        assert (old.version, old.status, context_of(old)["path"]) == (
            1,
            COMPLETED,
            ["parked", "first wording"],
        )
        assert (new.version, new.status, context_of(new)["path"]) == (
            2,
            COMPLETED,
            ["parked", "second wording"],
        )

        # Saved again with only a comment added: nothing new is recorded.
        file.write_text(EDITED + "# a comment\n", encoding="utf-8")
        assert wait_until(lambda: _logged(server, "nothing new"), RELOAD_TIMEOUT), server.log()
        assert _latest(c, "drafting") == 2


def test_a_broken_edit_is_reported_and_the_last_good_version_stays(
    dev_server: tuple[ServerProcess, Path],
) -> None:
    server, directory = dev_server
    file = directory / "drafting.yaml"
    with Client(server.target) as c:
        file.write_text(BROKEN, encoding="utf-8")
        stays = f"dev: {file} has 2 error(s); drafting v1 stays loaded"
        assert wait_until(lambda: _logged(server, stays), RELOAD_TIMEOUT), server.log()
        # Every problem, each as `statewrightd validate` prints it (logged after the summary
        # line, so each is awaited too).
        for problem in (
            f"{file}: error: states.parked.wiat: unknown key 'wiat'",
            f"{file}: error: transitions[0].to: unknown state 'dnoe'; did you mean 'done'?",
        ):
            assert wait_until(lambda p=problem: _logged(server, p), RELOAD_TIMEOUT), server.log()
        assert _latest(c, "drafting") == 1
        assert c.start("drafting").workflow.version == 1

        # Fixed, the edit loads; a new file loads too.
        file.write_text(EDITED, encoding="utf-8")
        (directory / "added.yaml").write_text(OTHER, encoding="utf-8")
        assert wait_until(lambda: _latest(c, "drafting") == 2, RELOAD_TIMEOUT), server.log()

        def added() -> bool:
            return any(d.definition == "added-later" for d in c.definitions().definitions)

        assert wait_until(added, RELOAD_TIMEOUT), server.log()
        loaded = f"dev: loaded added-later v1 from {directory / 'added.yaml'}"
        assert wait_until(lambda: _logged(server, loaded), RELOAD_TIMEOUT), server.log()
        assert c.start("added-later").workflow.status == WAITING


def test_serve_keeps_versions_as_declared_where_dev_moved_on(
    database_url: str, tmp_path: Path
) -> None:
    directory = definitions_dir(
        tmp_path / "definitions",
        examples=False,
        test_definitions=False,
        extra={"drafting.yaml": DRAFT},
    )

    def dev() -> ServerProcess:
        server = ServerProcess(database_url=database_url, cwd=tmp_path)
        server.args = [*STATEWRIGHTD, "dev", "--listen", "127.0.0.1:0"]
        server.args += ["--database", database_url, "--definitions", str(directory)]
        return server

    with dev() as server, Client(server.target) as c:
        assert _latest(c, "drafting") == 1
        server.stop(timeout=15)
    # Edited while no server runs: the next dev start records it as the next version.
    (directory / "drafting.yaml").write_text(EDITED, encoding="utf-8")
    with dev() as server, Client(server.target) as c:
        assert _latest(c, "drafting") == 2
        assert _logged(server, "changed 'drafting' version 1: recorded as version 2")
        server.stop(timeout=15)
    # serve takes the file's `version: 1` at its word, and that version has other content.
    ended: subprocess.CompletedProcess[str] = run_server_to_exit(
        database_url, directory, cwd=tmp_path
    )
    assert ended.returncode == 2, ended.stdout
    assert "a (name, version) is immutable: bump the version" in ended.stdout
