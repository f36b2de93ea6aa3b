"""What a definition's states and transitions make of each other: each state's kind, the
ways out it lacks, transitions never taken, states never reached."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from types import MappingProxyType

from statewrightd.definitions.model import (
    CHILD_FAILED,
    FINISH,
    TASK_FAILED,
    State,
    StateKind,
    Transition,
    failed_event,
)
from statewrightd.definitions.reading import Reading


class Analysis(Reading):
    """Judges the graph the states and transitions make."""

    def analyse(
        self, states: dict[str, State], transitions: list[Transition], initial: str
    ) -> tuple[
        dict[str, StateKind],
        dict[str, tuple[Transition, ...]],
        dict[str, Mapping[str, tuple[Transition, ...]]],
        tuple[str, ...],
    ]:
        """Each state's kind, its automatic and event transitions, and every event; what
        none of it can ever do is reported on the way."""
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
        kinds = {
            name: self.kind(name, state, automatic, by_event, timed)
            for name, state in states.items()
        }
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

    def reserved_events(
        self, name: str, state: State, by_event: dict[str, dict[str, list[Transition]]]
    ) -> None:
        """``task_failed`` fires only from a task state, ``child_failed`` only from a
        child workflow state."""
        if name in self.unsure_states:
            return
        fired = None if state.task is None else failed_event(state.task)
        for event, kind in ((TASK_FAILED, "task"), (CHILD_FAILED, "child workflow")):
            if event == fired:
                continue
            for t in by_event.get(name, {}).get(event, []):
                self.error(
                    f"{t.path}.on",
                    f"{event} only fires from a {kind} state, and {name!r} is not one",
                )

    def kind(
        self,
        name: str,
        state: State,
        automatic: dict[str, list[Transition]],
        by_event: dict[str, dict[str, list[Transition]]],
        timed: dict[str, list[Transition]],
    ) -> StateKind:
        """What state ``name`` is, by the way out its transitions give it."""
        # Whether its way out can be judged: nothing about the state or a transition
        # from it was refused (that problem is the one to fix first).
        sure = name not in self.unsure_states and name not in self.unsure_exits
        sure = sure and not (self.sources_unknown or self.graph_unknown)
        self.reserved_events(name, state, by_event)
        if state.task is not None:
            exits = name in automatic or name in by_event or name in timed
            if not exits and sure:
                what, key = ("child", "workflow") if state.task.child else ("task", "task")
                self.warning(
                    f"states.{name}.{key}",
                    f"{what} state {name!r} has no way out: no automatic transition, no "
                    f"{failed_event(state.task)} handler and no event transition",
                )
            if sure:
                self.no_fallback(name, automatic.get(name, []), "after its task's result")
            return StateKind.TASK
        if state.wait:
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
            return StateKind.WAIT
        if name in automatic:
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
            return StateKind.AUTOMATIC
        if name in by_event or name in timed:
            return StateKind.EVENT_ONLY
        return StateKind.LEAF

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
