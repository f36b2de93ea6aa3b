"""The registry's directory loads, on a SQLite store: every problem of every file at once
for ``serve``; ``dev``'s placement of changed content as the next version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statewrightd.definitions.registry import (
    DefinitionConflict,
    DefinitionRegistry,
    DefinitionsRefused,
    read_file,
)
from statewrightd.errors import NotFound
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
AGAIN = FLOW.replace("  done: {}\n", "  done: {description: changed again}\n")


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repository]:
    store = open_repository(f"sqlite:///{tmp_path / 'store.db'}")
    yield store
    store.close()


def _directory(path: Path, **files: str) -> Path:
    path.mkdir(exist_ok=True)
    for old in path.iterdir():
        old.unlink()
    for name, text in files.items():
        (path / name).write_text(text, encoding="utf-8")
    return path


def _recorded(repo: Repository, name: str) -> list[tuple[int, str]]:
    return [(r.version, r.source) for r in repo.list_definitions() if r.name == name]


def test_serve_refuses_a_directory_with_every_problem_of_every_file(
    repo: Repository, tmp_path: Path
) -> None:
    directory = _directory(
        tmp_path / "defs",
        **{
            "a.yaml": FLOW.replace("to: done}", "to: dnoe}"),
            "b.yaml": "name: b\nversion: 1\nstates: {a: {}\n",
            "c.yaml": FLOW.replace("name: flow", "name: fine"),
        },
    )
    with pytest.raises(DefinitionsRefused) as refused:
        DefinitionRegistry(repo).load_directory(directory)
    assert str(refused.value) == f"2 error(s) in the definitions in {directory}"
    assert [line.splitlines()[0] for line in refused.value.lines] == [
        f"{directory / 'a.yaml'}: error: transitions[0].to: unknown state 'dnoe'; "
        "did you mean 'done'?",
        f"{directory / 'b.yaml'}:3:9: error: <document>: not valid YAML: expected ',' or "
        "'}', but got '<stream end>' (while parsing a flow mapping)",
    ]
    assert repo.list_definitions() == []  # not even the good file's version


def test_serve_refuses_every_changed_version_and_names_both_sources(
    repo: Repository, tmp_path: Path
) -> None:
    first = _directory(
        tmp_path / "first", **{"flow.yaml": FLOW, "other.yaml": FLOW.replace("flow", "other")}
    )
    DefinitionRegistry(repo).load_directory(first)
    second = _directory(
        tmp_path / "second",
        **{"flow.yaml": CHANGED, "other.yaml": CHANGED.replace("flow", "other")},
    )
    with pytest.raises(DefinitionsRefused) as refused:
        DefinitionRegistry(repo).load_directory(second)
    assert len(refused.value.lines) == 2
    for line in refused.value.lines:
        assert "differs from the version already recorded from" in line
        assert str(first) in line and str(second) in line


def test_dev_records_changed_content_as_the_next_version(repo: Repository, tmp_path: Path) -> None:
    directory = _directory(tmp_path / "defs", **{"flow.yaml": FLOW})
    registry = DefinitionRegistry(repo)
    (placed,) = registry.load_directory(directory, dev=True).placed
    assert (placed.loaded.definition.version, placed.recorded, placed.note) == (1, True, "")

    (directory / "flow.yaml").write_text(CHANGED, encoding="utf-8")
    bumped = registry.place(read_file(directory / "flow.yaml"))
    assert bumped.loaded.definition.version == 2 and bumped.recorded
    assert "changed 'flow' version 1: recorded as version 2" in bumped.note
    assert _recorded(repo, "flow") == [(1, FLOW), (2, CHANGED.replace("version: 1", "version: 2"))]
    assert registry.get("flow").definition.version == 2

    # The same content again (a second save, another layout) is nothing new.
    (directory / "flow.yaml").write_text(CHANGED.replace("{}", "{ }"), encoding="utf-8")
    same = registry.place(read_file(directory / "flow.yaml"))
    assert (same.loaded.definition.version, same.recorded) == (2, False)

    # Going back to the first content is a change too: new instances get what the file says.
    (directory / "flow.yaml").write_text(FLOW, encoding="utf-8")
    back = registry.place(read_file(directory / "flow.yaml"))
    assert back.loaded.definition.version == 3
    assert back.loaded.definition.digest != registry.get("flow", 2).definition.digest


def test_dev_start_brings_the_latest_version_to_what_the_files_say(
    repo: Repository, tmp_path: Path
) -> None:
    directory = _directory(tmp_path / "defs", **{"flow.yaml": FLOW})
    DefinitionRegistry(repo).load_directory(directory, dev=True)
    _directory(directory, **{"flow.yaml": CHANGED})
    load = DefinitionRegistry(repo).load_directory(directory, dev=True)
    assert [p.loaded.definition.version for p in load.placed] == [2]
    # Started again unchanged: nothing new.
    load = DefinitionRegistry(repo).load_directory(directory, dev=True)
    assert [(p.loaded.definition.version, p.recorded) for p in load.placed] == [(2, False)]


def test_dev_keeps_explicit_versions_and_judges_only_the_highest(
    repo: Repository, tmp_path: Path
) -> None:
    v2 = CHANGED.replace("version: 1", "version: 2")
    directory = _directory(tmp_path / "defs", **{"v1.yaml": FLOW, "v2.yaml": v2})
    load = DefinitionRegistry(repo).load_directory(directory, dev=True)
    assert sorted(p.loaded.definition.version for p in load.placed) == [1, 2]
    load = DefinitionRegistry(repo).load_directory(directory, dev=True)
    assert [p.recorded for p in load.placed] == [False, False]
    # A version the files newly declare is taken as declared.
    v3 = AGAIN.replace("version: 1", "version: 3")
    _directory(directory, **{"v1.yaml": FLOW, "v2.yaml": v2, "v3.yaml": v3})
    load = DefinitionRegistry(repo).load_directory(directory, dev=True)
    assert sorted(p.loaded.definition.version for p in load.placed) == [1, 2, 3]
    assert [v for v, _ in _recorded(repo, "flow")] == [1, 2, 3]


def test_dev_leaves_files_with_errors_out_and_reports_them(
    repo: Repository, tmp_path: Path
) -> None:
    directory = _directory(
        tmp_path / "defs", **{"flow.yaml": FLOW, "bad.yaml": FLOW.replace("flow", "Bad")}
    )
    load = DefinitionRegistry(repo).load_directory(directory, dev=True)
    assert [p.loaded.definition.name for p in load.placed] == ["flow"]
    assert load.refused == [
        f"{directory / 'bad.yaml'}: error: name: name must match [a-z][a-z0-9-]{{0,62}}"
    ]
    assert sorted(r.path.name for r in load.reports) == ["bad.yaml", "flow.yaml"]


def test_dev_says_so_when_it_cannot_rewrite_the_version(repo: Repository, tmp_path: Path) -> None:
    flow = (
        "# flow style\n{name: flow, version: 1, states: {start: {}, done: {}}, transitions: []}\n"
    )
    directory = _directory(tmp_path / "defs", **{"flow.yaml": flow})
    registry = DefinitionRegistry(repo)
    registry.load_directory(directory, dev=True)
    (directory / "flow.yaml").write_text(flow.replace("done: {}", "done: {description: x}"))
    with pytest.raises(DefinitionConflict, match=r"write `version: 2` in the file"):
        registry.place(read_file(directory / "flow.yaml"))


def test_an_unknown_name_suggests_the_known_one_a_typo_meant(
    repo: Repository, tmp_path: Path
) -> None:
    directory = _directory(
        tmp_path / "defs",
        **{"flow.yaml": FLOW, "other.yaml": FLOW.replace("name: flow", "name: mail-approval")},
    )
    registry = DefinitionRegistry(repo)
    registry.load_directory(directory, dev=True)
    with pytest.raises(NotFound) as typo:
        registry.get("mail-aproval")
    assert typo.value.reason == "DEFINITION_NOT_FOUND"
    assert (
        typo.value.message == "definition 'mail-aproval' not found; did you mean 'mail-approval'?"
    )
    assert typo.value.metadata == {"definition": "mail-aproval", "did_you_mean": "mail-approval"}
    with pytest.raises(NotFound) as unlike:
        registry.get("payroll")
    assert unlike.value.message == "definition 'payroll' not found"
    assert "did_you_mean" not in unlike.value.metadata
    # A version that does not exist of a name that does is no typo of another name.
    with pytest.raises(NotFound) as version:
        registry.get("flow", 7)
    assert "did you mean" not in version.value.message
