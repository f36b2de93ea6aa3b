"""An instance's search values, computed from its context at every save.

Pure and quick: the step's new context goes in, the rows of the search table come out,
and the store writes them in the step's own transaction. A field whose expression fails,
or gives a value of another kind, projects nothing (null): a projection never fails a
step, and ``failed`` is told of each such field so that it can be counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from statewrightd.definitions.cel import CelEvaluationError
from statewrightd.definitions.model import Definition, SearchField
from statewrightd.definitions.values import JSONValue
from statewrightd.domain import SearchKind
from statewrightd.store.records import SearchValue, SearchValues

Failed = Callable[[str, str], None]  # (definition, field)
NO_SEARCH: SearchValues = ()
# The longest text value a projection keeps: an index entry must stay small.
MAX_TEXT = 512


def ignore_failure(definition: str, field: str) -> None:
    return None


def project(
    definition: Definition,
    *,
    workflow_id: str,
    state: str,
    revision: int,
    context: Mapping[str, JSONValue],
    failed: Failed = ignore_failure,
) -> SearchValues:
    """Every search value of the instance in this state, in declaration order."""
    fields = definition.search_fields
    if not fields:
        return NO_SEARCH
    workflow: dict[str, JSONValue] = {
        "id": workflow_id,
        "state": state,
        "revision": revision,
        "definition": definition.name,
        "version": definition.version,
    }
    activation = definition.environment.activation(context, "", {}, workflow)
    out: list[SearchValue] = []
    for field in fields.values():
        try:
            value = field.value.evaluate(activation)
        except CelEvaluationError:
            failed(definition.name, field.name)
            continue
        if value is None:
            continue
        rows = _rows(field, value)
        if rows is None:
            failed(definition.name, field.name)
            continue
        out.extend(rows)
    return tuple(out)


def _rows(field: SearchField, value: object) -> list[SearchValue] | None:
    """The rows of one value, or None when it is not of the field's kind."""
    name, kind = field.name, field.kind
    if kind is SearchKind.KEYWORD_LIST:
        if not isinstance(value, list | tuple):
            return None
        texts = sorted({v[:MAX_TEXT] for v in value if isinstance(v, str)})
        return [SearchValue(name, text=t) for t in texts]
    if kind is SearchKind.KEYWORD:
        return [SearchValue(name, text=value[:MAX_TEXT])] if isinstance(value, str) else None
    if kind is SearchKind.TEXT:
        if not isinstance(value, str):
            return None
        return [SearchValue(name, text=value[:MAX_TEXT].lower())]
    number = to_number(kind, value)
    return None if number is None else [SearchValue(name, number=number)]


def to_number(kind: SearchKind, value: object) -> float | None:
    """A value of a numeric kind as the number the store keeps, or None."""
    if kind is SearchKind.BOOL:
        return float(value) if isinstance(value, bool) else None
    if isinstance(value, bool):
        return None
    if kind is SearchKind.TIMESTAMP:
        return _seconds(value)
    if kind is SearchKind.INT:
        return float(value) if isinstance(value, int) else None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def _seconds(value: object) -> float | None:
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()
