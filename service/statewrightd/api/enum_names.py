"""Enum values in either spelling, for the doors that read them as text (the HTTP API).

The proto names every value with its enum's prefix (``WORKFLOW_STATUS_WAITING``); the CLI,
the clients and the console show the value without it (``WAITING``). Protobuf's JSON
parser knows only the first: :func:`full_enum_names` rewrites a JSON object meant for a
request message so that either spelling, in any case, parses to the same value. A value
that names nothing is left as it is, for the parser to refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message


def _snake_upper(name: str) -> str:
    """``WorkflowStatus`` -> ``WORKFLOW_STATUS``: the prefix buf's lint gives its values."""
    out = []
    for i, char in enumerate(name):
        if char.isupper() and i and not name[i - 1].isupper():
            out.append("_")
        out.append(char.upper())
    return "".join(out)


@cache
def _names(enum: EnumDescriptor) -> Mapping[str, str]:
    """Every accepted spelling of ``enum``'s values, folded to upper case -> proto name."""
    prefix = _snake_upper(enum.name) + "_"
    names: dict[str, str] = {}
    for value in enum.values:
        names[value.name.upper()] = value.name
        names.setdefault(value.name.removeprefix(prefix).upper(), value.name)
    return names


def enum_value_name(enum: EnumDescriptor, text: str) -> str | None:
    """The proto name of the value ``text`` names in either spelling, or None."""
    return _names(enum).get(text.strip().upper())


def _field(message: Descriptor, key: str) -> FieldDescriptor | None:
    return message.fields_by_name.get(key) or message.fields_by_camelcase_name.get(key)


def _rewrite(field: FieldDescriptor, value: Any) -> Any:
    if field.enum_type is not None and isinstance(value, str):
        return enum_value_name(field.enum_type, value) or value
    nested = field.message_type
    if nested is not None and isinstance(value, dict) and not _opaque(nested):
        return _rewritten(nested, value)
    return value


def _opaque(message: Descriptor) -> bool:
    """A map's entries and the well-known types (a Struct's keys are the caller's own)."""
    return message.GetOptions().map_entry or message.full_name.startswith("google.protobuf.")


def full_enum_names(message: Message, fields: Mapping[str, Any]) -> dict[str, Any]:
    """``fields`` (JSON meant for ``message``) with every enum value by its proto name."""
    return _rewritten(cast(Descriptor, message.DESCRIPTOR), fields)


def _rewritten(message: Descriptor, fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        field = _field(message, key)
        if field is None:
            out[key] = value
        elif isinstance(value, list):
            out[key] = [_rewrite(field, item) for item in value]
        else:
            out[key] = _rewrite(field, value)
    return out
