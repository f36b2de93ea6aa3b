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

# Top to bottom. A unit is a subpackage or a top-level module of statewrightd.
LAYERS: list[set[str]] = [
    {"cli"},
    {"scenarios"},
    {"supervisor"},
    {"server", "health", "reflection", "tuning", "pod", "console", "ports"},
    {"security"},
    {"observability"},
    {"api"},
    {"application"},
    {"engine"},
    {"definitions"},
    {"store"},
    {"errors", "config", "durations", "visibility", "__init__"},
]
LAYER_OF = {unit: depth for depth, units in enumerate(LAYERS) for unit in units}


def unit_of(module: str) -> str:
    """``statewrightd.store.writer`` -> ``store``; ``statewrightd`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    relative = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported statewrightd module) for every import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
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
                    is_module = (ROOT / f"{alias.name}.py").exists() or (ROOT / alias.name).is_dir()
                    yield node.lineno, f"{PACKAGE}.{alias.name}" if is_module else PACKAGE
            else:
                yield node.lineno, target


def sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_name(path)) for path in sources()}
    assert units <= set(LAYER_OF), f"place these in LAYERS: {sorted(units - set(LAYER_OF))}"


def test_imports_point_down_or_sideways_within_a_layer() -> None:
    upward = []
    for path in sources():
        here = unit_of(module_name(path))
        for line, target in imports(path):
            there = unit_of(target)
            if LAYER_OF[there] < LAYER_OF[here]:
                upward.append(f"{path.relative_to(ROOT.parent)}:{line} ({here}) imports {target}")
    assert not upward, "imports that point up:\n" + "\n".join(upward)


def test_no_cycle_between_units() -> None:
    graph: dict[str, set[str]] = {}
    for path in sources():
        here = unit_of(module_name(path))
        graph.setdefault(here, set())
        for _, target in imports(path):
            there = unit_of(target)
            if there != here:
                graph[here].add(there)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(unit: str, trail: list[str]) -> None:
        state[unit] = 1
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[unit] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [unit])
    assert not cycles, "package cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_the_walk_sees_imports_of_every_kind(tmp_path: Path) -> None:
    # The checks above are only as good as the import reader: it must see these.
    assert unit_of("statewrightd.store.writer") == "store"
    found = [t for _, t in imports(ROOT / "engine" / "runtime.py")]
    assert "statewrightd.engine.fsm" in found or "statewrightd.engine" in found
    sample = ROOT / "api" / "servicer.py"
    assert any(t.startswith("statewrightd.application") for _, t in imports(sample))
