"""Coverage: which states and transitions of each definition the scenarios went through.

A transition counts once a step of some scenario fired it (a request's step, a timer's,
a task's); a state once an instance entered it or rested in it. What no scenario reached
is listed by its path in the definition, and marked in a Mermaid diagram of it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from statewrightd.definitions.graph import to_mermaid
from statewrightd.definitions.model import FINISH, Definition, Transition
from statewrightd.scenarios.runner import ScenarioResult


@dataclass(slots=True)
class Coverage:
    definition: Definition
    states: set[str] = field(default_factory=set)
    transitions: set[int] = field(default_factory=set)

    @property
    def state_count(self) -> int:
        return len(self.definition.states)

    @property
    def transition_count(self) -> int:
        return len(self.definition.transitions)

    def unvisited_states(self) -> list[str]:
        return [name for name in self.definition.states if name not in self.states]

    def untaken(self) -> list[Transition]:
        return [t for t in self.definition.transitions if t.index not in self.transitions]

    @property
    def percent(self) -> float:
        """Of transitions (a definition without any: of states)."""
        if self.transition_count:
            return 100.0 * len(self.transitions) / self.transition_count
        return 100.0 * len(self.states) / max(1, self.state_count)


def coverage_of(results: Iterable[ScenarioResult]) -> list[Coverage]:
    """Per definition version the scenarios ran, in name and version order."""
    found: dict[tuple[str, int], Coverage] = {}
    for result in results:
        visits = result.visits
        key = visits.definition.key
        entry = found.setdefault(key, Coverage(visits.definition))
        entry.states |= visits.states
        entry.transitions |= visits.transitions
    return [found[key] for key in sorted(found)]


def describe(t: Transition) -> str:
    """``transitions[3] awaiting_approval -> send on approve``."""
    target = "__finish__" if t.target == FINISH else t.target
    how = ""
    if t.event is not None:
        how = f" on {t.event}"
    elif t.after is not None:
        how = f" after {t.after.text}"
    guard = f" if {t.guard.source}" if t.guard is not None else ""
    return f"{t.path} {t.source} -> {target}{how}{guard}"


def coverage_text(coverages: Sequence[Coverage]) -> str:
    lines = ["Coverage of the definitions the scenarios ran:"]
    for c in coverages:
        d = c.definition
        lines.append(
            f"  {d.name} v{d.version}: transitions {len(c.transitions)}/{c.transition_count}, "
            f"states {len(c.states)}/{c.state_count} ({c.percent:.0f}%)"
        )
        for name in c.unvisited_states():
            lines.append(f"    never entered: state {name}")
        for t in c.untaken():
            lines.append(f"    never taken:   {describe(t)}")
    return "\n".join(lines)


def coverage_mermaid(coverages: Sequence[Coverage], *, markdown: bool = False) -> str:
    """Each definition's state diagram, what the scenarios never reached marked; as a
    Markdown page (a section and a ``mermaid`` block per definition) when ``markdown``."""
    blocks = []
    for c in coverages:
        diagram = to_mermaid(
            c.definition,
            unvisited=frozenset(c.unvisited_states()),
            untaken=frozenset(t.index for t in c.untaken()),
        )
        if markdown:
            d = c.definition
            diagram = (
                f"## {d.name} v{d.version}\n\n"
                f"Transitions {len(c.transitions)}/{c.transition_count}, states "
                f"{len(c.states)}/{c.state_count}. Dashed red: never entered; "
                f'"(never taken)": a transition no scenario took.\n\n'
                f"```mermaid\n{diagram}```\n"
            )
        blocks.append(diagram)
    if markdown:
        return "# Scenario coverage\n\n" + "\n".join(blocks)
    return "\n".join(blocks)


def total_percent(coverages: Sequence[Coverage]) -> float:
    """Of all transitions of every definition together."""
    taken = sum(len(c.transitions) for c in coverages)
    total = sum(c.transition_count for c in coverages)
    return 100.0 if total == 0 else 100.0 * taken / total
