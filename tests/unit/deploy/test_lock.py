"""requirements.lock, the image's dependencies: in step with the pyproject files, and the
parts of them the Dockerfile cuts never imported by the server."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.unit.deploy.dockerfile import stages
from tests.unit.deploy.rendering import REPO

LOCK = REPO / "requirements.lock"
PYPROJECTS = [REPO / "pyproject.toml", REPO / "clients" / "python" / "pyproject.toml"]
SERVICE = REPO / "service" / "statewrightd"
# Built from the tree, never from the index (see scripts/lock-requirements).
LOCAL = {"statewright", "statewrightd"}


@dataclass(frozen=True)
class Locked:
    requirement: Requirement
    hashes: list[str]

    @property
    def version(self) -> str:
        (spec,) = self.requirement.specifier
        assert spec.operator == "==", self.requirement
        return spec.version


def locked() -> dict[str, Locked]:
    entries: dict[str, Locked] = {}
    text = re.sub(r"\\\n", " ", LOCK.read_text(encoding="utf-8"))
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        hashes = [w.removeprefix("--hash=") for w in words if w.startswith("--hash=")]
        spec = " ".join(w for w in words if not w.startswith("--hash="))
        requirement = Requirement(spec)
        entries[canonicalize_name(requirement.name)] = Locked(requirement, hashes)
    return entries


def declared() -> list[Requirement]:
    """What the pyproject files ask for: dependencies of both, and the build backend."""
    requirements = []
    for path in PYPROJECTS:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        requirements += [Requirement(r) for r in data["project"]["dependencies"]]
        requirements += [Requirement(r) for r in data["build-system"]["requires"]]
    return [r for r in requirements if canonicalize_name(r.name) not in LOCAL]


def test_every_locked_distribution_is_pinned_with_sha256_hashes() -> None:
    entries = locked()
    assert len(entries) >= 20
    for name, entry in entries.items():
        assert entry.version, name
        assert entry.hashes, f"{name} has no hash: pip --require-hashes would refuse it"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in entry.hashes), name
    assert not LOCAL & set(entries)


def test_the_lock_satisfies_every_declared_dependency() -> None:
    entries = locked()
    stale = []
    for requirement in declared():
        entry = entries.get(canonicalize_name(requirement.name))
        if entry is None or not requirement.specifier.contains(entry.version, prereleases=True):
            stale.append(str(requirement))
    assert not stale, f"requirements.lock is stale for {stale}: run scripts/lock-requirements"


def test_the_extras_the_server_asks_for_are_locked() -> None:
    entries = locked()
    for requirement in declared():
        for extra in requirement.extras:
            # The only extra in use: psycopg[binary] brings psycopg-binary.
            assert extra == "binary" and requirement.name == "psycopg", requirement
            assert "psycopg-binary" in entries
            assert entries["psycopg-binary"].version == entries["psycopg"].version


def cut_modules() -> list[str]:
    """The packages the Dockerfile removes from site-packages, as module names."""
    _, all_stages = stages()
    found = []
    for run in all_stages[0].all("RUN"):
        for path in re.findall(r"\brm -r\S* (\S+)", run.arguments):
            _, sep, relative = path.partition("/site-packages/")
            assert sep, f"the build removes {path}, outside site-packages"
            found.append(relative.strip("/").replace("/", "."))
    return found


def imported_modules(root: Path) -> set[str]:
    names: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_nothing_the_image_cuts_is_imported_by_the_server() -> None:
    cut = cut_modules()
    assert cut == ["cel_expr_python.ext"]
    imported = imported_modules(SERVICE)
    assert "cel_expr_python.cel" in imported  # a control: the scan sees the CEL import
    for module in cut:
        users = sorted(n for n in imported if n == module or n.startswith(module + "."))
        assert not users, f"the server imports {users}, which the Dockerfile removes"
    # Extensions are objects of those modules, or named by an EnvConfig: the server's
    # environments get declared variables only.
    cel = ast.parse((SERVICE / "definitions" / "cel.py").read_text(encoding="utf-8"))
    calls = [
        node
        for node in ast.walk(cel)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "NewEnv"
    ]
    assert calls
    for call in calls:
        assert not call.args and {k.arg for k in call.keywords} == {"variables"}, ast.dump(call)
