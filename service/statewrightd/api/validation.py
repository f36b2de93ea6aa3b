"""Request validation shared by every RPC.

Each check raises ``InvalidArgument`` naming the offending field in ErrorInfo metadata, so
a malformed request is answered INVALID_ARGUMENT before anything touches workflow state.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection
from typing import Final

from google.protobuf import duration_pb2

from statewrightd import domain, errors
from statewrightd.definitions.model import DEFINITION_NAME
from statewrightd.durations import MAX_DURATION_TEXT, too_long
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason
from statewrightd.store.filters import MAX_FILTER_LENGTH
from statewrightd.store.records import OLDEST_FIRST, ListOrder, OrderKey

# Ids are keys in URLs, logs, metrics labels and other ids (a child's
# ``<parent id>.<state>.<revision>``, a schedule's ``<schedule id>-<RFC 3339 UTC time>``):
# ASCII letters, digits and a few separators, never a space, a control character or a
# character that needs quoting. ``\Z``, not ``$``: ``$`` also matches before a final newline.
WORKFLOW_ID: Final = domain.WORKFLOW_ID
EVENT_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,127}\Z")
# Request ids take the same characters, and ``/`` and ``#`` besides: every client's worker
# builds its reports' ids from the task's name (``workflows/{id}/tasks/{n}#{attempt}#complete``).
REQUEST_ID: Final = re.compile(r"^[A-Za-z0-9._:@/#-]{1,256}\Z")

MAX_WORKFLOW_ID_LENGTH: Final = 128
MAX_DEFINITION_NAME_LENGTH: Final = 63
MAX_EVENT_LENGTH: Final = 128
# Room for a worker's id of a task of an instance whose id is as long as it may be.
MAX_REQUEST_ID_LENGTH: Final = 256
WORKFLOW_ID_CHARACTERS: Final = "letters, digits, '.', '_', '-', ':' or '@'"
REQUEST_ID_CHARACTERS: Final = "letters, digits, '.', '_', '-', ':', '@', '/' or '#'"
MAX_REASON_LENGTH: Final = 1024
_WORKFLOW_PREFIX: Final = "workflows/"
# definitions/{name}/versions/{version}: the name and up to 19 digits.
MAX_DEFINITION_RESOURCE_LENGTH: Final = 12 + MAX_DEFINITION_NAME_LENGTH + 10 + 19

MAX_VERSION: Final = 2**31 - 1
DEFAULT_PAGE_SIZE: Final = 50
MAX_PAGE_SIZE: Final = 1000


def required(field: str, value: str) -> str:
    if not value:
        raise InvalidArgument(
            f"{field} is required", reason=Reason.FIELD_REQUIRED, metadata={"field": field}
        )
    return value


def invalid(field: str, message: str, **metadata: object) -> InvalidArgument:
    return InvalidArgument(
        message, reason=Reason.INVALID_FIELD, metadata={"field": field, **metadata}
    )


def _matching(
    field: str, value: str, pattern: re.Pattern[str], must: str, *, cut: bool = False
) -> str:
    """``value`` if ``pattern`` matches it; else refused as "{field} must {must}", with the
    value shown (``cut``: quoted and cut short, for a value that may be long)."""
    if not pattern.match(value):
        shown = errors.quote(repr(value), 200) if cut else repr(value)
        raise invalid(field, f"{field} must {must}; got {shown}", value=value)
    return value


def at_most(field: str, value: str, limit: int) -> str:
    """Length first, so that no later check or message has to handle a huge value."""
    if len(value) > limit:
        raise invalid(
            field,
            f"{field} must be at most {limit} characters; got {len(value):,}",
            limit=limit,
        )
    return value


def workflow_name(value: str, field: str = "name") -> str:
    """Parses ``workflows/{workflow_id}`` and returns the id."""
    required(field, value)
    at_most(field, value, len(_WORKFLOW_PREFIX) + MAX_WORKFLOW_ID_LENGTH)
    prefix, _, workflow_id = value.partition("/")
    if prefix != "workflows" or not WORKFLOW_ID.match(workflow_id):
        raise invalid(
            field,
            f"{field} must be 'workflows/{{workflow_id}}' where the id is 1 to "
            f"{MAX_WORKFLOW_ID_LENGTH} {WORKFLOW_ID_CHARACTERS}, starting with a letter or "
            f"digit; got {errors.quote(repr(value), 200)}",
            value=value,
        )
    return workflow_id


def workflow_id(value: str, field: str = "workflow_id") -> str:
    at_most(field, value, MAX_WORKFLOW_ID_LENGTH)
    must = (
        f"be 1 to {MAX_WORKFLOW_ID_LENGTH} {WORKFLOW_ID_CHARACTERS}, starting with a letter "
        "or digit"
    )
    return _matching(field, value, WORKFLOW_ID, must, cut=True)


def definition_name(value: str, field: str = "definition") -> str:
    required(field, value)
    at_most(field, value, MAX_DEFINITION_NAME_LENGTH)
    return _matching(field, value, DEFINITION_NAME, "match [a-z][a-z0-9-]{0,62}")


def definition_resource(value: str, field: str = "name") -> tuple[str, int | None]:
    """Parses ``definitions/{name}/versions/{version}`` or ``definitions/{name}`` (latest)."""
    required(field, value)
    at_most(field, value, MAX_DEFINITION_RESOURCE_LENGTH)
    parts = value.split("/")
    ok = (
        len(parts) in (2, 4)
        and parts[0] == "definitions"
        and DEFINITION_NAME.match(parts[1]) is not None
        # isascii: '²' is a digit to str.isdigit, not to int(); versions are int32.
        and (len(parts) == 2 or (parts[2] == "versions" and _is_number(parts[3], 10)))
    )
    version = int(parts[3]) if ok and len(parts) == 4 else None
    if not ok or version == 0 or (version is not None and version > MAX_VERSION):
        raise invalid(
            field,
            f"{field} must be 'definitions/{{name}}' or 'definitions/{{name}}/versions/{{n}}' "
            f"with a positive version; got {value!r}",
            value=value,
        )
    return parts[1], version


def _is_number(text: str, digits: int) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= digits


def event_name(value: str, field: str = "event", *, allow_empty: bool = False) -> str:
    if not value:
        if allow_empty:
            return value
        return required(field, value)
    at_most(field, value, MAX_EVENT_LENGTH)
    must = "be an identifier of letters, digits, '_', '.' or '-'"
    return _matching(field, value, EVENT_NAME, must)


def request_id(value: str, field: str = "request_id") -> str:
    at_most(field, value, MAX_REQUEST_ID_LENGTH)
    if value and not REQUEST_ID.match(value):
        raise invalid(
            field,
            f"{field} must be 1 to {MAX_REQUEST_ID_LENGTH} {REQUEST_ID_CHARACTERS}; "
            f"got {errors.quote(repr(value), 200)}",
        )
    return value


def non_negative(field: str, value: int) -> int:
    if value < 0:
        raise invalid(field, f"{field} must not be negative; got {value}", value=value)
    return value


def one_of(field: str, value: int, allowed: Collection[int]) -> int:
    """An enum value this server knows; protobuf passes unknown numbers through as ints."""
    if value not in allowed:
        raise invalid(field, f"{field} has no value {value}", value=value)
    return value


def page_size(value: int, field: str = "page_size") -> int:
    non_negative(field, value)
    if value == 0:
        return DEFAULT_PAGE_SIZE
    return min(value, MAX_PAGE_SIZE)


# The columns an order_by key may name besides `search.<field>`: `name` is the workflow id,
# the tiebreaker every order ends with (in its last key's direction) unless it names it.
ORDER_COLUMNS: Final = ("create_time", "update_time", "definition", "state", "status", "name")
MAX_ORDER_KEYS: Final = 8
# One key: a field, then optionally ` desc` (AIP-132); spaces around it do not matter.
ORDER_KEY: Final = re.compile(r"^(search\.[a-z_][a-z0-9_]{0,62}|[a-z_]{1,64}) *( desc)?\Z")


def list_order(value: str, field: str = "order_by") -> ListOrder:
    """A listing's order (AIP-132): keys separated by commas, each a column of
    ORDER_COLUMNS or a search field, then optionally ` desc` (empty: oldest first)."""
    if value == "":
        return OLDEST_FIRST
    keys: list[OrderKey] = []
    for part in value.split(","):
        text = re.sub(" +", " ", part.strip())
        found = ORDER_KEY.match(text)
        if found is None:
            shown = errors.quote(repr(text), 80)
            raise _bad_order(field, f"{shown} is not a field with an optional ' desc'")
        column = found.group(1)
        if not column.startswith("search.") and column not in ORDER_COLUMNS:
            close = difflib.get_close_matches(column, ORDER_COLUMNS, n=1)
            hint = f", did you mean {close[0]}" if close else ""
            raise _bad_order(field, f"unknown field {column}{hint}")
        if any(key.column == column for key in keys):
            raise _bad_order(field, f"{column} is named twice")
        if keys and keys[-1].column == "name":
            raise _bad_order(field, "name is unique: no key can follow it")
        keys.append(OrderKey(column, descending=bool(found.group(2))))
    if len(keys) > MAX_ORDER_KEYS:
        raise _bad_order(field, f"an order has at most {MAX_ORDER_KEYS} keys")
    first = keys[0]
    return ListOrder(first.column, first.descending, then=tuple(keys[1:]))


def _bad_order(field: str, problem: str) -> InvalidArgument:
    return InvalidArgument(
        f"{field}: {problem}; an order is keys separated by commas, each one of"
        f" {', '.join(ORDER_COLUMNS)} or search.<field>, with an optional ' desc'",
        reason=Reason.INVALID_ORDER_BY,
        metadata={"field": field, "problem": problem, "allowed": ", ".join(ORDER_COLUMNS)},
    )


def list_filter(value: str, field: str = "filter") -> str:
    """A list filter's text, bounded; its grammar and fields are checked where the search
    fields are known (app.reads)."""
    return at_most(field, value, MAX_FILTER_LENGTH)


def id_prefix(value: str, field: str = "id_prefix") -> str | None:
    """A listing's workflow id prefix (None: any id): the start of an id, so an id's
    characters, beginning as an id does."""
    return workflow_id(value, field) if value else None


def bad_page_token(field: str = "page_token") -> InvalidArgument:
    return InvalidArgument(
        f"{field} is malformed, or from another listing; start again without it",
        reason=Reason.INVALID_PAGE_TOKEN,
        metadata={"field": field},
    )


def reason_text(value: str, field: str = "reason") -> str:
    return at_most(field, value, MAX_REASON_LENGTH)


def delay(field: str, value: duration_pb2.Duration) -> float:
    """A delay's seconds: not negative, and no longer than the longest wait of a timer."""
    if value.seconds < 0 or value.nanos < 0:
        raise invalid(field, f"{field} must not be negative")
    seconds = value.seconds + value.nanos / 1e9
    if too_long(seconds):
        raise invalid(field, f"{field} must be at most {MAX_DURATION_TEXT}")
    return seconds
