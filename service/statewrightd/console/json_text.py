"""Messages as the HTTP API's JSON text: protobuf's canonical JSON, whole numbers written
as integers.

A context is a ``google.protobuf.Struct``, whose numbers are all doubles, and canonical
JSON writes a double as ``2.0``. JSON itself has one kind of number, but the readers
people use do not: Python's ``json`` and jq read ``2.0`` as a float, so an ``int`` field
of a context would read back as ``2.0``. Every double that holds a whole number exactly
(within 2**53, where a double counts every integer) is written as that integer; the
value read is the same number either way.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

_EXACT = 2.0**53


def to_json(message: Message) -> str:
    # Fields at their default too (false, 0, []): a caller reading `accepted` finds false
    # rather than nothing.
    data = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    return json.dumps(_whole_numbers(data))


def _whole_numbers(value: Any) -> Any:
    kind = type(value)
    if kind is float:
        if value.is_integer() and -_EXACT <= value <= _EXACT:
            return int(value)
        return value
    if kind is dict:
        return {key: _whole_numbers(item) for key, item in value.items()}
    if kind is list:
        return [_whole_numbers(item) for item in value]
    return value
