"""Problems found in a definition, and the error that carries all of them at once."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason

Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding, addressed by a path into the document (``transitions[2].guard``).

    ``line`` and ``column`` (1-based) say where in the text it is, when the problem is
    about the text itself (syntax, a repeated key); ``excerpt`` is then the offending line.
    """

    path: str
    message: str
    severity: Severity = "error"
    line: int | None = None
    column: int | None = None
    excerpt: str = ""

    def __str__(self) -> str:
        where = self.path or "<document>"
        return f"{self.severity}: {where}: {self.message}"

    def render(self, source_name: str) -> str:
        """As ``statewrightd validate`` prints it: ``FILE[:LINE:COLUMN]: severity: ...``,
        then the offending line with a caret under the column, when there is one."""
        where = source_name
        if self.line is not None:
            where += f":{self.line}:{self.column or 1}"
        text = f"{where}: {self}"
        if self.excerpt:
            caret = " " * max(0, (self.column or 1) - 1) + "^"
            text += f"\n    {self.excerpt}\n    {caret}"
        return text


def _typos(a: str, b: str) -> int:
    """Edits between two words, a swap of neighbours counting as one (the usual typos)."""
    previous: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        before, previous, row = previous, row, [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], before[j - 2] + 1)
    return row[len(b)]


def closest(word: object, choices: Iterable[str]) -> str | None:
    """The choice ``word`` was most likely meant to be, if one is close enough: a
    difference of case, a typo or two (one in a short word), or else a close likeness."""
    if not isinstance(word, str) or not word:
        return None
    options = sorted({c for c in choices if c != word})
    by_fold = {c.casefold(): c for c in options}
    if word.casefold() in by_fold:
        return by_fold[word.casefold()]
    allowed = 1 if len(word) <= 4 else 2
    # Among equally near ones, the one with the same letters (a swap) is likelier.
    # Edits are at least the difference in length: only names that near are compared.
    near = sorted(
        (_typos(word, c), sorted(c) != sorted(word), c)
        for c in options
        if abs(len(c) - len(word)) <= allowed
    )
    if near and near[0][0] <= allowed:
        return near[0][2]
    found = difflib.get_close_matches(word, options, n=1, cutoff=0.75)
    return found[0] if found else None


def did_you_mean(word: object, choices: Iterable[str]) -> str:
    """``"; did you mean 'X'?"`` to end a message with, or nothing."""
    match = closest(word, choices)
    return suggestion(match) if match else ""


def suggestion(match: str) -> str:
    """How a message ends that suggests ``match``."""
    return f"; did you mean {match!r}?"


class DefinitionInvalid(InvalidArgument):
    """A definition has at least one error; ``problems`` lists every finding, warnings too."""

    default_reason = Reason.DEFINITION_INVALID

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
