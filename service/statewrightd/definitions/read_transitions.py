"""Reading a definition's transitions: endpoints, events, guards, timers and `set`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from statewrightd.definitions.model import (
    FINISH,
    RESUME_ALIAS,
    TASK_COMPLETED,
    Delay,
    Transition,
)
from statewrightd.definitions.reading import EVENT_RE, TRANSITION_KEYS, Reading, describe
from statewrightd.durations import MAX_DURATION_TEXT, parse_duration, too_long


class TransitionReading(Reading):
    """The `transitions` of a document."""

    def transitions(self, raw: object, states: set[str]) -> list[Transition]:
        if raw is None:
            return []
        if not isinstance(raw, list):
            return self.graph_refused("transitions", "a list", raw)
        out = []
        for i, spec in enumerate(raw):
            path = f"transitions[{i}]"
            if not isinstance(spec, dict):
                self.error(path, f"a transition must be a map, not {describe(spec)}")
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
        ok = not self.unknown_keys(spec, TRANSITION_KEYS, path)
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
            wrong = "a guard must be bool, but this one is {kind}"
            guard = self.compile_giving(spec["guard"], f"{path}.guard", ("bool", "dyn"), wrong)
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
            if too_long(seconds):
                self.error(f"{path}.after", f"after must be at most {MAX_DURATION_TEXT}")
                return False
            return Delay(raw, seconds=seconds)
        if has_expr:
            wrong = (
                "after_expr must give a duration or a timestamp, but this one gives {kind} "
                "(wrap it: duration(...), timestamp(...))"
            )
            kinds = ("duration", "timestamp")
            compiled = self.compile_giving(spec["after_expr"], f"{path}.after_expr", kinds, wrong)
            if compiled is None:
                return False
            return Delay(compiled.source, expression=compiled)
        return None
