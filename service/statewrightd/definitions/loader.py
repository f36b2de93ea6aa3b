"""Load, validate and compile a definition, collecting every problem before giving up."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from statewrightd.definitions.cel import (
    RESERVED_WORDS,
    CelCompileError,
    CompiledExpression,
    Environment,
    ResultType,
)
from statewrightd.definitions.model import (
    DEFAULT_RECURSION_LIMIT,
    DEFINITION_NAME,
    FINISH,
    FOREVER,
    QUEUE_NAME,
    RESUME_ALIAS,
    TASK_COMPLETED,
    TASK_FAILED,
    Assignment,
    ContextField,
    Definition,
    Delay,
    RetryPolicy,
    SetAction,
    State,
    StateKind,
    TaskSpec,
    Transition,
)
from statewrightd.definitions.parsing import parse_document
from statewrightd.definitions.problems import DefinitionInvalid, Problem, closest, did_you_mean
from statewrightd.definitions.values import (
    FieldType,
    JSONValue,
    Reducer,
    ValueTypeError,
    conform,
    freeze,
)
from statewrightd.durations import parse_duration

FIELD_RE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
STATE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,62}$")
EVENT_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,62}$")
MAX_RECURSION_LIMIT = 10_000

# The largest definition accepted (documented in docs/definitions.md): what is past these
# is refused before anything else is checked, and validating a definition at every limit
# takes well under two seconds (bench/definition_limits.py).
MAX_DEFINITION_BYTES = 1024 * 1024
MAX_STATES = 1_000
MAX_TRANSITIONS = 2_000
MAX_EXPRESSIONS = 2_000
MAX_CONTEXT_FIELDS = 500
MAX_EXPRESSION_LENGTH = 16 * 1024
# Past this many problems, no more "did you mean" searches (each compares a name with
# every state): a definition with thousands of mistakes is still judged in linear time.
_HINTED_PROBLEMS = 20

_TOP_KEYS = {"name", "version", "description", "recursion_limit", "context", "initial"}
_TOP_KEYS |= {"states", "transitions", "retention"}
# The longest retention a definition may ask for (ten years); `forever` means never.
MAX_RETENTION_SECONDS = 3650 * 86400.0
_FIELD_KEYS = {"type", "reducer", "default", "description"}
_STATE_KEYS = {"wait", "entry", "exit", "description", "task"}
_TASK_KEYS = {"queue", "input", "apply", "timeouts", "retry"}
_TIMEOUT_KEYS = {"start_to_close", "heartbeat", "schedule_to_close"}
_RETRY_KEYS = {"max_attempts", "initial_interval", "backoff", "max_interval", "non_retryable"}
_TRANSITION_KEYS = {"from", "to", "on", "after", "after_expr", "guard", "set", "description"}
_REQUIRED_TOP = ("name", "version", "states")

_NOT_JSON = {"bytes", "timestamp", "duration", "other"}


def load_definition(source: str | bytes, *, source_name: str = "<string>") -> Definition:
    """Load a definition or raise DefinitionInvalid listing every problem."""
    definition, problems = validate_source(source, source_name)
    if definition is None:
        raise DefinitionInvalid(source_name, problems)
    return definition


def load_definition_file(path: str | Path) -> Definition:
    path = Path(path)
    return load_definition(path.read_bytes(), source_name=str(path))


def validate_source(
    source: str | bytes, source_name: str = "<string>"
) -> tuple[Definition | None, list[Problem]]:
    """Return the definition (None when there is any error) and every problem found."""
    size = len(source) if isinstance(source, bytes) else len(source.encode("utf-8"))
    if size > MAX_DEFINITION_BYTES:
        return None, [
            Problem(
                "",
                f"the definition is {size:,} bytes, more than the limit of "
                f"{MAX_DEFINITION_BYTES:,}",
            )
        ]
    if isinstance(source, bytes):
        try:
            text = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, [Problem("", f"not UTF-8 text: {exc}")]
    else:
        text = source
    document, problems = parse_document(text)
    if document is None and problems:
        return None, problems
    too_large = _over_limits(document)
    if too_large:
        return None, too_large
    builder = _Builder(text, problems)
    definition = builder.build(document)
    if any(p.severity == "error" for p in builder.problems):
        return None, builder.problems
    return definition, builder.problems


def _over_limits(document: object) -> list[Problem]:
    """The limits on states and transitions a document is over, before judging either."""
    if not isinstance(document, dict):
        return []
    found = []
    limits = (
        ("states", MAX_STATES, "states"),
        ("transitions", MAX_TRANSITIONS, "transitions"),
        ("context", MAX_CONTEXT_FIELDS, "context fields"),
    )
    for key, limit, what in limits:
        items = document.get(key)
        if isinstance(items, dict | list) and len(items) > limit:
            found.append(Problem(key, f"{len(items):,} {what}, more than the limit of {limit:,}"))
    return found


_UNDECLARED = re.compile(r"undeclared reference to '([A-Za-z_][A-Za-z0-9_.]*)'")


def _reference_hints(message: str, names: tuple[str, ...]) -> str:
    """A "did you mean" for each undeclared name in a CEL error that looks like one."""
    pairs = [
        (name, match)
        for name in dict.fromkeys(_UNDECLARED.findall(message))
        if (match := closest(name, names)) is not None
    ]
    if len(pairs) == 1:
        return f"; did you mean {pairs[0][1]!r}?"
    return "".join(f"; did you mean {match!r} for {name!r}?" for name, match in pairs)


_YAML_VERSION = re.compile(r"^(version[ \t]*:[ \t]*)\d+(?=[ \t]*(?:#.*)?$)", re.M)
_JSON_VERSION = re.compile(r'("version"\s*:\s*)\d+(?![\d.eE])')


def with_version(source: str, version: int) -> str | None:
    """The source with its top-level ``version`` rewritten, or None when it cannot be found
    for certain (exactly one ``version: N`` line, or one ``"version": N`` in JSON)."""
    pattern = _JSON_VERSION if source.lstrip().startswith("{") else _YAML_VERSION
    rewritten, count = pattern.subn(lambda m: f"{m.group(1)}{version}", source)
    return rewritten if count == 1 else None


def _describe(value: object) -> str:
    if value is None:
        return "nothing"
    return {dict: "a map", list: "a list", str: "a string", bool: "a bool"}.get(
        type(value), f"a {type(value).__name__}"
    )


class _Builder:
    def __init__(self, text: str, problems: list[Problem]) -> None:
        self.text = text
        self.problems = problems
        self.timed: dict[str, tuple[Transition, ...]] = {}
        # One mistake, one problem: what an earlier problem makes unknowable is not judged
        # again. Paths of known keys that a reported unknown key looks like a misspelling
        # of (a missing `to` next to `ot` is the same mistake), and top-level keys written
        # twice (what the first one held is lost):
        self.misspelt: set[str] = {p.path for p in problems if p.path in _TOP_KEYS}
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
        return len(self.problems) < _HINTED_PROBLEMS

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

    # -- document -----------------------------------------------------------------

    def build(self, doc: object) -> Definition | None:
        if not isinstance(doc, dict):
            self.error("", f"a definition must be a map, not {_describe(doc)}")
            return None
        self.unknown_keys(doc, _TOP_KEYS, "")
        if "states" in self.misspelt or "transitions" in self.misspelt:
            self.graph_unknown = True

        name = doc.get("name")
        if name is None:
            self.required("name")
        elif not isinstance(name, str) or not DEFINITION_NAME.match(name):
            self.error("name", "name must match [a-z][a-z0-9-]{0,62}")
        version = self.positive_int(doc, "version", required=True)
        description = doc.get("description", "")
        if description is None:
            description = ""
        if not isinstance(description, str):
            self.error("description", "description must be a string")
        limit = self.positive_int(doc, "recursion_limit", required=False)
        if limit is not None and limit > MAX_RECURSION_LIMIT:
            self.error("recursion_limit", f"recursion_limit must be at most {MAX_RECURSION_LIMIT}")
        retention = self.retention(doc)

        fields = self.context_fields(doc.get("context"))
        # An unusable `context` leaves every field unknown: expressions may then read any.
        open_context = "context" in self.misspelt or (
            doc.get("context") is not None and not isinstance(doc.get("context"), dict)
        )
        self.open_context = open_context
        declared = {f.name: (f.type, f.nullable) for f in fields.values()}
        env = Environment(declared, open_context=open_context)
        self.env = env
        # A task state's `apply` also sees `result`; nothing else may.
        self.task_env = Environment(declared, with_result=True, open_context=open_context)
        self.fields = fields

        raw_states = doc.get("states")
        state_names = self.state_names(raw_states)
        initial = doc.get("initial")
        if initial is None:
            initial = state_names[0] if state_names else ""
        elif (not isinstance(initial, str) or initial not in state_names) and not (
            initial in self.refused_states or self.graph_unknown
        ):
            hint = self.hint(initial, state_names)
            self.error("initial", f"initial state {initial!r} is not a declared state{hint}")
        states = self.states(raw_states, state_names)
        transitions = self.transitions(doc.get("transitions"), set(state_names))

        kinds, automatic, by_event, events = self.analyse(states, transitions, str(initial))
        if any(p.severity == "error" for p in self.problems):
            return None
        assert isinstance(name, str) and version is not None
        digest = _digest(
            name, version, str(description), limit, str(initial), fields, states, transitions
        )
        if retention is not None:
            # Only when set, so that every definition written before it keeps its digest.
            digest = _with_retention(digest, retention)
        return Definition(
            name=name,
            version=version,
            description=str(description),
            source=self.text,
            digest=digest,
            initial=str(initial),
            states=MappingProxyType(states),
            transitions=tuple(transitions),
            context_fields=MappingProxyType(fields),
            recursion_limit=limit if limit is not None else DEFAULT_RECURSION_LIMIT,
            environment=env,
            kinds=MappingProxyType(kinds),
            automatic_from=MappingProxyType(automatic),
            event_transitions=MappingProxyType(by_event),
            all_events=events,
            timed_from=MappingProxyType(self.timed),
            retention=retention,
        )

    def retention(self, doc: Mapping[str, Any]) -> float | None:
        """How long finished instances are kept: seconds, FOREVER, or None (the server's)."""
        raw = doc.get("retention")
        if raw is None:
            return None
        if raw == "forever":
            return FOREVER
        seconds = parse_duration(raw) if isinstance(raw, str) else None
        if seconds is None:
            self.error(
                "retention", "retention must be a duration such as 30d, 12h or 90m, or forever"
            )
            return None
        if seconds < 1:
            self.error("retention", "retention must be at least 1s")
            return None
        if seconds > MAX_RETENTION_SECONDS:
            self.error("retention", "retention must be at most 3650d (or forever)")
            return None
        return seconds

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

    # -- context ------------------------------------------------------------------

    def context_fields(self, raw: object) -> dict[str, ContextField]:
        fields: dict[str, ContextField] = {}
        if raw is None:
            return fields
        if not isinstance(raw, dict):
            self.error("context", f"context must be a map of fields, not {_describe(raw)}")
            return fields
        for name, spec in raw.items():
            path = f"context.{name}"
            if not isinstance(name, str) or not FIELD_RE.match(name):
                self.error(path, "a field name must match [a-z_][a-z0-9_]{0,62}")
                self.broken_fields.add(str(name))
                continue
            if name in RESERVED_WORDS:
                self.error(path, f"{name!r} is a reserved word in CEL and cannot be a field name")
                self.broken_fields.add(name)
                continue
            field = self.context_field(name, spec, path)
            if field is None:
                # Still declared, as `any`: what reads or sets it is judged as far as it
                # can be, without a second report of the declaration's own mistake.
                self.broken_fields.add(name)
                field = ContextField(name, FieldType.ANY, Reducer.REPLACE, None, True)
            fields[name] = field
        return fields

    def context_field(self, name: str, spec: object, path: str) -> ContextField | None:
        """The field, or None when its declaration has an error (reported here)."""
        if not isinstance(spec, dict):
            self.error(path, f"a field must be a map with at least `type`, not {_describe(spec)}")
            return None
        broken = self.unknown_keys(spec, _FIELD_KEYS, path)
        if "type" not in spec:
            if f"{path}.type" not in self.misspelt:
                self.error(f"{path}.type", "type is required")
            return None
        types = [t.value for t in FieldType]
        try:
            ftype = FieldType(str(spec.get("type")))
        except ValueError:
            hint = self.hint(spec.get("type"), types)
            self.error(f"{path}.type", f"type must be one of: {' '.join(types)}{hint}")
            return None
        reducers = [r.value for r in Reducer]
        try:
            reducer = Reducer(str(spec.get("reducer", "replace")))
        except ValueError:
            hint = self.hint(spec.get("reducer"), reducers)
            self.error(f"{path}.reducer", f"reducer must be one of: {' '.join(reducers)}{hint}")
            return None
        if reducer is Reducer.APPEND and ftype not in (FieldType.LIST, FieldType.ANY):
            self.error(f"{path}.reducer", f"the append reducer needs a list field, not {ftype}")
            broken = True
        if reducer is Reducer.MERGE and ftype not in (FieldType.MAP, FieldType.ANY):
            self.error(f"{path}.reducer", f"the merge reducer needs a map field, not {ftype}")
            broken = True
        nullable = "default" not in spec or spec["default"] is None
        default: JSONValue = None
        if not nullable:
            try:
                default = conform(spec["default"], ftype, nullable=False)
            except ValueTypeError as exc:
                self.error(f"{path}.default", f"default does not fit the field: {exc}")
        if broken:
            return None
        return ContextField(name, ftype, reducer, freeze(default), nullable)

    # -- states -------------------------------------------------------------------

    def state_names(self, raw: object) -> list[str]:
        if raw is None or raw == {}:
            if "states" not in self.misspelt:
                self.error("states", "a definition needs at least one state")
            return []
        if not isinstance(raw, dict):
            self.error("states", f"states must be an ordered map, not {_describe(raw)}")
            self.graph_unknown = True
            return []
        names = []
        for name in raw:
            if not isinstance(name, str) or name.startswith("__"):
                self.error(f"states.{name}", f"{name!r} is reserved (names starting with __)")
                self.refused_states.add(str(name))
            elif not STATE_RE.match(name):
                self.error(f"states.{name}", "a state name must match [A-Za-z][A-Za-z0-9_-]{0,62}")
                self.refused_states.add(name)
            else:
                names.append(name)
        return names

    def states(self, raw: object, names: list[str]) -> dict[str, State]:
        states: dict[str, State] = {}
        if not isinstance(raw, dict):
            return states
        for name in names:
            spec = raw[name]
            path = f"states.{name}"
            if spec is None:
                spec = {}
            if not isinstance(spec, dict):
                self.error(path, f"a state must be a map (or empty), not {_describe(spec)}")
                self.unsure_states.add(name)
                continue
            if self.unknown_keys(spec, _STATE_KEYS, path):
                self.unsure_states.add(name)
            wait = spec.get("wait", False)
            if not isinstance(wait, bool):
                self.error(f"{path}.wait", "wait must be true or false")
                self.unsure_states.add(name)
                wait = False
            task = None
            if "task" in spec:
                task = self.task(spec["task"], f"{path}.task")
                if task is None:
                    self.unsure_states.add(name)
                if wait:
                    self.error(f"{path}.wait", "a task state cannot also be a wait state")
                    self.unsure_states.add(name)
            description = spec.get("description") or ""
            states[name] = State(
                name=name,
                wait=wait,
                entry=self.actions(spec.get("entry"), f"{path}.entry"),
                exit=self.actions(spec.get("exit"), f"{path}.exit"),
                description=str(description),
                task=task,
            )
        return states

    def task(self, raw: object, path: str) -> TaskSpec | None:
        if not isinstance(raw, dict):
            self.error(path, f"task must be a map with at least `queue`, not {_describe(raw)}")
            return None
        broken = self.unknown_keys(raw, _TASK_KEYS, path)
        queue = raw.get("queue")
        if queue is None:
            self.required(f"{path}.queue")
        elif not isinstance(queue, str) or not QUEUE_NAME.match(queue):
            self.error(f"{path}.queue", "a queue name must match [a-z][a-z0-9-.]{0,62}")
            queue = None
        task_input = None
        if "input" in raw:
            task_input = self.compile(raw["input"], f"{path}.input")
            if task_input is not None and task_input.result_type.kind not in ("map", "dyn"):
                self.error(
                    f"{path}.input",
                    f"input must give a map, but this one gives {task_input.result_type.kind}",
                )
                task_input = None
        apply = None
        if "apply" in raw:
            apply = self.set_action(raw["apply"], f"{path}.apply", env=self.task_env)
        timeouts = self.task_timeouts(raw.get("timeouts"), f"{path}.timeouts")
        retry = self.retry_policy(raw.get("retry"), f"{path}.retry")
        if broken or queue is None or timeouts is None or retry is None:
            return None
        return TaskSpec(queue, task_input, apply, *timeouts, retry=retry)

    def task_timeouts(self, raw: object, path: str) -> tuple[float, float | None, float] | None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            self.error(path, f"timeouts must be a map, not {_describe(raw)}")
            return None
        ok = not self.unknown_keys(raw, _TIMEOUT_KEYS, path)
        values: dict[str, float] = {}
        for key, value in raw.items():
            if key not in _TIMEOUT_KEYS:
                continue
            seconds = self.positive_duration(value, f"{path}.{key}")
            if seconds is None:
                ok = False
            else:
                values[key] = seconds
        if not ok:
            return None
        return (
            values.get("start_to_close", 300.0),
            values.get("heartbeat"),
            values.get("schedule_to_close", 3600.0),
        )

    def retry_policy(self, raw: object, path: str) -> RetryPolicy | None:
        if raw is None:
            return RetryPolicy()
        if not isinstance(raw, dict):
            self.error(path, f"retry must be a map, not {_describe(raw)}")
            return None
        ok = not self.unknown_keys(raw, _RETRY_KEYS, path)
        attempts = raw.get("max_attempts", 3)
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            self.error(f"{path}.max_attempts", "max_attempts must be a positive integer")
            ok = False
        intervals = {}
        for key, default in (("initial_interval", 1.0), ("max_interval", 60.0)):
            if key in raw:
                seconds = self.positive_duration(raw[key], f"{path}.{key}")
                ok = ok and seconds is not None
                intervals[key] = seconds or default
            else:
                intervals[key] = default
        backoff = raw.get("backoff", 2.0)
        if isinstance(backoff, bool) or not isinstance(backoff, int | float) or backoff < 1:
            self.error(f"{path}.backoff", "backoff must be a number of at least 1")
            ok = False
        kinds = raw.get("non_retryable", [])
        if not isinstance(kinds, list) or not all(isinstance(k, str) and k for k in kinds):
            self.error(f"{path}.non_retryable", "non_retryable must be a list of error types")
            ok = False
        if not ok:
            return None
        return RetryPolicy(
            max_attempts=attempts,
            initial_interval=intervals["initial_interval"],
            backoff=float(backoff),
            max_interval=intervals["max_interval"],
            non_retryable=frozenset(kinds),
        )

    def positive_duration(self, value: object, path: str) -> float | None:
        seconds = parse_duration(value) if isinstance(value, str) else None
        if seconds is None:
            self.error(path, "a timeout must be a duration such as 500ms, 30s, 5m, 48h or 1h30m")
            return None
        if seconds <= 0:
            self.error(path, "a timeout must be a positive duration")
            return None
        return seconds

    def actions(self, raw: object, path: str) -> tuple[SetAction, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.error(path, f"actions must be a list, not {_describe(raw)}")
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
            mismatch = _set_type_problem(field, compiled.result_type)
            if mismatch:
                self.error(expr_path, mismatch)
                continue
            assignments.append(Assignment(field_name, compiled, expr_path))
        return SetAction(tuple(assignments), path)

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
            hints = _reference_hints(str(exc), env.names) if self.hinting() else ""
            self.error(path, f"invalid CEL: {exc}{hints}")
            return None

    # -- transitions --------------------------------------------------------------

    def transitions(self, raw: object, states: set[str]) -> list[Transition]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            self.error("transitions", f"transitions must be a list, not {_describe(raw)}")
            self.graph_unknown = True
            return []
        out = []
        for i, spec in enumerate(raw):
            path = f"transitions[{i}]"
            if not isinstance(spec, dict):
                self.error(path, f"a transition must be a map, not {_describe(spec)}")
                self.refused_edges.append((None, None))
                self.sources_unknown = True
                continue
            transition = self.transition(i, spec, path, states)
            if transition is not None:
                out.append(transition)
                continue
            # Refused: its endpoints, as far as they are known, still count for the checks
            # of the whole graph, so that one mistake in it is not reported again there.
            source = self.endpoint(spec.get("from"), states)
            target = self.endpoint(spec.get("to"), states | {FINISH})
            self.refused_edges.append((source, target))
            if source is None:
                self.sources_unknown = True
            else:
                self.unsure_exits.add(source)
        return out

    def endpoint(self, name: object, names: set[str]) -> str | None:
        """The state a transition's ``from`` or ``to`` names or most likely means."""
        if not isinstance(name, str):
            return None
        if name in names or name in self.refused_states:
            return name
        return self.near(name, names)

    def transition(
        self, i: int, spec: Mapping[str, Any], path: str, states: set[str]
    ) -> Transition | None:
        ok = not self.unknown_keys(spec, _TRANSITION_KEYS, path)
        source, target = spec.get("from"), spec.get("to")
        if source is None:
            self.required(f"{path}.from")
            ok = False
        elif source not in states:
            if source not in self.refused_states and not self.graph_unknown:
                hint = " (__finish__ can only be a target)" if source == FINISH else ""
                hint = hint or self.hint(source, states)
                self.error(f"{path}.from", f"unknown state {source!r}{hint}")
            ok = False
        if target is None:
            self.required(f"{path}.to")
            ok = False
        elif target != FINISH and target not in states:
            if target not in self.refused_states and not self.graph_unknown:
                hint = self.hint(target, [*states, FINISH])
                self.error(f"{path}.to", f"unknown state {target!r}{hint}")
            ok = False
        event = spec.get("on")
        if event is not None:
            if not isinstance(event, str) or not EVENT_RE.match(event):
                self.error(f"{path}.on", "an event name must match [A-Za-z][A-Za-z0-9_.-]{0,62}")
                ok = False
            elif event == RESUME_ALIAS:
                self.error(
                    f"{path}.on",
                    "'resume' is reserved: it means the first event of a wait state",
                )
                ok = False
            elif event == TASK_COMPLETED:
                self.error(
                    f"{path}.on",
                    f"{TASK_COMPLETED!r} is reserved: a task's result fires its state's "
                    "automatic transitions, which need no event",
                )
                ok = False
        after = self.delay(spec, path)
        if after is False:
            ok = False
        elif after is not None and event is not None:
            key = "after" if "after" in spec else "after_expr"
            self.error(f"{path}.{key}", f"a transition has either 'on' or '{key}', not both")
            ok = False
        guard = None
        if "guard" in spec:
            guard = self.compile(spec["guard"], f"{path}.guard")
            if guard is not None and guard.result_type.kind not in ("bool", "dyn"):
                self.error(
                    f"{path}.guard",
                    f"a guard must be bool, but this one is {guard.result_type.kind}",
                )
                ok = False
            ok = ok and guard is not None
        action = None
        if "set" in spec:
            action = self.set_action(spec["set"], f"{path}.set")
            ok = ok and action is not None
        if not ok:
            return None
        delay = after if isinstance(after, Delay) else None
        return Transition(i, str(source), str(target), event, guard, action, delay)

    def delay(self, spec: Mapping[str, Any], path: str) -> Delay | bool | None:
        """A timer transition's delay; None for none, False when it is invalid."""
        has_literal, has_expr = "after" in spec, "after_expr" in spec
        if has_literal and has_expr:
            self.error(f"{path}.after_expr", "give either 'after' or 'after_expr', not both")
            return False
        if has_literal:
            raw = spec["after"]
            seconds = parse_duration(raw) if isinstance(raw, str) else None
            if seconds is None:
                self.error(
                    f"{path}.after",
                    "after must be a duration such as 500ms, 30s, 5m, 48h or 1h30m",
                )
                return False
            if seconds <= 0:
                self.error(f"{path}.after", "after must be a positive duration")
                return False
            return Delay(raw, seconds=seconds)
        if has_expr:
            compiled = self.compile(spec["after_expr"], f"{path}.after_expr")
            if compiled is None:
                return False
            if compiled.result_type.kind not in ("duration", "timestamp"):
                self.error(
                    f"{path}.after_expr",
                    "after_expr must give a duration or a timestamp, but this one gives "
                    f"{compiled.result_type.kind} (wrap it: duration(...), timestamp(...))",
                )
                return False
            return Delay(compiled.source, expression=compiled)
        return None

    # -- whole-graph checks -------------------------------------------------------

    def analyse(
        self, states: dict[str, State], transitions: list[Transition], initial: str
    ) -> tuple[
        dict[str, StateKind],
        dict[str, tuple[Transition, ...]],
        dict[str, Mapping[str, tuple[Transition, ...]]],
        tuple[str, ...],
    ]:
        automatic: dict[str, list[Transition]] = {}
        by_event: dict[str, dict[str, list[Transition]]] = {}
        timed: dict[str, list[Transition]] = {}
        events: dict[str, None] = {}
        for t in transitions:
            if t.after is not None:
                timed.setdefault(t.source, []).append(t)
            elif t.event is None:
                automatic.setdefault(t.source, []).append(t)
            else:
                by_event.setdefault(t.source, {}).setdefault(t.event, []).append(t)
                events[t.event] = None
        kinds: dict[str, StateKind] = {}
        for name, state in states.items():
            # Whether its way out can be judged: nothing about the state or a transition
            # from it was refused (that problem is the one to fix first).
            sure = name not in self.unsure_states and name not in self.unsure_exits
            sure = sure and not (self.sources_unknown or self.graph_unknown)
            if state.task is not None:
                kinds[name] = StateKind.TASK
                exits = name in automatic or name in by_event or name in timed
                if not exits and sure:
                    self.warning(
                        f"states.{name}.task",
                        f"task state {name!r} has no way out: no automatic transition, no "
                        f"{TASK_FAILED} handler and no event transition",
                    )
                if sure:
                    self.no_fallback(name, automatic.get(name, []), "after its task's result")
                continue
            if name not in self.unsure_states:
                for t in by_event.get(name, {}).get(TASK_FAILED, []):
                    self.error(
                        f"{t.path}.on",
                        f"{TASK_FAILED} only fires from a task state, and {name!r} is not one",
                    )
            if state.wait:
                kinds[name] = StateKind.WAIT
                if name not in by_event and name not in timed and sure:
                    self.error(
                        f"states.{name}.wait",
                        "a wait state needs an outgoing event or timer transition, or it can "
                        "never leave",
                    )
                for t in automatic.get(name, []):
                    self.warning(
                        f"{t.path}",
                        f"automatic transition from wait state {name!r} is never taken",
                    )
            elif name in automatic:
                kinds[name] = StateKind.AUTOMATIC
                if sure:
                    self.no_fallback(name, automatic[name], "on entering it")
                for group in by_event.get(name, {}).values():
                    for u in group:
                        self.warning(
                            u.path,
                            f"{name!r} has automatic transitions, so events never reach it",
                        )
                for u in timed.get(name, []):
                    self.warning(
                        u.path,
                        f"{name!r} has automatic transitions, which leave it in the step that "
                        "enters it: this timer never fires",
                    )
            elif name in by_event or name in timed:
                kinds[name] = StateKind.EVENT_ONLY
            else:
                kinds[name] = StateKind.LEAF
        for name, group in automatic.items():
            for earlier, later in itertools.pairwise(group):
                if earlier.guard is None:
                    self.warning(
                        later.path,
                        f"never evaluated: {earlier.path} from {name!r} has no guard",
                    )
                    break
        self.duplicate_timers(timed)
        self.reachability(states, transitions, initial)
        self.timed = {k: tuple(v) for k, v in timed.items()}
        return (
            kinds,
            {k: tuple(v) for k, v in automatic.items()},
            {
                k: MappingProxyType({e: tuple(ts) for e, ts in v.items()})
                for k, v in by_event.items()
            },
            tuple(events),
        )

    def no_fallback(self, name: str, group: list[Transition], when: str) -> None:
        """Automatic transitions that are all guarded can all be false: the step then fails
        the instance (NO_TRANSITION_MATCHED) instead of leaving the state."""
        if not group or any(t.guard is None or t.guard.source.strip() == "true" for t in group):
            return
        self.warning(
            f"states.{name}",
            f"every automatic transition from {name!r} has a guard: when none is true "
            f"{when}, the instance fails with NO_TRANSITION_MATCHED; end with one that has "
            "no guard",
        )

    def duplicate_timers(self, timed: dict[str, list[Transition]]) -> None:
        """A second unguarded timer with the same delay from one state never fires first."""
        for name, group in timed.items():
            seen: dict[str, Transition] = {}
            for t in group:
                assert t.after is not None
                key = repr(t.after.seconds) if t.after.seconds is not None else t.after.text
                first = seen.get(key)
                if first is not None and first.guard is None and t.guard is None:
                    self.warning(
                        t.path,
                        f"never fires: {first.path} from {name!r} has the same delay and "
                        "no guard, and fires first",
                    )
                seen.setdefault(key, t)

    def reachability(
        self, states: dict[str, State], transitions: list[Transition], initial: str
    ) -> None:
        if initial not in states or "initial" in self.misspelt or self.graph_unknown:
            return
        targets: dict[str, list[str]] = {}
        for t in transitions:
            targets.setdefault(t.source, []).append(t.target)
        for source, target in self.refused_edges:
            if source is None or target is None:
                return  # a transition whose ends are unknown could reach any state
            targets.setdefault(source, []).append(target)
        seen = {initial, FINISH}
        frontier = [initial]
        while frontier:
            for target in targets.get(frontier.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    frontier.append(target)
        for name in states:
            if name not in seen:
                self.warning(f"states.{name}", f"state {name!r} is unreachable from {initial!r}")


def _digest(  # noqa: PLR0917 - one call site, all parts of the identity
    name: str,
    version: int,
    description: str,
    limit: int | None,
    initial: str,
    fields: dict[str, ContextField],
    states: dict[str, State],
    transitions: list[Transition],
) -> str:
    """Hash of a canonical, normalized form.

    Formatting, key order, YAML-vs-JSON and implicit defaults disappear; the order of
    states and transitions stays because it carries meaning (guard evaluation order).
    """
    doc = {
        "name": name,
        "version": version,
        "description": description,
        "recursion_limit": limit if limit is not None else DEFAULT_RECURSION_LIMIT,
        "initial": initial,
        "context": {
            f.name: {
                "type": f.type.value,
                "reducer": f.reducer.value,
                "default": f.default_value(),
                "nullable": f.nullable,
            }
            for f in fields.values()
        },
        "states": [_state_doc(st) for st in states.values()],
        "transitions": [_transition_doc(t) for t in transitions],
    }
    blob = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


def _with_retention(digest: str, retention: float) -> str:
    shown = "forever" if retention == FOREVER else retention
    blob = json.dumps({"digest": digest, "retention": shown}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _state_doc(st: State) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": st.name,
        "wait": st.wait,
        "entry": [_action_doc(a) for a in st.entry],
        "exit": [_action_doc(a) for a in st.exit],
        "description": st.description,
    }
    task = st.task
    if task is not None:  # only when present: digests of task-free definitions stay
        doc["task"] = {
            "queue": task.queue,
            "input": task.input.source if task.input else None,
            "apply": _action_doc(task.apply),
            "timeouts": [task.start_to_close, task.heartbeat, task.schedule_to_close],
            "retry": [
                task.retry.max_attempts,
                task.retry.initial_interval,
                task.retry.backoff,
                task.retry.max_interval,
                sorted(task.retry.non_retryable),
            ],
        }
    return doc


def _transition_doc(t: Transition) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "from": t.source,
        "to": t.target,
        "on": t.event,
        "guard": t.guard.source if t.guard else None,
        "set": _action_doc(t.set),
    }
    if t.after is not None:
        # Only when present: the digests of definitions without timers stay as they were.
        doc["after" if t.after.expression is None else "after_expr"] = t.after.text
    return doc


def _action_doc(action: SetAction | None) -> dict[str, str] | None:
    if action is None:
        return None
    return {a.field: a.expression.source for a in action.assignments}


def _set_type_problem(field: ContextField, result: ResultType) -> str | None:
    """Why a `set` expression's static type cannot fit the field, or None."""
    kind = result.kind
    if kind == "dyn":
        return None  # only known at run time; the engine checks the value
    what = f"field {field.name!r} is {field.type}"
    if kind in _NOT_JSON:
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
