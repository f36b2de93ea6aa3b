"""List filters in the AIP-160 syntax, compiled to parameterised SQL (or run in Python
for the in-memory store).

``status = WAITING AND (search.customer = "c-42" OR search.amount >= 100)``: comparisons
(``= != < <= > >=``, and ``:`` for "has": containment in a text field, membership in a
keyword list, equality elsewhere), ``AND``, ``OR``, ``NOT`` (or ``-``) and parentheses,
over the instance's own columns and its definition's search fields, or over a task's
columns (a Subject says which). The grammar is lark's; a value only ever reaches the
database as a parameter, and a field name only as one of the columns below, so no text of
a filter is ever part of a statement.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import lark

from statewrightd.domain import STATUSES, TEXT_KINDS, SearchKind, TaskStatus
from statewrightd.errors import InvalidArgument
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord, SearchValues, TaskRecord

MAX_FILTER_LENGTH: Final = 2000
MAX_TERMS: Final = 50

_GRAMMAR = r"""
?start: expr
?expr: or_
?or_: and_ (_OR and_)*
?and_: unary (_AND unary)*
?unary: _NOT unary -> not_
      | "-" unary -> not_
      | "(" expr ")"
      | compare
compare: FIELD OP value
?value: STRING | BARE
FIELD: /[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?/
OP: "<=" | ">=" | "!=" | "=" | "<" | ">" | ":"
STRING: /"(?:[^"\\]|\\.)*"/
BARE: /[^\s()"=<>!]+/
_AND: "AND"
_OR: "OR"
_NOT: "NOT"
%import common.WS
%ignore WS
"""
_PARSER = lark.Lark(_GRAMMAR, parser="lalr", propagate_positions=True)

# The instance columns a filter may name, and the kind of value each compares with.
# (Spelled unlike every SearchKind: a kind is either a column's or a search field's.)
COLUMNS: Final = {
    "definition": "string",
    "version": "integer",
    "state": "string",
    "status": "status",
    "create_time": "time",
    "update_time": "time",
    # A child's parent (`workflows/{id}` or the id): read from its parent link, so
    # ``parent = "workflows/p1"`` lists p1's children.
    "parent": "workflow",
    # Whether an operator paused it (`paused = true`): its pause, read as set or not.
    "paused": "flag",
}
_ORDERED_KINDS = {"integer", "time", "string", SearchKind.INT, SearchKind.NUMBER}
_ORDERED_KINDS |= {SearchKind.TIMESTAMP, SearchKind.KEYWORD}
# A task's columns a filter may name (ListTasks). `workflow` is the instance's resource
# name (`workflows/{id}`, or the bare id), stored as workflow_id; `definition` is its
# instance's (read through the instance, by id).
TASK_COLUMNS: Final = {
    "queue": "string",
    "definition": "string",
    "workflow": "workflow",
    "state": "string",
    "status": "task_status",
    "attempt": "integer",
    "priority": "integer",
    "revision": "integer",
    "concurrency_key": "string",
    "schedule_time": "time",
    "deadline": "time",
    "lease_expire_time": "time",
    "update_time": "time",
}
TASK_STATUSES: Final = frozenset(TaskStatus)


@dataclass(frozen=True, slots=True)
class Subject:
    """What a filter is over: the fields it may name (name -> kind), the column of each
    field whose column is not its name, and the columns that may be NULL (a comparison
    of NULL is false, so that NOT of it is true, in SQL as in Python)."""

    columns: Mapping[str, str]
    renamed: Mapping[str, str]
    nullable: frozenset[str]
    # Columns of the instance a row belongs to (by workflow_id), not of the row's table.
    of_instance: frozenset[str] = frozenset()

    def column(self, field: str) -> str:
        return self.renamed.get(field, field)


INSTANCES: Final = Subject(COLUMNS, {}, frozenset())
TASKS: Final = Subject(
    TASK_COLUMNS,
    {"workflow": "workflow_id"},
    frozenset({"lease_expire_time", "concurrency_key"}),
    of_instance=frozenset({"definition"}),
)


@dataclass(frozen=True, slots=True)
class Compare:
    field: str  # a column of COLUMNS, or "search.<name>"
    op: str
    value: Any  # str, int, float or an aware datetime, as the field's kind wants
    kind: str  # a COLUMNS kind, or a SearchKind


@dataclass(frozen=True, slots=True)
class Not:
    term: Node


@dataclass(frozen=True, slots=True)
class Both:
    """AND (all) or OR (any) of the terms."""

    all: bool
    terms: tuple[Node, ...]


Node = Compare | Not | Both


@dataclass(frozen=True, slots=True)
class Filter:
    """A checked filter: ``text`` as given (it binds page tokens), ``root`` its tree."""

    text: str
    root: Node

    @property
    def searches(self) -> bool:
        """Whether it reads any search field (the Citus store has none to read)."""
        return _any_search(self.root)


def _any_search(node: Node) -> bool:
    if isinstance(node, Compare):
        return node.field.startswith("search.")
    if isinstance(node, Not):
        return _any_search(node.term)
    return any(_any_search(t) for t in node.terms)


def invalid(problem: str, position: int, field: str = "filter") -> InvalidArgument:
    return InvalidArgument(
        f"{field}: {problem} (at position {position})",
        reason=Reason.INVALID_FILTER,
        metadata={"field": field, "position": position, "problem": problem},
    )


def parse_filter(
    text: str, search: Mapping[str, SearchKind], subject: Subject = INSTANCES
) -> Filter | None:
    """The filter ``text`` (None when blank) over the columns of ``subject`` and the search
    fields ``search`` (name -> kind), or INVALID_ARGUMENT naming the first problem's
    position."""
    if not text.strip():
        return None
    if len(text) > MAX_FILTER_LENGTH:
        raise invalid(f"a filter is at most {MAX_FILTER_LENGTH} characters", MAX_FILTER_LENGTH)
    if "\x00" in text:
        # No database stores the character, so no value can equal one that holds it.
        raise invalid("a filter cannot hold the NUL character", text.index("\x00"))
    try:
        tree = _PARSER.parse(text)
    except lark.exceptions.UnexpectedCharacters as exc:
        at = exc.pos_in_stream or 0
        raise invalid(f"unexpected character {text[at]!r}", at) from None
    except lark.exceptions.UnexpectedToken as exc:
        token = exc.token
        if token.type == "$END":
            raise invalid("the filter ends too early", len(text)) from None
        position = token.start_pos if token.start_pos is not None else 0
        raise invalid(f"unexpected {str(token)!r}", position) from None
    except lark.exceptions.UnexpectedEOF:
        raise invalid("the filter ends too early", len(text)) from None
    except lark.exceptions.UnexpectedInput as exc:  # any other way the text fails to parse
        raise invalid("the filter does not parse", max(0, exc.pos_in_stream or 0)) from None
    counted = [0]
    return Filter(text, _build(tree, search, subject.columns, counted))


def _build(
    tree: Any, search: Mapping[str, SearchKind], columns: Mapping[str, str], counted: list[int]
) -> Node:
    counted[0] += 1
    if counted[0] > MAX_TERMS:
        raise invalid(f"a filter has at most {MAX_TERMS} terms", _start(tree))
    rule = tree.data
    if rule == "not_":
        return Not(_build(tree.children[0], search, columns, counted))
    if rule in ("or_", "and_"):
        terms = tuple(_build(child, search, columns, counted) for child in tree.children)
        return Both(rule == "and_", terms)
    field_token, op_token, value_token = (
        child for child in tree.children if isinstance(child, lark.Token)
    )
    return _compare(field_token, op_token, value_token, search, columns)


def _start(tree: lark.Tree[Any]) -> int:
    return int(getattr(tree.meta, "start_pos", 0) or 0)


def _compare(
    field_token: lark.Token,
    op_token: lark.Token,
    value_token: lark.Token,
    search: Mapping[str, SearchKind],
    columns: Mapping[str, str],
) -> Compare:
    name, op = str(field_token), str(op_token)
    at = field_token.start_pos or 0
    kind: str
    if name.startswith("search."):
        short = name.removeprefix("search.")
        found = search.get(short)
        if found is None:
            close = difflib.get_close_matches(short, list(search), n=1)
            hint = f", did you mean search.{close[0]}" if close else ""
            raise invalid(f"unknown field {name}{hint}", at)
        kind = found
    else:
        column = columns.get(name)
        if column is None:
            known = [*columns, *(f"search.{s}" for s in search)]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f", did you mean {close[0]}" if close else ""
            raise invalid(f"unknown field {name}{hint}", at)
        kind = column
    if op in ("<", "<=", ">", ">=") and kind not in _ORDERED_KINDS:
        raise invalid(f"{name} cannot be compared with {op}", op_token.start_pos or 0)
    raw = str(value_token)
    if value_token.type == "STRING":
        raw = _unquote(raw)
    value = _value(name, kind, raw, value_token.start_pos or 0)
    return Compare(name, op, value, kind)


def _unquote(raw: str) -> str:
    out, chars, i = [], raw[1:-1], 0
    while i < len(chars):
        if chars[i] == "\\" and i + 1 < len(chars):
            i += 1
        out.append(chars[i])
        i += 1
    return "".join(out)


def _value(name: str, kind: str, raw: str, at: int) -> Any:
    if kind in ("string", SearchKind.KEYWORD, SearchKind.KEYWORD_LIST):
        return raw
    if kind is SearchKind.TEXT:
        return raw.lower()
    if kind in ("status", "task_status"):
        statuses = STATUSES if kind == "status" else TASK_STATUSES
        if raw.upper() not in statuses:
            allowed = ", ".join(sorted(statuses))
            raise invalid(f"{name} is one of {allowed}, not {raw!r}", at)
        return raw.upper()
    if kind == "workflow":
        return raw.removeprefix("workflows/")
    if kind == "flag":
        if raw not in ("true", "false"):
            raise invalid(f"{name} wants true or false, not {raw!r}", at)
        return raw == "true"
    if kind in ("time", SearchKind.TIMESTAMP):
        moment = _time(raw)
        if moment is None:
            raise invalid(f"{name} wants an RFC 3339 time such as 2026-01-02T15:04:05Z", at)
        return moment if kind == "time" else moment.timestamp()
    if kind is SearchKind.BOOL:
        if raw not in ("true", "false"):
            raise invalid(f"{name} wants true or false, not {raw!r}", at)
        return 1.0 if raw == "true" else 0.0
    if kind in ("integer", SearchKind.INT):
        try:
            whole = int(raw)
        except ValueError:
            raise invalid(f"{name} wants an integer, not {raw!r}", at) from None
        return whole if kind == "integer" else float(whole)
    try:
        number = float(raw)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise invalid(f"{name} wants a number, not {raw!r}", at)
    return number


def _time(raw: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None or "T" not in raw.upper():
        return None
    return moment.astimezone(UTC)


# -- SQL ---------------------------------------------------------------------------------

_SQL_OPS: Final = {"=": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class SqlFilter:
    """A filter as a WHERE condition over workflow_instances (or the table ``subject`` is
    of) and its parameters, named ``f0``, ``f1``... in the backend's ``named`` placeholder
    style (a statement's other parameters have other names)."""

    def __init__(self, named: Callable[[str], str], subject: Subject = INSTANCES) -> None:
        self._named = named
        self._subject = subject
        self.params: dict[str, Any] = {}

    def _param(self, value: Any) -> str:
        name = f"f{len(self.params)}"
        self.params[name] = value
        return self._named(name)

    def condition(self, node: Node) -> str:
        if isinstance(node, Not):
            return f"NOT ({self.condition(node.term)})"
        if isinstance(node, Both):
            if not node.all and all(_search_only(t) for t in node.terms):
                # One set of ids, the union of each term's index range: the planner turns
                # an OR of IN subqueries into a scan of every instance tested against each.
                return f"workflow_id IN ({' UNION '.join(self._ids(t) for t in node.terms)})"
            if node.all:
                return "(" + " AND ".join(self._all_of(node.terms)) + ")"
            return "(" + " OR ".join(self.condition(t) for t in node.terms) + ")"
        if node.field.startswith("search."):
            return f"workflow_id IN ({self._ids(node)})"
        assert node.field in self._subject.columns  # only ever a name from the whitelist
        if node.field == "parent" and self._subject is INSTANCES:
            negated = "NOT " if node.op == "!=" else ""
            value = self._param(node.value)
            return (
                f"workflow_id {negated}IN "
                f"(SELECT workflow_id FROM workflow_children WHERE parent_id = {value})"
            )
        if node.field == "paused" and self._subject is INSTANCES:
            paused = (node.value is True) != (node.op == "!=")
            return f"pause IS {'NOT ' if paused else ''}NULL"
        column = self._subject.column(node.field)
        # A time stays a datetime: the repository binds it as its database stores times.
        test = f"{column} {_SQL_OPS.get(node.op, '=')} {self._param(node.value)}"
        if node.field in self._subject.nullable:
            return f"({column} IS NOT NULL AND {test})"
        if node.field in self._subject.of_instance:
            return f"workflow_id IN (SELECT workflow_id FROM workflow_instances WHERE {test})"
        return test

    def _all_of(self, terms: tuple[Node, ...]) -> list[str]:
        """The conditions of an AND: the comparisons of one single-valued search field in
        one range of its index (``search.total >= 5 AND search.total < 9``), not one set
        of ids per comparison to intersect."""
        ranges: dict[str, list[Compare]] = {}
        for term in terms:
            if _in_range(term):
                assert isinstance(term, Compare)
                ranges.setdefault(term.field, []).append(term)
        out: list[str] = []
        for term in terms:
            if not _in_range(term):
                out.append(self.condition(term))
            elif isinstance(term, Compare) and term.field in ranges:
                out.append(f"workflow_id IN ({self._range(ranges.pop(term.field))})")
        return out

    def _range(self, compares: list[Compare]) -> str:
        first = compares[0]
        field = self._param(first.field.removeprefix("search."))
        column = "text" if first.kind in TEXT_KINDS else "number"
        tests = [f"{column} {_SQL_OPS.get(c.op, '=')} {self._param(c.value)}" for c in compares]
        return f"SELECT workflow_id FROM workflow_search WHERE field = {field} AND " + (
            " AND ".join(tests)
        )

    def _ids(self, node: Node) -> str:
        """The ids of the instances a search comparison, or an OR of them, matches."""
        if isinstance(node, Both):
            return " UNION ".join(self._ids(t) for t in node.terms)
        assert isinstance(node, Compare)
        field = self._param(node.field.removeprefix("search."))
        kind = node.kind
        column = "text" if kind in TEXT_KINDS else "number"
        if node.op == ":" and kind is SearchKind.TEXT:
            pattern = "%" + _like_escaped(str(node.value)) + "%"
            test = f"text LIKE {self._param(pattern)} ESCAPE '\\'"
        else:
            test = f"{column} {_SQL_OPS.get(node.op, '=')} {self._param(node.value)}"
        return f"SELECT workflow_id FROM workflow_search WHERE field = {field} AND {test}"


def _in_range(node: Node) -> bool:
    """Whether ``node`` compares a single-valued search field with its index's order (so
    that an AND's comparisons of that field are one range of the index)."""
    return (
        isinstance(node, Compare)
        and node.field.startswith("search.")
        and node.kind is not SearchKind.KEYWORD_LIST
        and not (node.op == ":" and node.kind is SearchKind.TEXT)
    )


def _search_only(node: Node) -> bool:
    """Whether ``node`` is a search comparison, or an OR of them."""
    if isinstance(node, Compare):
        return node.field.startswith("search.")
    return isinstance(node, Both) and not node.all and all(_search_only(t) for t in node.terms)


def _like_escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# -- in Python (the in-memory store) -------------------------------------------------------


class InstanceTask:
    """A task with its instance's columns (``definition``), as the in-memory store
    evaluates a task filter: the task's attributes, and the instance's where it has none."""

    __slots__ = ("_task", "definition")

    def __init__(self, task: TaskRecord, definition: str) -> None:
        self._task = task
        self.definition = definition

    def __getattr__(self, name: str) -> Any:
        return getattr(self._task, name)


def matches(
    node: Node,
    record: InstanceRecord | TaskRecord | InstanceTask,
    search: SearchValues,
    subject: Subject = INSTANCES,
    parent: str | None = None,
) -> bool:
    """What the SQL of ``node`` answers for one instance (or task, with its ``subject``);
    ``parent``: the instance's parent's id, if it is a child."""
    if isinstance(node, Not):
        return not matches(node.term, record, search, subject, parent)
    if isinstance(node, Both):
        found = (matches(t, record, search, subject, parent) for t in node.terms)
        return all(found) if node.all else any(found)
    if node.field == "parent" and subject is INSTANCES:
        return bool((parent == node.value) != (node.op == "!="))
    if node.field == "paused" and subject is INSTANCES:
        paused = getattr(record, "pause", None) is not None
        return (paused == bool(node.value)) != (node.op == "!=")
    if node.field.startswith("search."):
        name = node.field.removeprefix("search.")
        values = [
            (v.text if node.kind in TEXT_KINDS else v.number) for v in search if v.field == name
        ]
        if node.op == ":" and node.kind is SearchKind.TEXT:
            return any(node.value in str(v) for v in values)
        return any(v is not None and _holds(v, node.op, node.value) for v in values)
    value = getattr(record, subject.column(node.field))
    return value is not None and _holds(value, node.op, node.value)


def _holds(left: Any, op: str, right: Any) -> bool:
    if op in ("=", ":"):
        return bool(left == right)
    if op == "!=":
        return bool(left != right)
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)
