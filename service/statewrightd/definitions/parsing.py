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


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2-style booleans and duplicate-key tracking."""

    duplicates: list[tuple[str, int]]


_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StrictLoader.add_implicit_resolver(
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
            loader.duplicates.append((str(key), key_node.start_mark.line + 1))
        result[key] = loader.construct_object(value_node, deep=True)
    return result


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_document(text: str) -> tuple[object, list[Problem]]:
    """Parse text; on a syntax error the document is None and one problem explains it."""
    if text.lstrip().startswith(("{", "[")):
        return _parse_json(text)
    loader = _StrictLoader(text)
    loader.duplicates = []
    try:
        document = loader.get_single_data()
    except yaml.YAMLError as exc:
        return None, [Problem("", f"not valid YAML: {_one_line(str(exc))}")]
    finally:
        loader.dispose()
    problems = [
        Problem("", f"key {key!r} is repeated (line {line}); every key must be unique")
        for key, line in loader.duplicates
    ]
    return document, problems


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
        return None, [Problem("", f"not valid JSON: {exc}")]


def _one_line(message: str) -> str:
    return " ".join(part.strip() for part in message.splitlines() if part.strip())
