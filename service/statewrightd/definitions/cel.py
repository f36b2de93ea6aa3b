"""The one place that knows which CEL library is used.

Everything else sees three things: an :class:`Environment` built from the declared
context fields, :class:`CompiledExpression` (compiled and type-checked once, at load
time) and :func:`Environment.activation` (the variables of one evaluation). Swapping
the library means rewriting this module only.

The library is ``cel-expr-python`` (Google's bindings of cel-cpp), chosen because it
has the real CEL type checker. Variables are declared as qualified names
(``context.topic``, ``event.payload``, ``workflow.revision``), which the checker
resolves as identifiers, so a reference to an undeclared context field is a compile
error rather than a runtime surprise, and every declared field carries its CEL type.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from types import MappingProxyType
from typing import Any

from cel_expr_python import cel as _cel

from statewrightd.definitions.cost import (
    COST_LIMIT_NS,
    ITERATION_BUDGET,
    MEMORY_LIMIT_BYTES,
    Estimate,
    Node,
    estimate,
    needs_estimate,
    shape_of,
)
from statewrightd.definitions.values import FieldType, JSONValue

_T = _cel.Type

_FIELD_TYPES: dict[FieldType, Any] = {
    FieldType.STRING: _T.STRING,
    FieldType.INT: _T.INT,
    FieldType.NUMBER: _T.DOUBLE,
    FieldType.BOOL: _T.BOOL,
    FieldType.LIST: _T.List(_T.DYN),
    FieldType.MAP: _T.Map(_T.STRING, _T.DYN),
    FieldType.ANY: _T.DYN,
}

_EVENT_VARIABLES: dict[str, Any] = {
    "event.name": _T.STRING,
    "event.payload": _T.Map(_T.STRING, _T.DYN),
}

_WORKFLOW_VARIABLES: dict[str, Any] = {
    "workflow.id": _T.STRING,
    "workflow.state": _T.STRING,
    "workflow.revision": _T.INT,
    "workflow.definition": _T.STRING,
    "workflow.version": _T.INT,
}

# CEL reserved words cannot follow a dot in an expression, so they cannot be field names.
RESERVED_WORDS = frozenset(
    {
        "as", "break", "const", "continue", "else", "false", "for", "function", "if",
        "import", "in", "let", "loop", "package", "namespace", "null", "return", "true",
        "var", "void", "while",
    }
)  # fmt: skip


class CelCompileError(ValueError):
    """The expression does not parse or does not type-check."""


class CelEvaluationError(RuntimeError):
    """The expression failed at run time (no such key, division by zero, bad operand)."""


# cel-cpp stops an evaluation after ITERATION_BUDGET comprehension iterations (map,
# filter, all, exists, exists_one), summed over the whole expression, nested ones
# multiplied: the library's fixed budget. Time and memory are bounded before evaluating
# (statewrightd.definitions.cost), since an evaluation cannot be stopped once started.


class CelBudgetExceeded(CelEvaluationError):
    """The evaluation would exceed, or ran out of, its budget: ``budget`` says which
    (``iterations``, ``time`` or ``memory``) and ``limit`` its size."""

    def __init__(self, budget: str = "iterations", found: Estimate | None = None) -> None:
        if budget == "time" and found is not None:
            message = (
                f"the expression would take about {found.time_ns / 1e6:,.0f} ms with these "
                f"values, more than its budget of {COST_LIMIT_NS / 1e6:,.0f} ms"
            )
            limit = f"{COST_LIMIT_NS / 1e6:g}ms"
        elif budget == "memory" and found is not None:
            message = (
                f"the expression could build values of {found.memory_bytes:,} bytes with "
                f"these values, more than its budget of {MEMORY_LIMIT_BYTES:,}"
            )
            limit = str(MEMORY_LIMIT_BYTES)
        else:
            message = (
                f"the expression ran more than {ITERATION_BUDGET:,} comprehension "
                "iterations, its evaluation budget"
            )
            limit = str(ITERATION_BUDGET)
        super().__init__(message)
        self.budget = budget
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ResultType:
    """The statically known type of an expression, in library-neutral terms.

    ``kind`` is one of: string int uint number bool list map null dyn bytes timestamp
    duration other. ``map_key`` is the key kind for maps (``string``, ``dyn``...).
    """

    kind: str
    map_key: str = ""


_KINDS = {
    "STRING": "string",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "number",
    "BOOL": "bool",
    "NULL": "null",
    "null_type": "null",
    "DYN": "dyn",
    "BYTES": "bytes",
    "TIMESTAMP": "timestamp",
    "DURATION": "duration",
}


def _result_type(cel_type: Any) -> ResultType:
    name: str = cel_type.name()
    if name.startswith("LIST<"):
        return ResultType("list")
    if name.startswith("MAP<"):
        key = name[4:].split(",", 1)[0].strip()
        return ResultType("map", _KINDS.get(key, "other"))
    return ResultType(_KINDS.get(name, "other"))


@dataclass(frozen=True, slots=True, eq=False)
class CompiledExpression:
    source: str
    result_type: ResultType
    _program: Any
    # The variables the source mentions, as (CEL name, scope, key in that scope): cel-cpp
    # converts every activation entry on each evaluation, so only these are passed, and
    # they are read straight from the step's own mappings rather than from a copy.
    _bindings: tuple[tuple[str, int, str], ...]

    # The syntax tree and its calls' overloads when an evaluation can cost more than its
    # inputs' size (it has a comprehension): each evaluation is then estimated first.
    # None: never needed; _UNREAD: not read yet.
    _costed: tuple[Node, Mapping[int, tuple[str, ...]]] | None = None

    def evaluate(self, activation: Activation) -> JSONValue:
        """Evaluate; the result is plain Python. Raises CelEvaluationError, and
        CelBudgetExceeded (without evaluating) when it would cost more than its budget."""
        scopes = (activation.context, activation.event, activation.workflow, activation.result)
        data: dict[str, object] = {}
        for name, scope, key in self._bindings:
            values = scopes[scope]
            if not key:
                data[name] = values  # a variable that is its whole scope (result)
            elif key in values:
                data[name] = values[key]
        costed = self._costed
        if costed is _UNREAD:
            costed = _syntax_tree(self._program.serialize())
            costed = costed if needs_estimate(costed[0]) else None
            object.__setattr__(self, "_costed", costed)
        if costed is not None:
            tree, overloads = costed
            found = estimate(tree, overloads, {k: shape_of(v) for k, v in data.items()})
            budget = found.exceeded()
            if budget is not None:
                raise CelBudgetExceeded(budget, found)
        try:
            value = self._program.eval(data=data)
        except RuntimeError as exc:
            # cel-cpp reports what stops an evaluation as a whole (its budget) by raising,
            # not as an error value: it is still this expression failing, never the caller.
            if "budget exceeded" in str(exc).lower():
                raise CelBudgetExceeded from None
            raise CelEvaluationError(_clean_message(str(exc))) from None
        if value.type() == _T.ERROR:
            raise CelEvaluationError(str(value.value()))
        return value.plain_value()


_SCHEDULE_VARIABLES: dict[str, Any] = {
    "schedule.id": _T.STRING,
    "schedule.fire_time": _T.TIMESTAMP,
    "schedule.nominal_time": _T.TIMESTAMP,
}


@cache
def _schedule_env() -> Any:
    return _cel.NewEnv(variables=_SCHEDULE_VARIABLES)


class ScheduleExpression:
    """A schedule's input expression: CEL over ``schedule.id``, ``schedule.fire_time`` and
    ``schedule.nominal_time`` (timestamps), and nothing else. A timestamp it gives comes
    out as RFC 3339 text, a duration as seconds: what a context field can hold."""

    def __init__(self, source: str) -> None:
        try:
            self._program = _schedule_env().compile(source)
        except RuntimeError as exc:
            raise CelCompileError(_clean_message(str(exc))) from None

    def evaluate(self, schedule_id: str, fire_time: datetime, nominal_time: datetime) -> JSONValue:
        data = {
            "schedule.id": schedule_id,
            "schedule.fire_time": fire_time,
            "schedule.nominal_time": nominal_time,
        }
        try:
            value = self._program.eval(data=data)
        except RuntimeError as exc:
            raise CelEvaluationError(_clean_message(str(exc))) from None
        if value.type() == _T.ERROR:
            raise CelEvaluationError(str(value.value()))
        return _plain(value.plain_value())


def _plain(value: Any) -> JSONValue:
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    result: JSONValue = value
    return result


# A variable an expression may read: a scope, or a scope's field (``context . topic``);
# a string literal that looks like one only binds a variable that is not read.
_REFERENCE = re.compile(
    r"\b(context|event|workflow|result|item|index|results|failures)\b(?:\s*\.\s*([A-Za-z_]\w*))?"
)
# A map state's variables (see Environment): each a key of the ``result`` scope.
_FAN_OUT_VARIABLES: dict[str, dict[str, Any]] = {
    "input": {"item": _T.DYN, "index": _T.INT},
    "apply": {"results": _T.List(_T.DYN), "failures": _T.List(_T.DYN)},
}
_ITEM_NAMES = frozenset(n for names in _FAN_OUT_VARIABLES.values() for n in names)
_MACRO = re.compile(r"\.\s*(?:map|filter|all|exists|exists_one)\s*\(")
_CONTEXT, _EVENT, _WORKFLOW, _RESULT = 0, 1, 2, 3
_SCOPES = {"context": _CONTEXT, "event": _EVENT, "workflow": _WORKFLOW, "result": _RESULT}
_NO_RESULT: Mapping[str, JSONValue] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Activation:
    """Variables of one evaluation, by scope; opaque outside this module."""

    context: Mapping[str, JSONValue]
    event: Mapping[str, object]
    workflow: Mapping[str, JSONValue]
    result: Mapping[str, JSONValue]


class Environment:
    """Declarations shared by every expression of one definition."""

    def __init__(
        self,
        fields: Mapping[str, tuple[FieldType, bool]],
        *,
        with_result: bool = False,
        open_context: bool = False,
        fan_out: str = "",
    ) -> None:
        """``fields`` maps a context field name to (type, nullable).

        A nullable field (declared without a default) is declared as ``dyn``: the CEL
        checker has no nullable primitives usable with plain values, and ``dyn`` keeps
        ``context.score != null && context.score > 0.5`` expressible. ``with_result``
        declares ``result``, a task's result, which only a task state's ``apply`` sees.
        ``open_context`` declares ``context`` itself as a map of anything, for checking
        the rest of a definition whose context declaration could not be read.
        ``fan_out`` declares the variables of a ``map`` state: ``"input"`` its ``item``
        and ``index`` (an item's input), ``"apply"`` its ``results`` and ``failures``
        (the join's lists); their values travel in the ``result`` scope.
        """
        variables: dict[str, Any] = {}
        for name, (ftype, nullable) in fields.items():
            variables[f"context.{name}"] = _T.DYN if nullable else _FIELD_TYPES[ftype]
        if open_context:
            variables["context"] = _T.Map(_T.STRING, _T.DYN)
        variables.update(_EVENT_VARIABLES)
        variables.update(_WORKFLOW_VARIABLES)
        if with_result:
            variables["result"] = _T.Map(_T.STRING, _T.DYN)
        if fan_out:
            variables.update(_FAN_OUT_VARIABLES[fan_out])
        self.names: tuple[str, ...] = tuple(variables)
        self._env = _cel.NewEnv(variables=variables)

    def compile(self, source: str) -> CompiledExpression:
        try:
            program = self._env.compile(source)
        except RuntimeError as exc:
            raise CelCompileError(_clean_message(str(exc))) from None
        mentioned = set()
        for scope, key in _REFERENCE.findall(source):
            mentioned.add(scope)
            mentioned.add(f"{scope}.{key}")
        bindings = tuple(
            (name, _RESULT, name)
            if name in _ITEM_NAMES
            else (name, _SCOPES[name.partition(".")[0]], name.partition(".")[2])
            for name in self.names
            if name in mentioned
        )
        compiled = CompiledExpression(
            source, _result_type(program.return_type()), program, bindings
        )
        # Only a comprehension can cost more than its inputs' size; its tree is read at
        # the first evaluation (reading it takes longer than compiling, and most
        # expressions of a large definition are never evaluated by a given process).
        if _MACRO.search(source):
            object.__setattr__(compiled, "_costed", _UNREAD)
        return compiled

    def activation(
        self,
        context: Mapping[str, JSONValue],
        event_name: str,
        payload: Mapping[str, JSONValue],
        workflow: Mapping[str, JSONValue],
        result: Mapping[str, JSONValue] = _NO_RESULT,
    ) -> Activation:
        """``context`` must hold only declared fields (the engine's contexts do)."""
        return Activation(context, {"name": event_name, "payload": payload}, workflow, result)


def _clean_message(raw: str) -> str:
    """Turn cel-cpp's multi-line report into one plain sentence per issue."""
    raw = raw.removeprefix("INVALID_ARGUMENT: ")
    lines = []
    for raw_line in raw.splitlines():
        line = raw_line.strip()
        if line.startswith("ERROR: <input>:"):
            # "ERROR: <input>:1:8: undeclared reference to ..." -> "at 1:8: undeclared ..."
            rest = line.removeprefix("ERROR: <input>:")
            pos, _, msg = rest.partition(": ")
            msg = msg.replace(" (in container '')", "")
            lines.append(f"{msg} (at {pos})")
    return "; ".join(lines) if lines else raw.splitlines()[0]


# -- the checked syntax tree ----------------------------------------------------------------
#
# ``Expression.serialize`` gives a google.protobuf.Any holding a cel.expr.CheckedExpr, a
# published and stable format. Its few fields that costs need are read straight from
# the wire format (field numbers from cel/expr/syntax.proto and checked.proto), which
# needs no generated code for a message the server never builds.


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of each field: ints for varints, bytes for the rest."""
    out: list[tuple[int, int | bytes]] = []
    at, end = 0, len(data)
    while at < end:
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            length, at = _varint(data, at)
            value, at = data[at : at + length], at + length
        elif wire == 1:
            value, at = data[at : at + 8], at + 8
        elif wire == 5:
            value, at = data[at : at + 4], at + 4
        else:
            raise ValueError(f"unexpected wire type {wire}")
        out.append((number, value))
    return out


def _bytes(value: int | bytes) -> bytes:
    assert isinstance(value, bytes)
    return value


_UNREAD: Any = (Node("const"), {})


def _syntax_tree(serialized: bytes) -> tuple[Node, Mapping[int, tuple[str, ...]]]:
    """The checked expression's tree, and the overloads chosen for its ``+`` calls."""
    checked = b""
    for number, value in _fields(serialized):
        if number == 2:  # Any.value
            checked = _bytes(value)
    expr = b""
    references: list[bytes] = []
    for number, value in _fields(checked):
        if number == 2:  # reference_map entry: key id, value Reference
            references.append(_bytes(value))
        elif number == 4:
            expr = _bytes(value)
    wanted: set[int] = set()
    tree = _node(expr, wanted)
    overloads: dict[int, tuple[str, ...]] = {}
    for entry in references:
        node_id = _varint(entry, 1)[0] if entry[:1] == b"\x08" else -1
        if node_id not in wanted:
            continue
        reference = dict(_fields(entry)).get(2, b"")
        found = tuple(_bytes(v).decode() for f, v in _fields(_bytes(reference)) if f == 3)
        overloads[node_id] = found
    return tree, overloads


def _node(data: bytes, wanted: set[int]) -> Node:
    node_id = 0
    for number, value in _fields(data):
        if number == 2 and isinstance(value, int):
            node_id = value
        elif number == 3:  # constant
            size = 0
            for kind, const in _fields(_bytes(value)):
                if kind in (6, 7):  # string_value, bytes_value
                    size = len(_bytes(const))
            return Node("const", size=size)
        elif number == 4:  # ident
            name = dict(_fields(_bytes(value))).get(1, b"")
            return Node("ident", _bytes(name).decode())
        elif number == 5:  # select: operand, field, test_only
            parts = dict(_fields(_bytes(value)))
            operand = _node(_bytes(parts.get(1, b"")), wanted)
            field = _bytes(parts.get(2, b"")).decode()
            return Node("select", field, (operand,), test_only=bool(parts.get(3, 0)))
        elif number == 6:  # call: target, function, args
            target: list[Node] = []
            args: list[Node] = []
            function = ""
            for part, item in _fields(_bytes(value)):
                if part == 1:
                    target.append(_node(_bytes(item), wanted))
                elif part == 2:
                    function = _bytes(item).decode()
                elif part == 3:
                    args.append(_node(_bytes(item), wanted))
            if function == "_+_":
                wanted.add(node_id)  # its overloads tell a list's from a string's
            return Node("call", function, (*target, *args), node_id=node_id)
        elif number == 7:  # list: elements
            elements = [_node(_bytes(v), wanted) for f, v in _fields(_bytes(value)) if f == 1]
            return Node("list", args=tuple(elements))
        elif number == 8:  # struct or map: entries with map_key and value
            items: list[Node] = []
            for f, entry in _fields(_bytes(value)):
                if f != 2:
                    continue
                parts = dict(_fields(_bytes(entry)))
                key = parts.get(3)
                items.append(_node(_bytes(key), wanted) if key is not None else Node("const"))
                items.append(_node(_bytes(parts.get(4, b"")), wanted))
            return Node("map", args=tuple(items))
        elif number == 9:  # comprehension
            parts = dict(_fields(_bytes(value)))
            children = tuple(_node(_bytes(parts.get(k, b"")), wanted) for k in (2, 4, 5, 6, 7))
            return Node(
                "compr",
                args=children,
                iter_var=_bytes(parts.get(1, b"")).decode(),
                accu_var=_bytes(parts.get(3, b"")).decode(),
            )
    return Node("const")  # an empty expression: nothing to cost
