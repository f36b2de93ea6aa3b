"""What reading a definition document shares: the problems found so far, what they make
unknowable, and the checks every part of the document uses (names, durations, CEL
expressions, `set` actions). The loader reads a document with the classes built on it:
read_states, read_transitions and analysis."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from statewrightd.definitions.cel import (
    CelCompileError,
    CompiledExpression,
    Environment,
    ResultType,
)
from statewrightd.definitions.limits import MAX_EXPRESSION_LENGTH, MAX_EXPRESSIONS
from statewrightd.definitions.model import (
    Assignment,
    ContextField,
    SetAction,
    Transition,
)
from statewrightd.definitions.problems import Problem, closest, did_you_mean
from statewrightd.definitions.values import (
    FieldType,
    Reducer,
)
from statewrightd.durations import MAX_DURATION_TEXT, parse_duration, too_long

FIELD_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}\Z")
STATE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}\Z")
EVENT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}\Z")

# Past this many problems, no more "did you mean" searches (each compares a name with
# every state): a definition with thousands of mistakes is still judged in linear time.
HINTED_PROBLEMS = 20

TOP_KEYS = {"name", "version", "description", "recursion_limit", "context", "initial"}
TOP_KEYS |= {"states", "transitions", "retention", "search"}
FIELD_KEYS = {"type", "reducer", "default", "description"}
STATE_KEYS = {"wait", "entry", "exit", "description", "task", "workflow"}
TASK_KEYS = {
    "queue", "input", "apply", "timeouts", "retry", "priority", "concurrency_key", "map",
    "max_concurrency", "tolerated_failures",
}  # fmt: skip
CHILD_KEYS = {
    "definition", "version", "id", "input", "apply", "map", "max_concurrency",
    "tolerated_failures",
}  # fmt: skip
TIMEOUT_KEYS = {"start_to_close", "heartbeat", "schedule_to_close"}
RETRY_KEYS = {"max_attempts", "initial_interval", "backoff", "max_interval", "non_retryable"}
TRANSITION_KEYS = {"from", "to", "on", "after", "after_expr", "guard", "set", "description"}
REQUIRED_TOP = ("name", "version", "states")
NOT_JSON = {"bytes", "timestamp", "duration", "other"}


UNDECLARED = re.compile(r"undeclared reference to '([A-Za-z_][A-Za-z0-9_.]*)'")


def reference_hints(message: str, names: tuple[str, ...]) -> str:
    """A "did you mean" for each undeclared name in a CEL error that looks like one."""
    pairs = [
        (name, match)
        for name in dict.fromkeys(UNDECLARED.findall(message))
        if (match := closest(name, names)) is not None
    ]
    if len(pairs) == 1:
        return f"; did you mean {pairs[0][1]!r}?"
    return "".join(f"; did you mean {match!r} for {name!r}?" for name, match in pairs)


def describe(value: object) -> str:
    if value is None:
        return "nothing"
    return {dict: "a map", list: "a list", str: "a string", bool: "a bool"}.get(
        type(value), f"a {type(value).__name__}"
    )


def set_type_problem(field: ContextField, result: ResultType) -> str | None:
    """Why a `set` expression's static type cannot fit the field, or None."""
    kind = result.kind
    if kind == "dyn":
        return None  # only known at run time; the engine checks the value
    what = f"field {field.name!r} is {field.type}"
    if kind in NOT_JSON:
        return f"{what}; the expression gives {kind}, which is not a JSON value"
    if kind == "null":
        if field.nullable or field.type is FieldType.ANY:
            return None
        return f"{what} with a default, so it cannot be set to null"
    if kind == "map" and result.map_key not in ("string", "dyn"):
        return f"{what}; the expression gives a map with {result.map_key} keys (need string)"
    if field.reducer is Reducer.APPEND:
        return None
    if field.reducer is Reducer.MERGE:
        return None if kind == "map" else f"{what} merged, but the expression gives {kind}"
    allowed = {
        FieldType.STRING: {"string"},
        FieldType.INT: {"int", "uint"},
        FieldType.NUMBER: {"number", "int", "uint"},
        FieldType.BOOL: {"bool"},
        FieldType.LIST: {"list"},
        FieldType.MAP: {"map"},
    }.get(field.type)
    if allowed is None or kind in allowed:
        return None
    return f"{what}, but the expression gives {kind}"


