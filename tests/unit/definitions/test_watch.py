"""``statewrightd dev``'s watcher, polled by hand on a SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.definitions.watch import DefinitionWatcher
from statewrightd.store.backends import open_repository
from statewrightd.store.repository import Repository

FLOW = """\
name: flow
version: 1
states:
  start: {}
  done: {}
transitions:
  - {from: start, to: done}
"""
CHANGED = FLOW.replace("  done: {}\n", "  done: {description: changed}\n")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repository]:
    store = open_repository(f"sqlite:///{tmp_path / 'store.db'}")
    yield store
    store.close()


def test_an_edit_made_before_the_watcher_began_is_loaded(repo: Repository, tmp_path: Path) -> None:
    directory = tmp_path / "defs"
    directory.mkdir()
    file = directory / "flow.yaml"
    file.write_text(FLOW, encoding="utf-8")
    registry = DefinitionRegistry(repo)
    reports = registry.load_directory(directory, dev=True).reports
    # Saved between the server's read and the watcher's start.
    file.write_text(CHANGED, encoding="utf-8")
    watcher = DefinitionWatcher(registry, directory, reports)
    assert watcher.poll() == [file]
    assert registry.get("flow").definition.version == 2
    assert watcher.poll() == []


def test_a_file_as_the_server_read_it_is_not_loaded_again(repo: Repository, tmp_path: Path) -> None:
    directory = tmp_path / "defs"
    directory.mkdir()
    (directory / "flow.yaml").write_text(FLOW, encoding="utf-8")
    registry = DefinitionRegistry(repo)
    reports = registry.load_directory(directory, dev=True).reports
    watcher = DefinitionWatcher(registry, directory, reports)
    assert watcher.poll() == []
    assert registry.get("flow").definition.version == 1
