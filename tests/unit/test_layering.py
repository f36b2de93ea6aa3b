"""The server's packages import downward only, with no cycles.

Every ``import`` of the server package is read from the source (an AST walk, so imports
inside functions and under ``TYPE_CHECKING`` count too) and each module is placed in its
layer. A module may import its own layer and the layers below it, never one above; and
the graph of packages has no cycle at all.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "statewrightd"
ROOT = Path(__file__).resolve().parents[2] / "service" / PACKAGE

# The one list of layers, top to bottom, in the order of the architecture: the commands,
# the scenario runner (the engine driven from a test, on a virtual clock), the processes,
# the doors (HTTP and the ports every listener binds, then what every call passes, then
# gRPC), the use cases, the engine, the definitions, the store, and the words every layer
# shares (among them the call's context and its view of instances). A unit is a
# subpackage or a top-level module of statewrightd.
LAYERS: list[set[str]] = [
    {"cli"},
    {"scenarios"},
    {"supervisor"},
    {"server", "pod", "health", "reflection", "tuning"},
    {"console", "ports"},
    {"security", "observability"},
    {"api"},
    {"app"},
    {"engine"},
    {"definitions"},
    {"store"},
    {"domain", "context", "visibility", "reasons", "errors", "config", "durations", "__init__"},
]
LAYER_OF = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}


def unit_of(module: str) -> str:
    """``statewrightd.store.writer`` -> ``store``; ``statewrightd`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, root: Path = ROOT) -> str:
    relative = path.relative_to(root.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path, root: Path = ROOT) -> Iterator[tuple[int, str]]:
    """(line, imported statewrightd module) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    here = module_name(path, root) if path.name == "__init__.py" else module_name(path.parent, root)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.split(".")[0] != PACKAGE:
                continue
            if target == PACKAGE:
                # `from statewrightd import errors` imports the module errors;
                # `from statewrightd import __version__` a name of the package itself.
                for alias in node.names:
                    is_module = (root / f"{alias.name}.py").exists() or (root / alias.name).is_dir()
                    yield node.lineno, f"{PACKAGE}.{alias.name}" if is_module else PACKAGE
            else:
                yield node.lineno, target


def sources(root: Path = ROOT) -> list[Path]:
    return sorted(root.rglob("*.py"))


def unplaced(root: Path = ROOT) -> list[str]:
    """Units of the package that no layer names."""
    return sorted({unit_of(module_name(path, root)) for path in sources(root)} - set(LAYER_OF))


def upward_imports(root: Path = ROOT) -> list[str]:
    """Every import of a unit by a unit of a lower layer, as ``file:line (unit) imports x``."""
    upward = []
    for path in sources(root):
        here = unit_of(module_name(path, root))
        for line, target in imports(path, root):
            there = unit_of(target)
            if LAYER_OF[there] < LAYER_OF[here]:
                upward.append(f"{path.relative_to(root.parent)}:{line} ({here}) imports {target}")
    return upward


def cycles(root: Path = ROOT) -> list[list[str]]:
    """Every cycle in the graph of units (a unit importing another, in either layer)."""
    graph: dict[str, set[str]] = {}
    for path in sources(root):
        here = unit_of(module_name(path, root))
        graph.setdefault(here, set())
        for _, target in imports(path, root):
            there = unit_of(target)
            if there != here:
                graph[here].add(there)
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(unit: str, trail: list[str]) -> None:
        state[unit] = 1
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == 1:
                found.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[unit] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [unit])
    return found


def test_every_unit_has_a_layer() -> None:
    assert unplaced() == [], f"place these in LAYERS: {unplaced()}"


def test_every_layer_names_units_that_exist() -> None:
    units = {unit_of(module_name(path)) for path in sources()}
    assert sorted(set(LAYER_OF) - units) == [], "LAYERS names units the package no longer has"


def test_imports_point_down_or_sideways_within_a_layer() -> None:
    upward = upward_imports()
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_no_cycle_between_units() -> None:
    found = cycles()
    assert not found, "package cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_walk_sees_imports_of_every_kind() -> None:
    # The checks above are only as good as the import reader: it must see these.
    assert unit_of("statewrightd.store.writer") == "store"
    found = [t for _, t in imports(ROOT / "engine" / "stepping.py")]
    assert "statewrightd.engine.fsm" in found or "statewrightd.engine" in found
    sample = ROOT / "api" / "servicer.py"
    assert any(t.startswith("statewrightd.app") for _, t in imports(sample))


def _copy_of_the_package(tmp_path: Path) -> Path:
    copy = tmp_path / PACKAGE
    for path in sources():
        target = copy / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    return copy


def test_a_planted_upward_import_fails_the_check(tmp_path: Path) -> None:
    # A test of the test: the package as it is passes; the same package with one upward
    # import more (of each kind the reader must see) does not, and the report names it.
    copy = _copy_of_the_package(tmp_path)
    assert upward_imports(copy) == []
    assert cycles(copy) == []
    planted = {
        "store/planted_plain.py": "from statewrightd.engine import runtime\n",
        "engine/planted_late.py": "def f() -> None:\n    import statewrightd.server\n",
        "domain_planted.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from statewrightd.api import servicer\n"
        ),
        "definitions/planted_relative.py": "from ..engine import fsm\n",
    }
    for name, text in planted.items():
        (copy / name).write_text(text, encoding="utf-8")
    # A new top-level module needs a layer of its own, like any unit.
    LAYER_OF["domain_planted"] = LAYER_OF["domain"]
    try:
        reported = upward_imports(copy)
    finally:
        del LAYER_OF["domain_planted"]
    for name in planted:
        assert any(line.startswith(f"{PACKAGE}/{name}:") for line in reported), (name, reported)
    assert len(reported) == len(planted)
    # ...and an import that closes a loop between two units is a cycle.
    assert cycles(copy) != []


def test_an_unplaced_unit_fails_the_check(tmp_path: Path) -> None:
    copy = _copy_of_the_package(tmp_path)
    (copy / "newcomer.py").write_text("", encoding="utf-8")
    assert unplaced(copy) == ["newcomer"]
