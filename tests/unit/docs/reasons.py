"""Every ErrorInfo reason the server's code can produce, read from its source.

The server names every reason from one registry (``statewrightd.reasons.Reason``). Four
places make one: a ``reason=Reason.X`` given to an error (or to a helper that builds one),
a ``default_reason = Reason.X`` of an error class (what an error of that class says when
it is given none), a member named in what a variable called ``reason`` is set to (a
fallback: ``reason = stored or Reason.STEP_FAILED``), and a key of the engine's
``FAILURE_ERRORS`` (the reasons a step fails an instance with, which ``Workflow.error``
carries). For each, the gRPC code is worked out where the source says it: the class an
error is raised as, mapped by the server's own table from error classes to codes.

A reason written as a string of its own at any of those places is reported too
(``written_by_hand``): the registry is the only spelling.
"""

from __future__ import annotations

import ast
import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from statewrightd import errors
from statewrightd.api import status
from statewrightd.engine.model import FAILURE_ERRORS
from tests.unit.docs.blocks import REPO

SERVER = REPO / "service" / "statewrightd"
REGISTRY = "Reason"
_REASON = "reason"
_REASON_SHAPE = re.compile(r"[A-Z][A-Z0-9_]*")


@dataclass(frozen=True)
class Made:
    reason: str
    code: str | None  # the gRPC code's name, when the source says which class raises it
    where: str  # file:line


def _code_of(cls: type[errors.StatewrightError]) -> str:
    for base in cls.__mro__:
        code = status._CODES.get(base)
        if code is not None:
            return code.name
    raise AssertionError(f"{cls} has no code")


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(SERVER.parent).with_suffix("").parts)


def _error_class(module: object, name: str) -> type[errors.StatewrightError] | None:
    for where in (module, errors):
        found = getattr(where, name, None)
        if isinstance(found, type) and issubclass(found, errors.StatewrightError):
            return found
    return None


def _called(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _named(node: ast.expr | None) -> Iterator[str]:
    """The registry members ``node`` names (``Reason.X``), anywhere inside it."""
    for sub in ast.walk(node) if node is not None else ():
        if (
            isinstance(sub, ast.Attribute)
            and isinstance(sub.value, ast.Name)
            and sub.value.id == REGISTRY
        ):
            yield sub.attr


def _by_hand(node: ast.expr | None) -> Iterator[str]:
    """Reason-shaped strings written in ``node`` (a free-text cancel reason is not one)."""
    for sub in ast.walk(node) if node is not None else ():
        if (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and _REASON_SHAPE.fullmatch(sub.value)
        ):
            yield sub.value


def _assigned(node: ast.Assign | ast.AnnAssign) -> str:
    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
    return target.id if isinstance(target, ast.Name) else ""


def _places() -> Iterator[tuple[Path, object, ast.AST, ast.expr | None, type | None]]:
    """(file, module, node, the expression that gives a reason, the class it is raised as
    when the place says) for every place the server makes a reason."""
    for path in sorted(SERVER.rglob("*.py")):
        module = importlib.import_module(_module_of(path))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == _REASON:
                        yield path, module, node, keyword.value, _error_class(module, _called(node))
            elif isinstance(node, ast.Assign | ast.AnnAssign) and _assigned(node) == _REASON:
                # Which error class the variable ends up in is the code's business: no code.
                yield path, module, node, node.value, None
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.Assign | ast.AnnAssign) and (
                        _assigned(item) == "default_reason"
                    ):
                        cls = _error_class(module, node.name)
                        assert cls is not None, f"{path}: {node.name} is not an error class"
                        yield path, module, item, item.value, cls


def made_reasons() -> Iterator[Made]:
    for path, _, node, value, cls in _places():
        where = f"{path.relative_to(REPO).as_posix()}:{getattr(node, 'lineno', 0)}"
        code = _code_of(cls) if cls is not None else None
        for name in _named(value):
            yield Made(name, code, where)
    for member, cls in FAILURE_ERRORS.items():
        yield Made(str(member), _code_of(cls), "Workflow.error")


def written_by_hand() -> list[str]:
    """Places that write a reason as a string instead of naming a registry member."""
    found = []
    for path, _, node, value, _cls in _places():
        for text in _by_hand(value):
            found.append(
                f"{path.relative_to(REPO).as_posix()}:{getattr(node, 'lineno', 0)}: {text}"
            )
    return found