class Reading:
    """The state of reading one document, and the checks its parts share."""

    # Known once the context is read: the fields, what expressions may refer to (a task
    # state's `apply` also sees `result`), and whether any field name may be read (an
    # unusable `context` leaves them unknown).
    fields: dict[str, ContextField]
    env: Environment
    task_env: Environment
    item_env: Environment  # a map state's `input`: also `item` and `index`
    join_env: Environment  # a map state's `apply`: `results` and `failures`
    open_context: bool

    def __init__(self, text: str, problems: list[Problem]) -> None:
        self.text = text
        self.problems = problems
        self.timed: dict[str, tuple[Transition, ...]] = {}
        # One mistake, one problem: what an earlier problem makes unknowable is not judged
        # again. Paths of known keys that a reported unknown key looks like a misspelling
        # of (a missing `to` next to `ot` is the same mistake), and top-level keys written
        # twice (what the first one held is lost):
        self.misspelt: set[str] = {p.path for p in problems if p.path in TOP_KEYS}
        # Fields and states declared with a problem: references to them are not errors.
        self.broken_fields: set[str] = set()
        self.refused_states: set[str] = set()
        # States whose kind is unsure (a refused key, task or wait), and those with a
        # refused transition: either way, their way out cannot be judged.
        self.unsure_states: set[str] = set()
        self.unsure_exits: set[str] = set()
        # The endpoints of refused transitions (None: not known), for reachability.
        self.refused_edges: list[tuple[str | None, str | None]] = []
        self.graph_unknown = False  # `states` or `transitions` itself is unusable
        self.sources_unknown = False  # a refused transition from no known state
        self.expressions = 0  # compiled so far, against MAX_EXPRESSIONS

    def hinting(self) -> bool:
        """Whether there are few enough problems yet for "did you mean" searches."""
        return len(self.problems) < HINTED_PROBLEMS

    def hint(self, word: object, choices: Any) -> str:
        return did_you_mean(word, choices) if self.hinting() else ""

    def near(self, word: object, choices: Any) -> str | None:
        return closest(word, choices) if self.hinting() else None

    def unknown_keys(self, spec: Mapping[Any, Any], allowed: set[str], path: str) -> bool:
        """Report each key not in ``allowed``, with the key it looks like; True if any."""
        found = False
        for key in spec:
            if key in allowed:
                continue
            found = True
            # A key that is there already is not the one this was meant to be.
            absent = sorted(k for k in allowed if k not in spec)
            match = self.near(str(key), absent)
            if match is not None:
                self.misspelt.add(f"{path}.{match}" if path else match)
            where = f"{path}.{key}" if path else str(key)
            hint = f"; did you mean {match!r}?" if match else ""
            self.error(where, f"unknown key {key!r}{hint}")
        return found

    def required(self, path: str) -> None:
        if path not in self.misspelt:
            key = path.rpartition(".")[2]
            self.error(path, f"{key} is required")

    def error(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message, "error"))

    def warning(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message, "warning"))

    def graph_refused(self, key: str, must_be: str, raw: object) -> list[Any]:
        """``states`` or ``transitions`` given as something else than ``must_be``: said,
        and nothing read of it, so that no check of the graph speaks of what it cannot
        know."""
        self.error(key, f"{key} must be {must_be}, not {describe(raw)}")
        self.graph_unknown = True
        return []

    def positive_int(self, doc: Mapping[str, Any], key: str, *, required: bool) -> int | None:
        value = doc.get(key)
        if value is None:
            if required:
                self.required(key)
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.error(key, f"{key} must be a positive integer")
            return None
        return value

    def positive_duration(self, value: object, path: str) -> float | None:
        seconds = parse_duration(value) if isinstance(value, str) else None
        if seconds is None:
            self.error(path, "a timeout must be a duration such as 500ms, 30s, 5m, 48h or 1h30m")
            return None
        if seconds <= 0:
            self.error(path, "a timeout must be a positive duration")
            return None
        if too_long(seconds):
            self.error(path, f"a duration must be at most {MAX_DURATION_TEXT}")
            return None
        return seconds

    def compile(
        self, raw: object, path: str, *, env: Environment | None = None
    ) -> CompiledExpression | None:
        if isinstance(raw, bool):
            raw = "true" if raw else "false"
        elif isinstance(raw, int | float):
            raw = repr(raw)  # a bare YAML number is the CEL literal of the same value
        if not isinstance(raw, str) or not raw.strip():
            self.error(path, "expected a CEL expression (a non-empty string)")
            return None
        env = env or self.env
        self.expressions += 1
        if self.expressions > MAX_EXPRESSIONS:
            if self.expressions == MAX_EXPRESSIONS + 1:
                self.error(
                    path,
                    f"more than {MAX_EXPRESSIONS:,} expressions, the limit of a definition",
                )
            return None
        if len(raw) > MAX_EXPRESSION_LENGTH:
            self.error(
                path,
                f"the expression is {len(raw):,} characters, more than the limit of "
                f"{MAX_EXPRESSION_LENGTH:,}",
            )
            return None
        try:
            return env.compile(raw)
        except CelCompileError as exc:
            hints = reference_hints(str(exc), env.names) if self.hinting() else ""
            self.error(path, f"invalid CEL: {exc}{hints}")
            return None

    def compile_giving(
        self,
        raw: object,
        path: str,
        kinds: tuple[str, ...],
        wrong: str,
        *,
        env: Environment | None = None,
    ) -> CompiledExpression | None:
        """``raw`` compiled, if its result is one of ``kinds``; ``wrong``, a message with
        ``{kind}`` in it, says what else it gives."""
        compiled = self.compile(raw, path, env=env)
        if compiled is not None and compiled.result_type.kind not in kinds:
            self.error(path, wrong.format(kind=compiled.result_type.kind))
            return None
        return compiled

    def actions(self, raw: object, path: str) -> tuple[SetAction, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.error(path, f"actions must be a list, not {describe(raw)}")
            return ()
        out = []
        for i, item in enumerate(raw):
            item_path = f"{path}[{i}]"
            if not isinstance(item, dict) or set(item) != {"set"}:
                self.error(item_path, "an action must be a map with exactly one key: set")
                continue
            action = self.set_action(item["set"], f"{item_path}.set")
            if action is not None:
                out.append(action)
        return tuple(out)

    def set_action(
        self, raw: object, path: str, *, env: Environment | None = None
    ) -> SetAction | None:
        if not isinstance(raw, dict) or not raw:
            self.error(path, "set must be a non-empty map of field: expression")
            return None
        assignments = []
        for field_name, expr in raw.items():
            expr_path = f"{path}.{field_name}"
            field = self.fields.get(field_name) if isinstance(field_name, str) else None
            if field is None:
                if not self.open_context and field_name not in self.broken_fields:
                    hint = self.hint(field_name, self.fields)
                    self.error(expr_path, f"set on undeclared context field {field_name!r}{hint}")
                self.compile(expr, expr_path, env=env)
                continue
            compiled = self.compile(expr, expr_path, env=env)
            if compiled is None or field_name in self.broken_fields:
                continue
            mismatch = set_type_problem(field, compiled.result_type)
            if mismatch:
                self.error(expr_path, mismatch)
                continue
            assignments.append(Assignment(field_name, compiled, expr_path))
        return SetAction(tuple(assignments), path)
