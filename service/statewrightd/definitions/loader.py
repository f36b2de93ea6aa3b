"""Load, validate and compile a definition, collecting every problem before giving up."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from statewrightd.definitions.analysis import Analysis
from statewrightd.definitions.cel import (
    Environment,
)
from statewrightd.definitions.limits import (
    MAX_CONTEXT_FIELDS,
    MAX_DEFINITION_BYTES,
    MAX_RECURSION_LIMIT,
    MAX_RETENTION_SECONDS,
    MAX_STATES,
    MAX_TRANSITIONS,
)
from statewrightd.definitions.model import (
    DEFAULT_RECURSION_LIMIT,
    DEFINITION_NAME,
    FOREVER,
    ContextField,
    Definition,
    SearchField,
    SetAction,
    State,
    Transition,
)
from statewrightd.definitions.parsing import parse_document
from statewrightd.definitions.problems import DefinitionInvalid, Problem
from statewrightd.definitions.read_states import StateReading
from statewrightd.definitions.read_transitions import TransitionReading
from statewrightd.definitions.reading import TOP_KEYS, describe
from statewrightd.definitions.search import SearchReading
from statewrightd.definitions.values import FieldType
from statewrightd.durations import parse_duration


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


_YAML_VERSION = re.compile(r"^(version[ \t]*:[ \t]*)\d+(?=[ \t]*(?:#.*)?$)", re.M)
_JSON_VERSION = re.compile(r'("version"\s*:\s*)\d+(?![\d.eE])')


def with_version(source: str, version: int) -> str | None:
    """The source with its top-level ``version`` rewritten, or None when it cannot be found
    for certain (exactly one ``version: N`` line, or one ``"version": N`` in JSON)."""
    pattern = _JSON_VERSION if source.lstrip().startswith("{") else _YAML_VERSION
    rewritten, count = pattern.subn(lambda m: f"{m.group(1)}{version}", source)
    return rewritten if count == 1 else None


class _Builder(StateReading, TransitionReading, SearchReading, Analysis):
    """Reads a whole document into a Definition."""

    # -- document -----------------------------------------------------------------

    def build(self, doc: object) -> Definition | None:
        if not isinstance(doc, dict):
            self.error("", f"a definition must be a map, not {describe(doc)}")
            return None
        self.unknown_keys(doc, TOP_KEYS, "")
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
        self.item_env, self.join_env = _fan_out_envs(declared, open_context)
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
        search = self.search_fields(doc.get("search"))

        kinds, automatic, by_event, events = self.analyse(states, transitions, str(initial))
        if any(p.severity == "error" for p in self.problems):
            return None
        assert isinstance(name, str) and version is not None
        digest = _digest(
            name, version, str(description), limit, str(initial), fields, states, transitions
        )
        digest = _with_extras(digest, retention, search)
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
            search_fields=MappingProxyType(search),
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

    # -- context ------------------------------------------------------------------

    # -- states -------------------------------------------------------------------

    # -- transitions --------------------------------------------------------------

    # -- whole-graph checks -------------------------------------------------------


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


def _with_extras(digest: str, retention: float | None, search: dict[str, SearchField]) -> str:
    """The digest with what later versions of the language added, each only when set, so
    that every definition written before it keeps its digest."""
    if retention is not None:
        digest = _with_retention(digest, retention)
    return _with_search(digest, search) if search else digest


def _with_search(digest: str, search: dict[str, SearchField]) -> str:
    fields = {f.name: [f.kind.value, f.value.source] for f in search.values()}
    blob = json.dumps({"digest": digest, "search": fields}, sort_keys=True)
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
        child = task.child
        if child is not None:  # only when present, as the task itself
            doc["task"]["child"] = [
                child.definition,
                child.version,
                child.id.source if child.id else None,
            ]
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


def _fan_out_envs(
    declared: Mapping[str, tuple[FieldType, bool]], open_context: bool
) -> tuple[Environment, Environment]:
    """A map state's environments: its `input` (with `item`, `index`) and its `apply`
    (with `results`, `failures`)."""
    return (
        Environment(declared, open_context=open_context, fan_out="input"),
        Environment(declared, open_context=open_context, fan_out="apply"),
    )
