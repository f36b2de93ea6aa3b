"""Every ErrorInfo reason the server's code can produce, read from its source.

Four places make a reason: a ``reason="..."`` given to an error (or to a helper that
builds one), a ``default_reason = "..."`` of an error class (what an error of that class
says when it is given none), a word in what a variable named ``reason`` is set to (a
fallback: ``reason = stored or "STEP_FAILED"``), and a member of the engine's ``Reason``
enum (the reasons a step fails an instance with, which ``Workflow.error`` carries). For
each, the gRPC code is worked out where the source says it: the class an error is raised
as, mapped by the server's own table from error classes to codes.
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
from statewrightd.engine.model import FAILURE_ERRORS, Reason
from tests.unit.docs.blocks import REPO

SERVER = REPO / "service" / "statewrightd"
_REASON = "reason"
_REASON_SHAPE = re.compile(r"[A-Z][A-Z0-9_]*")
_WORD = re.compile(r"[A-Z][A-Z0-9_]+")


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


def made_reasons() -> Iterator[Made]:
    for path in sorted(SERVER.rglob("*.py")):
        module = importlib.import_module(_module_of(path))
        where = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    value = keyword.value
                    if (
                        keyword.arg == _REASON
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                        # ErrorInfo reasons are UPPER_SNAKE_CASE; a command's `reason` (a
                        # cancel's, say) is free text for people.
                        and _REASON_SHAPE.fullmatch(value.value)
                    ):
                        cls = _error_class(module, _called(node))
                        code = _code_of(cls) if cls is not None else None
                        yield Made(value.value, code, f"{where}:{node.lineno}")
            elif isinstance(node, ast.Assign | ast.AnnAssign) and _assigned(node) == _REASON:
                # Which error class the variable ends up in is the code's business: no code.
                for word in _reason_words(node.value):
                    yield Made(word, None, f"{where}:{node.lineno}")
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (
                        isinstance(item, ast.Assign | ast.AnnAssign)
                        and _assigned(item) == "default_reason"
                        and isinstance(item.value, ast.Constant)
                        and isinstance(item.value.value, str)
                    ):
                        cls = _error_class(module, node.name)
                        assert cls is not None, f"{where}: {node.name} is not an error class"
                        yield Made(item.value.value, _code_of(cls), f"{where}:{item.lineno}")
    for member in Reason:
        cls = FAILURE_ERRORS[member]
        yield Made(member.value, _code_of(cls), "Workflow.error")


def _assigned(node: ast.Assign | ast.AnnAssign) -> str:
    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
    return target.id if isinstance(target, ast.Name) else ""


def _reason_words(value: ast.expr | None) -> Iterator[str]:
    for node in ast.walk(value) if value is not None else ():
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _WORD.fullmatch(node.value)
        ):
            yield node.value
