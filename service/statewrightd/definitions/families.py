"""Checks across the definitions of one directory that child workflows need: every
``workflow:`` state's child definition exists, and no definition starts itself through a
chain of children (a cycle is a warning that names it: only a guard or a map, which this
check does not judge, can end one)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from statewrightd.definitions.model import Definition

# Whether a definition (name, version; None: any) is recorded in the store.
Recorded = Callable[[str, int | None], bool]


def _children(definition: Definition) -> list[tuple[str, str, int | None]]:
    """(state, child definition, version) of each ``workflow:`` state."""
    return [
        (name, s.task.child.definition, s.task.child.version)
        for name, s in definition.states.items()
        if s.task is not None and s.task.child is not None
    ]


def family_problems(
    loaded: Iterable[tuple[Path, Definition]], recorded: Recorded
) -> tuple[list[str], list[str]]:
    """(missing child definitions, cycles) as ``statewrightd validate`` prints problems:
    ``PATH: error: ...`` and ``PATH: warning: ...``."""
    pairs = list(loaded)
    here = {(d.name, d.version) for _, d in pairs}
    names = {name for name, _ in here}
    missing: list[str] = []
    edges: dict[str, dict[str, tuple[Path, str]]] = {}
    for path, definition in pairs:
        for state, child, version in _children(definition):
            edges.setdefault(definition.name, {}).setdefault(child, (path, state))
            found = (child, version) in here if version else child in names
            if not found and not recorded(child, version):
                which = f"{child!r}" + (f" version {version}" if version else "")
                missing.append(
                    f"{path}: error: states.{state}.workflow.definition: the child definition "
                    f"{which} is neither among these definitions nor recorded"
                )
    return missing, _cycles(edges)


def _cycles(edges: dict[str, dict[str, tuple[Path, str]]]) -> list[str]:
    """One warning for each cycle of definitions starting children, found from its
    smallest name so that each is reported once."""
    out: list[str] = []
    for start in sorted(edges):
        stack: list[tuple[str, list[str]]] = [(start, [start])]
        while stack:
            name, chain = stack.pop()
            for child in sorted(edges.get(name, {})):
                if child == start:
                    path, state = edges[start][chain[1] if len(chain) > 1 else start]
                    loop = " -> ".join([*chain, start])
                    out.append(
                        f"{path}: warning: states.{state}.workflow: {loop}: the definition "
                        "starts itself through its children; a guard or a map must end the chain"
                    )
                elif child > start and child not in chain:
                    stack.append((child, [*chain, child]))
    return out
