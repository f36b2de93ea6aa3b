"""A definition's search fields: values projected from each instance at every save, so
that lists can be filtered and ordered by them through an index."""

from __future__ import annotations

import re

from statewrightd.definitions.model import SearchField
from statewrightd.definitions.reading import Reading, describe
from statewrightd.domain import SearchKind

SEARCH_KEYS = {"type", "value", "description"}
# A search field is named in filters as search.<name>: the same spelling as a context field.
SEARCH_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")
MAX_SEARCH_FIELDS = 32

# The CEL result kinds that can give a value of each search kind (dyn: only known when
# the projection runs, which then stores null for a value of another kind).
_GIVES: dict[SearchKind, frozenset[str]] = {
    SearchKind.KEYWORD: frozenset({"string"}),
    SearchKind.TEXT: frozenset({"string"}),
    SearchKind.INT: frozenset({"int", "uint"}),
    SearchKind.NUMBER: frozenset({"number", "int", "uint"}),
    SearchKind.BOOL: frozenset({"bool"}),
    SearchKind.TIMESTAMP: frozenset({"string", "timestamp"}),
    SearchKind.KEYWORD_LIST: frozenset({"list"}),
}


class SearchReading(Reading):
    """The top-level `search` map of a document."""

    def search_fields(self, raw: object) -> dict[str, SearchField]:
        found: dict[str, SearchField] = {}
        if raw is None:
            return found
        if not isinstance(raw, dict):
            self.error("search", f"search must be a map of fields, not {describe(raw)}")
            return found
        if len(raw) > MAX_SEARCH_FIELDS:
            self.error(
                "search", f"{len(raw)} search fields, more than the limit of {MAX_SEARCH_FIELDS}"
            )
            return found
        for name, spec in raw.items():
            path = f"search.{name}"
            if not isinstance(name, str) or not SEARCH_NAME.match(name):
                self.error(path, "a search field name must match [a-z_][a-z0-9_]{0,62}")
                continue
            if not isinstance(spec, dict):
                self.error(path, f"a search field must be a map, not {describe(spec)}")
                continue
            self.unknown_keys(spec, SEARCH_KEYS, path)
            field = self._search_field(name, spec, path)
            if field is not None:
                found[name] = field
        return found

    def _search_field(self, name: str, spec: dict[str, object], path: str) -> SearchField | None:
        raw_kind = spec.get("type")
        kinds = [k.value for k in SearchKind]
        kind: SearchKind | None = None
        if raw_kind is None:
            self.required(f"{path}.type")
        elif raw_kind not in kinds:
            hint = self.hint(raw_kind, kinds)
            self.error(
                f"{path}.type",
                f"unknown search type {raw_kind!r} (one of {', '.join(kinds)}){hint}",
            )
        else:
            kind = SearchKind(raw_kind)
        description = spec.get("description", "")
        if not isinstance(description, str):
            self.error(f"{path}.description", "description must be a string")
            description = ""
        if "value" not in spec:
            self.required(f"{path}.value")
            return None
        compiled = self.compile(spec["value"], f"{path}.value")
        if compiled is None or kind is None:
            return None
        given = compiled.result_type.kind
        if given not in ("dyn", "null") and given not in _GIVES[kind]:
            self.error(
                f"{path}.value",
                f"search field {name!r} is {kind}, but the expression gives {given}",
            )
            return None
        return SearchField(name, kind, compiled, description)
