"""An HTTP call's input as an RPC's request message: its JSON body, its query string and
its path's variables, each read strictly so that bad input is a clear INVALID_ARGUMENT
rather than an error of the parser.

Bodies are JSON in UTF-8 (RFC 8259), sent as ``application/json``: a body of any other
type, a charset other than UTF-8, bytes that are not UTF-8, JSON that is not the request
message (unknown fields, wrong types, nesting past the parser's depth) are each refused
with the field or the problem named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from multidict import MultiMapping

from statewrightd import errors
from statewrightd.reasons import Reason

JSON = "application/json"
_UTF8 = ("utf-8", "utf8")
# Revisions and sample times are int64; a Last-Event-ID past that is not one of ours.
MAX_EVENT_ID = 2**63 - 1


def malformed(method: str, problem: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(
        f"the request is not a valid {method} request: {errors.quote(problem, 300)}",
        reason=Reason.MALFORMED_REQUEST,
        metadata={"method": method},
    )


def unsupported_media_type(kind: str, why: str) -> errors.InvalidArgument:
    # Not only tidiness: a page of another site can send a form or a plain-text POST
    # without asking first, never a JSON one (CORS), and this API answers no CORS request.
    return errors.InvalidArgument(
        f"the request body must be JSON in UTF-8, sent with Content-Type: application/json; {why}",
        reason=Reason.UNSUPPORTED_MEDIA_TYPE,
        metadata={"content_type": errors.quote(kind, 100)},
    )


def check_json_type(content_type: str | None) -> None:
    """Refuse a request whose Content-Type is not JSON in UTF-8 (absent is refused too)."""
    if content_type is None or not content_type.strip():
        raise unsupported_media_type("", "this request has no Content-Type")
    kind, _, params = content_type.partition(";")
    kind = kind.strip().lower()
    if kind != JSON:
        raise unsupported_media_type(kind, f"this one is {errors.quote(kind, 100)}")
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "charset":
            charset = value.strip().strip('"').lower()
            if charset not in _UTF8:
                raise unsupported_media_type(
                    content_type, f"JSON is UTF-8, and charset {errors.quote(charset, 40)} is not"
                )


def decode_body(raw: bytes, method: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise malformed(method, f"the body is not UTF-8 (byte {exc.start})") from None


def parse_json(text: str, message: Message, method: str) -> None:
    """``text`` (a JSON object, or nothing for every field's default) into ``message``."""
    text = text.strip() or "{}"
    if not text.startswith("{"):
        raise malformed(method, "the body must be a JSON object")
    try:
        json_format.Parse(text, message)
    except json_format.ParseError as exc:
        raise malformed(method, str(exc)) from None
    except RecursionError:
        raise malformed(method, "the JSON nests too deeply") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise malformed(method, str(exc)) from None


def _field(descriptor: Descriptor, name: str) -> FieldDescriptor | None:
    field = descriptor.fields_by_name.get(name)
    if field is not None:
        return field
    return next((f for f in descriptor.fields if f.json_name == name), None)


def query_fields(
    query: MultiMapping[str], descriptor: Descriptor, method: str, bound: Mapping[str, str]
) -> dict[str, Any]:
    """The query string as the JSON form of the request's fields: ``a.b=1`` sets a nested
    field, a repeated field takes the key once per value. A field the path binds may not be
    given again here."""
    fields: dict[str, Any] = {}
    for key in set(query.keys()):
        values = query.getall(key)
        path = key.split(".")
        target: dict[str, Any] = fields
        message: Descriptor | None = descriptor
        field: FieldDescriptor | None = None
        for depth, name in enumerate(path):
            field = _field(message, name) if message is not None else None
            if field is None:
                raise malformed(method, f"there is no field {key!r}")
            if depth < len(path) - 1:
                message = field.message_type
                target = target.setdefault(name, {})
                if not isinstance(target, dict):
                    raise malformed(method, f"{key!r} sets a field and one inside it")
        assert field is not None
        if field.name in bound or key in bound:
            raise malformed(method, f"{key} is given by the path; the query may not give it again")
        if field.is_repeated and field.message_type is None:
            target[path[-1]] = [_scalar(field, key, v, method) for v in values]
        elif len(values) != 1:
            raise malformed(method, f"{key} is given {len(values)} times")
        else:
            target[path[-1]] = _scalar(field, key, values[0], method)
    return fields


def _scalar(field: FieldDescriptor, key: str, value: str, method: str) -> Any:
    """A query value as its JSON form: text, which JSON's parser reads for every type but
    a bool (numbers, enums, durations and timestamps are read from strings)."""
    if field.type != FieldDescriptor.TYPE_BOOL:
        return value
    if value not in ("true", "false"):
        raise malformed(method, f"{key} is true or false; got {value!r}")
    return value == "true"


def parse_fields(fields: dict[str, Any], message: Message, method: str) -> None:
    try:
        json_format.ParseDict(fields, message)
    except json_format.ParseError as exc:
        raise malformed(method, str(exc)) from None
    except (ValueError, TypeError, OverflowError, RecursionError) as exc:
        raise malformed(method, str(exc)) from None


def bind_path(values: Mapping[str, str], message: Message, method: str) -> None:
    """The path's variables (string fields: http_rules admits no other) into ``message``.
    A body that names the resource too must name the same one."""
    for field_path, value in values.items():
        *outer, last = field_path.split(".")
        target = message
        for name in outer:
            target = getattr(target, name)
        current = getattr(target, last)
        if current and current != value:
            raise malformed(
                method, f"the body's {field_path} {current!r} is not the path's {value!r}"
            )
        setattr(target, last, value)


def last_event_id(text: str | None) -> int | None:
    """A ``Last-Event-ID`` header: the id of the last event a reconnecting page saw."""
    text = (text or "").strip()
    if not text:
        return None
    # isascii: '²' is a digit to str.isdigit, not to int().
    if not (text.isascii() and text.isdigit()) or len(text) > 19 or int(text) > MAX_EVENT_ID:
        raise errors.InvalidArgument(
            f"Last-Event-ID must be the id of an event of this stream (a whole number); "
            f"got {errors.quote(text, 40)}",
            reason=Reason.INVALID_FIELD,
            metadata={"field": "Last-Event-ID"},
        )
    return int(text)
