"""Checks across a directory's definitions for child workflows: a missing child
definition (an error, unless the store has it), and a definition that starts itself
through its children (a warning naming the chain)."""

from __future__ import annotations

from pathlib import Path

from statewrightd.definitions import load_definition
from statewrightd.definitions.families import family_problems
from statewrightd.definitions.model import Definition


def calling(name: str, child: str, version: int | None = None) -> Definition:
    pinned = f"\n      version: {version}" if version else ""
    return load_definition(f"""
name: {name}
version: 1
states:
  call:
    workflow:
      definition: {child}{pinned}
  done: {{}}
transitions:
  - {{from: call, to: done}}
""")


def leaf(name: str) -> Definition:
    return load_definition(f"name: {name}\nversion: 1\nstates:\n  done: {{}}\n")


def never(name: str, version: int | None) -> bool:
    return False


def test_a_child_definition_in_the_directory_or_the_store_is_found() -> None:
    loaded = [(Path("a.yaml"), calling("a", "b")), (Path("b.yaml"), leaf("b"))]
    assert family_problems(loaded, never) == ([], [])
    alone = [(Path("a.yaml"), calling("a", "stored"))]
    assert family_problems(alone, lambda name, version: name == "stored") == ([], [])


def test_a_missing_child_definition_or_version_is_an_error() -> None:
    loaded = [(Path("a.yaml"), calling("a", "b", version=2)), (Path("b.yaml"), leaf("b"))]
    missing, cycles = family_problems(loaded, never)
    assert missing == [
        "a.yaml: error: states.call.workflow.definition: the child definition 'b' version 2 "
        "is neither among these definitions nor recorded"
    ]
    assert cycles == []


def test_a_definition_that_starts_itself_is_a_warning_naming_the_chain() -> None:
    loaded = [
        (Path("a.yaml"), calling("a", "b")),
        (Path("b.yaml"), calling("b", "c")),
        (Path("c.yaml"), calling("c", "a")),
        (Path("s.yaml"), calling("s", "s")),
    ]
    missing, cycles = family_problems(loaded, never)
    assert missing == []
    assert len(cycles) == 2
    assert cycles[0].startswith("a.yaml: warning: states.call.workflow: a -> b -> c -> a:")
    assert cycles[1].startswith("s.yaml: warning: states.call.workflow: s -> s:")
