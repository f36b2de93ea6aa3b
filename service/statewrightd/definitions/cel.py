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
from types import MappingProxyType
from typing import Any

from cel_expr_python import cel as _cel

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


# cel-cpp stops an evaluation after this many comprehension iterations (map, filter, all,
# exists, exists_one), summed over the whole expression, nested ones multiplied. It is the
# library's fixed budget; naming it here lets errors and documentation state it.
ITERATION_BUDGET = 10_000


class CelBudgetExceeded(CelEvaluationError):
    """The evaluation ran out of its iteration budget (``ITERATION_BUDGET``)."""

    def __init__(self) -> None:
        super().__init__(
            f"the expression ran more than {ITERATION_BUDGET:,} comprehension iterations, "
            "its evaluation budget"
        )
        self.limit = ITERATION_BUDGET


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

    def evaluate(self, activation: Activation) -> JSONValue:
        """Evaluate; the result is plain Python. Raises CelEvaluationError."""
        scopes = (activation.context, activation.event, activation.workflow, activation.result)
        data: dict[str, object] = {}
        for name, scope, key in self._bindings:
            values = scopes[scope]
            if not key:
                data[name] = values  # a variable that is its whole scope (result)
            elif key in values:
                data[name] = values[key]
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
    ) -> None:
        """``fields`` maps a context field name to (type, nullable).

        A nullable field (declared without a default) is declared as ``dyn``: the CEL
        checker has no nullable primitives usable with plain values, and ``dyn`` keeps
        ``context.score != null && context.score > 0.5`` expressible. ``with_result``
        declares ``result``, a task's result, which only a task state's ``apply`` sees.
        ``open_context`` declares ``context`` itself as a map of anything, for checking
        the rest of a definition whose context declaration could not be read.
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
        self.names: tuple[str, ...] = tuple(variables)
        self._env = _cel.NewEnv(variables=variables)
        self._patterns = {
            key: re.compile(r"\b" + r"\s*\.\s*".join(map(re.escape, key.split("."))) + r"\b")
            for key in variables
        }

    def compile(self, source: str) -> CompiledExpression:
        try:
            program = self._env.compile(source)
        except RuntimeError as exc:
            raise CelCompileError(_clean_message(str(exc))) from None
        bindings = tuple(
            (name, _SCOPES[name.partition(".")[0]], name.partition(".")[2])
            for name, pattern in self._patterns.items()
            if pattern.search(source)
        )
        return CompiledExpression(source, _result_type(program.return_type()), program, bindings)

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
