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
    # Variables the source mentions: cel-cpp converts every activation entry on each
    # evaluation, so passing only these roughly halves evaluation time.
    _variables: tuple[str, ...]

    def evaluate(self, activation: Activation) -> JSONValue:
        """Evaluate; the result is plain Python. Raises CelEvaluationError."""
        full = activation.data
        data = {k: full[k] for k in self._variables if k in full}
        value = self._program.eval(data=data)
        if value.type() == _T.ERROR:
            raise CelEvaluationError(str(value.value()))
        return value.plain_value()


@dataclass(frozen=True, slots=True)
class Activation:
    """Variables of one evaluation; opaque outside this module."""

    data: Mapping[str, object]


class Environment:
    """Declarations shared by every expression of one definition."""

    def __init__(self, fields: Mapping[str, tuple[FieldType, bool]]) -> None:
        """``fields`` maps a context field name to (type, nullable).

        A nullable field (declared without a default) is declared as ``dyn``: the CEL
        checker has no nullable primitives usable with plain values, and ``dyn`` keeps
        ``context.score != null && context.score > 0.5`` expressible.
        """
        variables: dict[str, Any] = {}
        self._keys: dict[str, str] = {}
        for name, (ftype, nullable) in fields.items():
            key = f"context.{name}"
            self._keys[name] = key
            variables[key] = _T.DYN if nullable else _FIELD_TYPES[ftype]
        variables.update(_EVENT_VARIABLES)
        variables.update(_WORKFLOW_VARIABLES)
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
        used = tuple(k for k, pattern in self._patterns.items() if pattern.search(source))
        return CompiledExpression(source, _result_type(program.return_type()), program, used)

    def activation(
        self,
        context: Mapping[str, JSONValue],
        event_name: str,
        payload: Mapping[str, JSONValue],
        workflow: Mapping[str, JSONValue],
    ) -> Activation:
        keys = self._keys
        data: dict[str, object] = {keys[k]: v for k, v in context.items() if k in keys}
        data["event.name"] = event_name
        data["event.payload"] = payload
        for k, v in workflow.items():
            data["workflow." + k] = v
        return Activation(data)


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
