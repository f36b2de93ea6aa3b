"""A small Dockerfile reader: enough structure to check the image's conventions.

No Docker engine runs here (and hadolint is not packaged), so the tests read the
instructions themselves: stages, their instructions, continuation lines joined.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.unit.deploy.rendering import REPO

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str

    def exec_form(self) -> list[str]:
        value = json.loads(self.arguments)
        assert isinstance(value, list) and all(isinstance(v, str) for v in value)
        return value

    def words(self) -> list[str]:
        return shlex.split(self.arguments)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def instructions(path: Path = DOCKERFILE) -> list[Instruction]:
    result = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        text = pending + line
        pending = ""
        keyword, _, arguments = text.partition(" ")
        result.append(Instruction(keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return result


def stages(path: Path = DOCKERFILE) -> tuple[dict[str, str], list[Stage]]:
    """(global ARG defaults, stages in order)."""
    args: dict[str, str] = {}
    found: list[Stage] = []
    for instruction in instructions(path):
        if instruction.keyword == "FROM":
            words = instruction.words()
            words = [w for w in words if not w.startswith("--platform")]
            base = words[0]
            for arg, default in args.items():
                base = base.replace("${" + arg + "}", default).replace("$" + arg, default)
            stage_name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            found.append(Stage(base, stage_name))
        elif not found and instruction.keyword == "ARG":
            arg, _, default = instruction.arguments.partition("=")
            args[arg] = default
        else:
            assert found, f"{instruction.keyword} before the first FROM"
            found[-1].instructions.append(instruction)
    return args, found


def runtime_user() -> int:
    """The numeric user the final stage runs as."""
    _, all_stages = stages()
    (user,) = all_stages[-1].all("USER")
    uid = user.arguments.split(":")[0]
    assert uid.isdigit(), f"USER must be numeric for runAsNonRoot to verify it: {uid}"
    return int(uid)


def dockerignore_includes() -> list[str]:
    """The re-included paths of an allowlist .dockerignore (``!path`` lines)."""
    lines = DOCKERIGNORE.read_text(encoding="utf-8").splitlines()
    return [line[1:].rstrip("/") for line in lines if line.startswith("!")]
