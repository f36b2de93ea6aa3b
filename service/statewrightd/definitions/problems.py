"""Problems found in a definition, and the error that carries all of them at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from statewrightd.errors import InvalidArgument

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding, addressed by a path into the document (``transitions[2].guard``)."""

    path: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        where = self.path or "<document>"
        return f"{self.severity}: {where}: {self.message}"


class DefinitionInvalid(InvalidArgument):
    """A definition has at least one error; ``problems`` lists every finding, warnings too."""

    default_reason = "DEFINITION_INVALID"

    def __init__(self, source_name: str, problems: list[Problem]) -> None:
        errors = [p for p in problems if p.severity == "error"]
        first = errors[0] if errors else None
        summary = f"{source_name}: {len(errors)} error(s)"
        if first is not None:
            summary += f"; first: {first.path or '<document>'}: {first.message}"
        super().__init__(
            summary,
            metadata={
                "source": source_name,
                "errors": len(errors),
                "path": first.path if first else "",
            },
        )
        self.source_name = source_name
        self.problems: tuple[Problem, ...] = tuple(problems)
