"""The compiled, immutable form of a workflow definition."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from statewrightd.definitions.cel import CompiledExpression, Environment
from statewrightd.definitions.values import FieldType, JSONValue, Reducer, to_json

FINISH = "__finish__"
# A definition's name, which is also part of resource names and URLs.
DEFINITION_NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
# The event a resume means when it names none (or names this): the wait state's first.
RESUME_ALIAS = "resume"
DEFAULT_RECURSION_LIMIT = 25


class StateKind(enum.Enum):
    """Which branch of design §3 rule 2 applies after entering the state."""

    WAIT = "wait"
    AUTOMATIC = "automatic"
    EVENT_ONLY = "event_only"
    LEAF = "leaf"


@dataclass(frozen=True, slots=True)
class ContextField:
    name: str
    type: FieldType
    reducer: Reducer
    default: object  # frozen JSON (tuples / read-only maps); see default_value()
    nullable: bool  # declared without a default: starts as null and may be set to null

    def default_value(self) -> JSONValue:
        """A fresh, mutable-safe copy of the default."""
        return to_json(self.default)


@dataclass(frozen=True, slots=True)
class Assignment:
    """One ``field: expression`` of a ``set``."""

    field: str
    expression: CompiledExpression
    path: str


@dataclass(frozen=True, slots=True)
class SetAction:
    """A ``set`` block: every expression sees the context as it was before the block."""

    assignments: tuple[Assignment, ...]
    path: str


@dataclass(frozen=True, slots=True)
class State:
    name: str
    wait: bool
    entry: tuple[SetAction, ...]
    exit: tuple[SetAction, ...]
    description: str = ""


@dataclass(frozen=True, slots=True)
class Transition:
    index: int
    source: str
    target: str
    event: str | None  # None: automatic
    guard: CompiledExpression | None
    set: SetAction | None

    @property
    def path(self) -> str:
        return f"transitions[{self.index}]"

    @property
    def automatic(self) -> bool:
        return self.event is None


@dataclass(frozen=True, slots=True, eq=False)
class Definition:
    name: str
    version: int
    description: str
    source: str
    digest: str
    initial: str
    states: Mapping[str, State]  # ordered as declared
    transitions: tuple[Transition, ...]
    context_fields: Mapping[str, ContextField]
    recursion_limit: int
    environment: Environment = field(repr=False)
    # Derived lookup tables, computed once by the loader.
    kinds: Mapping[str, StateKind] = field(repr=False)
    automatic_from: Mapping[str, tuple[Transition, ...]] = field(repr=False)
    event_transitions: Mapping[str, Mapping[str, tuple[Transition, ...]]] = field(repr=False)
    all_events: tuple[str, ...] = field(repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Definition):
            return NotImplemented
        return self.digest == other.digest

    def __hash__(self) -> int:
        return hash(self.digest)

    @property
    def key(self) -> tuple[str, int]:
        return (self.name, self.version)

    def events(self) -> tuple[str, ...]:
        """Every event name the definition declares, in first-declared order."""
        return self.all_events

    def events_from(self, state: str) -> tuple[str, ...]:
        """Events declared from ``state``, in first-declared order."""
        return tuple(self.event_transitions.get(state, {}))

    def kind(self, state: str) -> StateKind:
        return self.kinds[state]
