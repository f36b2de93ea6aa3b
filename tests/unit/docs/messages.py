"""The fixed wording of every problem the definition loader can report, read from its source.

A message is usually an f-string: its literal parts are what a user sees whatever the
definition says, so each literal part must appear on the validation page.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.docs.blocks import REPO

_DEFINITIONS = REPO / "service" / "statewrightd" / "definitions"
# The loader reads a document in several modules; its messages are judged together.
SOURCES: dict[str, tuple[Path, ...]] = {
    "loader": tuple(
        _DEFINITIONS / name
        for name in (
            "loader.py",
            "reading.py",
            "read_states.py",
            "read_transitions.py",
            "analysis.py",
        )
    ),
    "parsing": (_DEFINITIONS / "parsing.py",),
    "problems": (_DEFINITIONS / "problems.py",),
}
# Functions that return a problem's message, or a part of one, instead of reporting it.
_MESSAGE_FUNCTIONS = frozenset(
    {"set_type_problem", "reference_hints", "did_you_mean", "suggestion"}
)
_REPORTERS = frozenset({"error", "warning"})


def _parts(node: ast.expr) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return [
            v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        ]
    if isinstance(node, ast.IfExp):  # `"..." if ... else "..."`: either may be shown
        return _parts(node.body) + _parts(node.orelse)
    return []


def _message_nodes(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            func = node.func
            reporter = isinstance(func, ast.Attribute) and func.attr in _REPORTERS
            problem = isinstance(func, ast.Name) and func.id == "Problem"
            if reporter or problem:
                found.append(node.args[1])
        elif isinstance(node, ast.FunctionDef) and node.name in _MESSAGE_FUNCTIONS:
            found.extend(
                ret.value
                for ret in ast.walk(node)
                if isinstance(ret, ast.Return) and ret.value is not None
            )
    return found


def fragments(paths: tuple[Path, ...]) -> list[str]:
    """The literal parts of every message in ``paths``, trimmed, in source order."""
    out: list[str] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _message_nodes(tree):
            for part in _parts(node):
                text = part.strip(" :;,")
                if len(text) >= 3 and text not in out:
                    out.append(text)
    return out


def normalize(text: str) -> str:
    """Markdown as a reader sees its words: no code-span backticks, escapes or line breaks."""
    return " ".join(text.replace("`", "").replace("\\|", "|").split())
