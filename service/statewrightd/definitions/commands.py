"""``statewrightd validate`` and ``statewrightd graph``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from statewrightd.definitions.files import is_definition_file
from statewrightd.definitions.graph import to_dot, to_mermaid
from statewrightd.definitions.loader import validate_source
from statewrightd.definitions.model import Definition


def _expand(paths: list[str]) -> tuple[list[Path], list[str]]:
    files: list[Path] = []
    missing: list[str] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(p for p in path.rglob("*") if is_definition_file(p)))
        elif path.is_file():
            files.append(path)
        else:
            missing.append(raw)
    return files, missing


def validate_command(
    paths: list[str], *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Print every error and warning of every file; 1 if any error, else 0."""
    out = out or sys.stdout
    err = err or sys.stderr
    files, missing = _expand(paths)
    errors = warnings = 0
    for raw in missing:
        print(f"{raw}: error: no such file or directory", file=err)
        errors += 1
    seen: dict[tuple[str, int], Path] = {}
    for file in files:
        try:
            source = file.read_bytes()
        except OSError as exc:
            print(f"{file}: error: cannot read: {exc.strerror}", file=err)
            errors += 1
            continue
        definition, problems = validate_source(source, str(file))
        for problem in problems:
            print(problem.render(str(file)), file=err)
            if problem.severity == "error":
                errors += 1
            else:
                warnings += 1
        if definition is not None:
            other = seen.get(definition.key)
            if other is not None:
                print(
                    f"{file}: error: name: {definition.name} v{definition.version} is also "
                    f"defined in {other}; (name, version) must be unique",
                    file=err,
                )
                errors += 1
            seen[definition.key] = file
            print(f"{file}: ok ({definition.name} v{definition.version})", file=out)
    if not files and not missing:
        print("error: no definition files found", file=err)
        return 1
    print(f"{len(files)} file(s), {errors} error(s), {warnings} warning(s)", file=out)
    return 1 if errors else 0


def graph_command(file: str, fmt: str, *, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    path = Path(file)
    try:
        source = path.read_bytes()
    except OSError as exc:
        print(f"{file}: error: cannot read: {exc.strerror}", file=sys.stderr)
        return 1
    definition: Definition | None
    definition, problems = validate_source(source, file)
    if definition is None:
        for problem in problems:
            print(problem.render(file), file=sys.stderr)
        return 1
    out.write(to_dot(definition) if fmt == "dot" else to_mermaid(definition))
    return 0
