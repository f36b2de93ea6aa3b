"""Context field types and reducers over plain JSON values.

Shared by the loader (checking defaults) and the engine (checking input and `set`
results), so that "fits the declared type" means one thing everywhere.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeAlias, cast

from statewrightd.config import MAX_NESTING as CONFIGURED_MAX_NESTING

JSONValue: TypeAlias = Any
"""A plain JSON-compatible value: str, int, float, bool, None, list, dict[str, ...]."""

# How many maps and lists may nest inside one context field's value. Every client decodes
# a response through protobuf's Struct, which spends two or three message levels per JSON
# level, and Python's and Java's decoders stop at 100 message levels (about 32 maps deep in
# a WatchWorkflowResponse): 20 keeps a wide margin in every client.
MAX_NESTING = CONFIGURED_MAX_NESTING


class FieldType(enum.StrEnum):
    STRING = "string"
    INT = "int"
    NUMBER = "number"
    BOOL = "bool"
    LIST = "list"
    MAP = "map"
    ANY = "any"


class Reducer(enum.StrEnum):
    REPLACE = "replace"
    APPEND = "append"
    MERGE = "merge"


class ValueTypeError(ValueError):
    """A value does not fit a field's declared type."""


class ValueTooDeep(ValueTypeError):
    """A value nests more maps and lists than ``MAX_NESTING``."""

    def __init__(self) -> None:
        super().__init__(f"value nests maps and lists more than {MAX_NESTING} levels deep")
        self.limit = MAX_NESTING


def describe(value: object) -> str:
    """Name a value's JSON type for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, Mapping):
        return "map"
    return type(value).__name__


def to_json(value: object, *, depth: int = 0) -> JSONValue:
    """Return a fresh plain-JSON copy of ``value``, or raise ValueTypeError.

    Tuples and read-only mappings (how definitions store defaults) become lists and
    dicts; anything that cannot round-trip through JSON (bytes, timestamps, NaN,
    non-string map keys) is refused so a snapshot is always storable. ``depth`` counts
    the maps and lists around ``value``; more than ``MAX_NESTING`` raise ValueTooDeep.
    """
    # Exact types first: this runs on every value a step sets, and the checks below
    # (a union isinstance, the Mapping ABC) cost several times more for the common case.
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueTypeError("number is not finite")
        return value
    if isinstance(value, list | tuple):
        if depth >= MAX_NESTING:
            raise ValueTooDeep
        return [to_json(v, depth=depth + 1) for v in value]
    if kind is dict or isinstance(value, Mapping):
        if depth >= MAX_NESTING:
            raise ValueTooDeep
        out: dict[str, JSONValue] = {}
        for k, v in cast("Mapping[object, object]", value).items():
            if not isinstance(k, str):
                raise ValueTypeError(f"map key {k!r} is not a string")
            out[k] = to_json(v, depth=depth + 1)
        return out
    raise ValueTypeError(f"a {describe(value)} is not a JSON value")


def freeze(value: JSONValue) -> object:
    """Deep read-only view of a JSON value, for storage inside an immutable Definition."""
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    return value


def conform(value: object, ftype: FieldType, *, nullable: bool) -> JSONValue:
    """Check ``value`` against ``ftype`` and return it as plain JSON.

    Numbers arrive from protobuf Structs as floats, so an integral float is accepted
    for an ``int`` field; ``number`` fields always hold floats so readers never have
    to handle both.
    """
    if value is None:
        if nullable or ftype is FieldType.ANY:
            return None
        raise ValueTypeError(f"null is not allowed for a {ftype} field that has a default")
    if ftype is FieldType.ANY:
        return to_json(value)
    if ftype is FieldType.STRING and isinstance(value, str):
        return value
    if ftype is FieldType.BOOL and isinstance(value, bool):
        return value
    if not isinstance(value, bool):
        if ftype is FieldType.INT:
            if isinstance(value, int):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
        if ftype is FieldType.NUMBER and isinstance(value, int | float):
            return float(to_json(value))
    if ftype is FieldType.LIST and isinstance(value, list | tuple):
        return to_json(value)
    if ftype is FieldType.MAP and isinstance(value, Mapping):
        return to_json(value)
    raise ValueTypeError(f"expected {ftype}, got {describe(value)}")


def reduce(reducer: Reducer, current: JSONValue, update: JSONValue) -> JSONValue:
    """Combine a field's current value with an update; never mutates either argument."""
    if reducer is Reducer.APPEND:
        base = list(current) if isinstance(current, list) else []
        if isinstance(update, list):
            return base + update
        return [*base, update]
    if reducer is Reducer.MERGE:
        base_map = dict(current) if isinstance(current, dict) else {}
        if not isinstance(update, dict):
            raise ValueTypeError(f"merge needs a map, got {describe(update)}")
        base_map.update(update)
        return base_map
    return update
