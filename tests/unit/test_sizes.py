"""The server's code stays in pieces a reader can hold: no class over 400 lines, no function
over 80.

Read from the source (an AST walk, nested classes and functions included). The argparse
builders are excepted by name: a command's every flag, with its help, reads best in one
list.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "service" / "statewrightd"
MAX_CLASS_LINES = 400
MAX_FUNCTION_LINES = 80
ARGPARSE_BUILDERS = frozenset({"build_parser", "add_server_arguments", "add_security_arguments"})


def oversized(root: Path = ROOT) -> list[str]:
    """Every class and function of the package over its limit, as ``file:line name (n)``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                limit = MAX_CLASS_LINES
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                if node.name in ARGPARSE_BUILDERS:
                    continue
                limit = MAX_FUNCTION_LINES
            else:
                continue
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            lines = (node.end_lineno or node.lineno) - start + 1
            if lines > limit:
                where = path.relative_to(root.parent)
                found.append(f"{where}:{node.lineno} {node.name} ({lines} lines, limit {limit})")
    return found


def test_no_class_or_function_of_the_server_is_over_its_limit() -> None:
    found = oversized()
    assert found == [], "split these:\n" + "\n".join(found)


def test_the_check_finds_an_oversized_function_and_class(tmp_path: Path) -> None:
    package = tmp_path / "statewrightd"
    package.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    methods = "".join(
        f"    def m{i}(self) -> None:\n" + "".join(f"        y{j} = {j}\n" for j in range(40))
        for i in range(MAX_CLASS_LINES // 40)
    )
    (package / "big.py").write_text(
        f"def long_one() -> None:\n{body}\n\nclass Big:\n{methods}", encoding="utf-8"
    )
    (package / "ok.py").write_text("def build_parser() -> None:\n" + body, encoding="utf-8")
    found = oversized(package)
    assert sorted(line.split()[1] for line in found) == ["Big", "long_one"], found
