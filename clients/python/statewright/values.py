"""Conversion between plain Python values and ``google.protobuf.Struct``.

A Struct stores every number as a double, so ``{"attempts": 2}`` comes back as ``2.0``.
Context fields declared ``int`` are integers on the server, so :func:`from_struct` turns
integral doubles back into ``int``; a real fraction (``12.5``) stays a ``float``. The one
ambiguity is a ``number`` field that happens to hold a whole value (``3.0`` reads as ``3``),
which compares equal in Python anyway.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from google.protobuf import struct_pb2

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
JSONObject: TypeAlias = dict[str, JSONValue]

# Doubles represent every integer exactly only up to 2**53; beyond it "integral" is a guess.
_MAX_EXACT = 2**53

__all__ = ["JSONObject", "JSONValue", "from_struct", "from_value", "to_struct", "to_value"]


def to_value(value: object) -> struct_pb2.Value:
    """One Python value as a ``google.protobuf.Value``; raises TypeError for other types."""
    out = struct_pb2.Value()
    # bool first: it is a subclass of int and must not become a number.
    if value is None:
        out.null_value = struct_pb2.NULL_VALUE
    elif isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int | float):
        number = float(value)
        if not math.isfinite(number):
            raise ValueError(f"a Struct cannot hold the non-finite number {value!r}")
        out.number_value = number
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, Mapping):
        out.struct_value.CopyFrom(to_struct(value))
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out.list_value.values.extend(to_value(item) for item in value)
    else:
        raise TypeError(f"cannot convert {type(value).__name__} to a protobuf Value")
    return out


def to_struct(values: Mapping[str, object] | None) -> struct_pb2.Struct:
    """A mapping with string keys as a ``google.protobuf.Struct``."""
    struct = struct_pb2.Struct()
    for key, value in (values or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"Struct keys must be strings, not {type(key).__name__}")
        struct.fields[key].CopyFrom(to_value(value))
    return struct


def from_value(value: struct_pb2.Value) -> JSONValue:
    """A ``google.protobuf.Value`` as a plain Python value (integral doubles become int)."""
    kind = value.WhichOneof("kind")
    if kind == "bool_value":
        return value.bool_value
    if kind == "number_value":
        number = value.number_value
        if number.is_integer() and abs(number) <= _MAX_EXACT:
            return int(number)
        return number
    if kind == "string_value":
        return value.string_value
    if kind == "struct_value":
        return from_struct(value.struct_value)
    if kind == "list_value":
        return [from_value(item) for item in value.list_value.values]
    return None  # null_value, or unset


def from_struct(struct: struct_pb2.Struct) -> JSONObject:
    """A ``google.protobuf.Struct`` as a dict (integral doubles become int)."""
    return {key: from_value(value) for key, value in struct.fields.items()}
