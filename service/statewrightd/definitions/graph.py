"""State diagrams of a definition: Mermaid (for docs and GetDefinition) and Graphviz DOT."""

from __future__ import annotations

from collections.abc import Collection

from statewrightd.definitions.model import FINISH, Definition, StateKind, Transition


def _label(t: Transition) -> str:
    parts = []
    if t.event is not None:
        parts.append(t.event)
    if t.after is not None:
        parts.append(f"after {t.after.text}")
    if t.guard is not None:
        parts.append(f"[{t.guard.source}]")
    if t.set is not None:
        parts.append("/ set " + ", ".join(a.field for a in t.set.assignments))
    return " ".join(parts)


def _mermaid_text(text: str) -> str:
    # Mermaid labels end at a newline and treat ';' and '#' specially: use entity codes.
    return (
        text.replace("#", "#35;")
        .replace(";", "#59;")
        .replace('"', "#quot;")
        .replace(":", "#58;")
        .replace("\n", " ")
    )


def _mermaid_id(name: str) -> str:
    # Mermaid ids cannot contain '-'.
    return "s_" + name.replace("-", "_")


def to_mermaid(
    defn: Definition,
    *,
    unvisited: Collection[str] = frozenset(),
    untaken: Collection[int] = frozenset(),
) -> str:
    """A ``stateDiagram-v2``: wait states and task states (with their queue) in classes
    of their own, automatic edges unlabeled except for their guard, event edges labeled
    with the event name. States in ``unvisited`` and transitions (by index) in
    ``untaken`` are marked as such (what ``statewrightd test --coverage`` never reached)."""
    lines = ["stateDiagram-v2", f"    %% {defn.name} v{defn.version}"]
    for name, state in defn.states.items():
        suffix = " (wait)" if state.wait else ""
        if state.task is not None:
            suffix = f" (task on {state.task.queue})"
        lines.append(f'    state "{_mermaid_text(name)}{suffix}" as {_mermaid_id(name)}')
    lines.append(f"    [*] --> {_mermaid_id(defn.initial)}")
    for t in defn.transitions:
        target = "[*]" if t.target == FINISH else _mermaid_id(t.target)
        label = _label(t)
        if t.index in untaken:
            label = f"{label} (never taken)" if label else "never taken"
        arrow = f"    {_mermaid_id(t.source)} --> {target}"
        lines.append(f"{arrow} : {_mermaid_text(label)}" if label else arrow)
    for name in defn.states:
        if defn.kind(name) is StateKind.LEAF:
            lines.append(f"    {_mermaid_id(name)} --> [*]")
    waits = [_mermaid_id(n) for n, s in defn.states.items() if s.wait]
    if waits:
        lines.append("    classDef wait fill:#fff3c4,stroke:#b08800,stroke-width:2px")
        lines.append(f"    class {','.join(waits)} wait")
    tasks = [_mermaid_id(n) for n, s in defn.states.items() if s.task is not None]
    if tasks:
        lines.append("    classDef task fill:#dbeafe,stroke:#1d4ed8,stroke-width:2px")
        lines.append(f"    class {','.join(tasks)} task")
    missed = [_mermaid_id(n) for n in defn.states if n in unvisited]
    if missed:
        lines.append(
            "    classDef unvisited fill:#fde2e2,stroke:#b91c1c,stroke-width:2px,"
            "stroke-dasharray:5 5"
        )
        lines.append(f"    class {','.join(missed)} unvisited")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(defn: Definition) -> str:
    """Graphviz: wait states are yellow octagons, task states blue boxes that name their
    queue, automatic edges are dashed."""
    lines = [
        f'digraph "{_dot_text(defn.name)}_v{defn.version}" {{',
        "    rankdir=LR;",
        '    node [shape=box, style="rounded"];',
        '    __start__ [shape=point, label=""];',
        '    __finish__ [shape=doublecircle, label="", width=0.2];',
    ]
    for name, state in defn.states.items():
        if state.wait:
            lines.append(
                f'    "{_dot_text(name)}" [shape=octagon, style=filled, fillcolor="#fff3c4", '
                f'label="{_dot_text(name)}\\n(wait)"];'
            )
        elif state.task is not None:
            lines.append(
                f'    "{_dot_text(name)}" [style="rounded,filled", fillcolor="#dbeafe", '
                f'label="{_dot_text(name)}\\n(task on {_dot_text(state.task.queue)})"];'
            )
        else:
            lines.append(f'    "{_dot_text(name)}";')
    lines.append(f'    __start__ -> "{_dot_text(defn.initial)}";')
    for t in defn.transitions:
        target = "__finish__" if t.target == FINISH else f'"{_dot_text(t.target)}"'
        attrs = [f'label="{_dot_text(_label(t))}"']
        if t.automatic:
            attrs.append("style=dashed")
        lines.append(f'    "{_dot_text(t.source)}" -> {target} [{", ".join(attrs)}];')
    for name in defn.states:
        if defn.kind(name) is StateKind.LEAF:
            lines.append(f'    "{_dot_text(name)}" -> __finish__ [style=dotted];')
    lines.append("}")
    return "\n".join(lines) + "\n"
