"""Turn YAML or JSON text into plain Python data, reporting duplicate keys.

Two YAML 1.1 habits would silently change meaning, so they are switched off: ``on``,
``off``, ``yes`` and ``no`` are strings (``on:`` is the transition event key), and a
repeated mapping key is a problem instead of "last one wins".
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from statewrightd.definitions.problems import Problem

# The most values (scalars, maps and lists, as YAML aliases expand them) a definition may
# hold: parsing stops when it passes this, so that a large document of small values is
# refused in about a second rather than parsed for tens of them.
MAX_VALUES = 50_000


class TooManyValues(Exception):
    """The document holds more than ``MAX_VALUES`` values."""


class _Counted:
    """Counts the nodes a loader resolves (every scalar, map and list, once each)."""

    values = 0

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        self.values += 1
        if self.values > MAX_VALUES:
            raise TooManyValues
        return super().resolve(kind, value, implicit)  # type: ignore[misc]


class _StrictLoader(_Counted, yaml.SafeLoader):
    """SafeLoader with YAML 1.2-style booleans and duplicate-key tracking."""

    duplicates: list[tuple[str, yaml.Mark]]


# libyaml's parser when PyYAML was built with it (its wheels are): the pure-Python one
# takes about ten times as long, which a definition near the size limit would feel. Its
# error messages say less ("did not find expected ','" without what it found instead), so
# a text it refuses is parsed again by the pure-Python one, which stops at the same place.
_FastBase: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", _StrictLoader)


class _FastStrictLoader(_Counted, _FastBase):  # type: ignore[valid-type,misc]
    duplicates: list[tuple[str, yaml.Mark]]


# A text libyaml refuses is parsed again by the pure-Python parser (for its clearer words)
# only when the mistake comes early enough for that to be quick.
_REPARSED_VALUES = 5_000


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    _loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in result:
            loader.duplicates.append((str(key), key_node.start_mark))
        result[key] = loader.construct_object(value_node, deep=True)
    return result


for _loader in (_StrictLoader, _FastStrictLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_document(text: str) -> tuple[object, list[Problem]]:
    """Parse text; on a syntax error the document is None and one problem explains it."""
    if text.lstrip().startswith(("{", "[")):
        document, problems = _parse_json(text)
    else:
        try:
            document, problems = _parse_yaml(text)
        except TooManyValues:
            return None, [_too_many()]
    if document is not None and _expanded(document, {}) > MAX_VALUES:
        return None, [_too_many()]
    return document, problems


def _too_many() -> Problem:
    return Problem("", f"the definition holds more than {MAX_VALUES:,} values, the limit")


def _expanded(value: object, seen: dict[int, int]) -> int:
    """How many values ``value`` holds once YAML aliases are expanded (shared parts are
    counted once per use, but walked once): what every later walk of it will meet."""
    if not isinstance(value, dict | list):
        return 1
    known = seen.get(id(value))
    if known is not None:
        return known
    seen[id(value)] = MAX_VALUES + 1  # a value that contains itself has no end
    items = value.values() if isinstance(value, dict) else value
    total = 1
    for item in items:
        total += _expanded(item, seen)
        if total > MAX_VALUES:
            break
    seen[id(value)] = total
    return total


def _parse_yaml(text: str) -> tuple[object, list[Problem]]:
    if _FastBase is not _StrictLoader:
        fast = _FastStrictLoader(text)
        fast.duplicates = []
        try:
            document = fast.get_single_data()
        except yaml.MarkedYAMLError as exc:
            if fast.values > _REPARSED_VALUES:
                return None, [_yaml_problem(text, exc)]
            # said again below, in the pure-Python parser's words
        except yaml.YAMLError:
            pass
        else:
            return document, _repeated(fast.duplicates)
        finally:
            fast.dispose()
    loader = _StrictLoader(text)
    loader.duplicates = []
    try:
        document = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        return None, [_yaml_problem(text, exc)]
    except yaml.YAMLError as exc:
        return None, [Problem("", f"not valid YAML: {_one_line(str(exc))}")]
    finally:
        loader.dispose()
    return document, _repeated(loader.duplicates)


def _repeated(duplicates: list[tuple[str, yaml.Mark]]) -> list[Problem]:
    # A top-level key (at column 0 in block style) is addressed by its name: what it held
    # first is lost, and the checks that depend on it need to know.
    return [
        Problem(
            key if mark.column == 0 else "",
            f"key {key!r} is repeated; every key must be unique",
            line=mark.line + 1,
            column=mark.column + 1,
        )
        for key, mark in duplicates
    ]


def _yaml_problem(text: str, exc: yaml.MarkedYAMLError) -> Problem:
    """The error at the line and column an editor can jump to, with that line.

    PyYAML places an unclosed bracket or quote at the end of the text, past the last line:
    the place where the unfinished construct opened is the one worth showing then.
    """
    lines = text.splitlines()

    def shown(mark: yaml.Mark | None) -> bool:
        return mark is not None and mark.line < len(lines) and bool(lines[mark.line].strip())

    mark, context_mark = exc.problem_mark, exc.context_mark
    what = exc.problem or _one_line(str(exc))
    if exc.context and shown(context_mark) and not shown(mark):
        mark = context_mark
        what += f" ({exc.context})"
    elif exc.context and context_mark is not None and shown(context_mark):
        what += f" ({exc.context} that starts at line {context_mark.line + 1})"
    elif exc.context:
        what += f" ({exc.context})"
    if mark is None:
        return Problem("", f"not valid YAML: {what}")
    line, column = mark.line, mark.column
    if not shown(mark):
        # At the end of the text: the end of its last line is where something is missing.
        before = [i for i in range(min(line, len(lines) - 1), -1, -1) if lines[i].strip()]
        if before:
            line = before[0]
            column = len(lines[line])
    excerpt = lines[line] if line < len(lines) else ""
    return Problem(
        "",
        f"not valid YAML: {what}",
        line=line + 1,
        column=column + 1,
        excerpt=excerpt,
    )


def _parse_json(text: str) -> tuple[object, list[Problem]]:
    problems: list[Problem] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                problems.append(Problem("", f"key {key!r} is repeated; every key must be unique"))
            out[key] = value
        return out

    try:
        return json.loads(text, object_pairs_hook=pairs), problems
    except json.JSONDecodeError as exc:
        lines = text.splitlines()
        excerpt = lines[exc.lineno - 1] if exc.lineno - 1 < len(lines) else ""
        return None, [
            Problem(
                "",
                f"not valid JSON: {exc.msg}",
                line=exc.lineno,
                column=exc.colno,
                excerpt=excerpt,
            )
        ]


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in message.splitlines() if part.strip())
