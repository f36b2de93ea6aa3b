"""How long validating the largest definitions the limits allow takes.

Generates definitions at the limits of docs/definitions.md (states, transitions,
expressions, bytes), each shaped to cost the validator the most it can (every
expression a comprehension, thousands of unreachable states to report, a megabyte of
text), plus ones past the limits (which must be refused at once), and times
``statewrightd validate``'s own function on each, several rounds, best and worst.

    .venv/bin/python bench/definition_limits.py [--rounds 3] [--states N ...]

The goal: every definition within the limits validates in at most 2 s.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

from statewrightd.definitions.limits import (
    MAX_CONTEXT_FIELDS,
    MAX_DEFINITION_BYTES,
    MAX_EXPRESSIONS,
    MAX_STATES,
    MAX_TRANSITIONS,
)
from statewrightd.definitions.loader import validate_source

GOAL_SECONDS = 2.0


def _header(name: str, fields: int = 50) -> list[str]:
    lines = [f"name: {name}", "version: 1", "recursion_limit: 10000", "context:"]
    lines += [f"  f{i}: {{type: int, default: 0}}" for i in range(fields)]
    lines.append("  items: {type: list, default: []}")
    return lines


def mixed(states: int = MAX_STATES, transitions: int = MAX_TRANSITIONS) -> str:
    """States of every kind, guards, automatic and event transitions, a random graph."""
    lines = [*_header("mixed"), "states:"]
    for i in range(states):
        lines.append(f"  s{i}: {{wait: true}}" if i % 4 == 3 else f"  s{i}: {{}}")
    lines.append("transitions:")
    for i in range(transitions):
        src, dst = i % states, (i * 7 + 1) % states
        if src % 4 == 3:
            guard = f"context.items.exists(x, x == {i})"
            lines.append(f'  - {{from: s{src}, on: ev{i % 13}, to: s{dst}, guard: "{guard}"}}')
        else:
            guard = f"context.f{i % 50} > {i} && context.items.size() < {i}"
            lines.append(f'  - {{from: s{src}, to: s{dst}, guard: "{guard}"}}')
    return "\n".join(lines) + "\n"


def comprehensions(expressions: int = MAX_EXPRESSIONS, states: int = MAX_STATES) -> str:
    """Every expression a nested comprehension (the costliest to compile and analyse)."""
    lines = [*_header("comprehensions"), "states:"]
    per_state = max(1, expressions // states)
    for i in range(states):
        sets = ", ".join(
            f'f{k % 50}: "context.items.map(x, context.items.filter(y, y > x + {i}).size())'
            f'.size() + {k}"'
            for k in range(per_state)
        )
        lines.append(f"  s{i}:\n    entry: [{{set: {{{sets}}}}}]")
    lines.append("transitions:")
    lines += [f"  - {{from: s{i}, to: s{i + 1}}}" for i in range(states - 1)]
    return "\n".join(lines) + "\n"


def unreachable(states: int = MAX_STATES, transitions: int = MAX_TRANSITIONS) -> str:
    """A long chain plus states nothing reaches: reachability and a warning for each."""
    lines = [*_header("unreachable"), "states:"]
    lines += [f"  s{i}: {{}}" for i in range(states)]
    lines.append("transitions:")
    chain = min(states - 1, transitions)
    lines += [f"  - {{from: s{i}, to: s{i + 1}, guard: 'context.f1 > {i}'}}" for i in range(chain)]
    for i in range(transitions - chain):
        lines.append(f"  - {{from: s{states - 1 - i % 100}, to: s{states - 2 - i % 50}}}")
    return "\n".join(lines) + "\n"


def wide_context() -> str:
    """Every context field the limit allows, each read by an expression."""
    lines = [*_header("wide", MAX_CONTEXT_FIELDS - 1), "states:", "  a:", "    entry:"]
    lines += [
        f'      - {{set: {{f{i}: "context.f{i} + 1"}}}}' for i in range(MAX_CONTEXT_FIELDS - 1)
    ]
    lines.append("  b: {}")
    lines += ["transitions:", "  - {from: a, to: b}"]
    return "\n".join(lines) + "\n"


def dense_bytes() -> str:
    """As many bytes as allowed, as many small YAML nodes as fit (parsing's worst case,
    refused after parsing for its unknown key)."""
    head = "\n".join([*_header("dense"), "states:", "  a: {}", "transitions: []", "extra:", ""])
    line = "  - [" + ", ".join(["1"] * 30) + "]\n"
    count = (MAX_DEFINITION_BYTES - len(head) - 1) // len(line)
    return head + line * count


def long_descriptions() -> str:
    """As many bytes as allowed, as long descriptions of states and transitions."""
    body = "x" * ((MAX_DEFINITION_BYTES - 4096) // (MAX_STATES + MAX_TRANSITIONS) - 40)
    lines = [*_header("described"), "states:"]
    lines += [f"  s{i}: {{description: '{body}'}}" for i in range(MAX_STATES)]
    lines.append("transitions:")
    lines += [
        f"  - {{from: s{i % MAX_STATES}, to: s{(i + 1) % MAX_STATES}, description: '{body}'}}"
        for i in range(MAX_TRANSITIONS)
    ]
    return "\n".join(lines) + "\n"


def too_many_states() -> str:
    """Twenty thousand states (what used to take minutes), within the byte limit: refused
    once counted."""
    lines = ["name: many", "version: 1", "states:"]
    lines += [f"  s{i}:" for i in range(20_000)]
    return "\n".join(lines) + "\n"


CASES: dict[str, Callable[[], str]] = {
    "mixed (states, transitions at the limits)": mixed,
    "comprehensions (expressions at the limit)": comprehensions,
    "unreachable states": unreachable,
    "context fields at the limit": wide_context,
    "bytes at the limit, small YAML nodes (refused)": dense_bytes,
    "bytes at the limit, long descriptions": long_descriptions,
    "20,000 states (refused)": too_many_states,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} (2-core machine: compare with it)")
    worst_within = 0.0
    for label, make in CASES.items():
        text = make()
        times, cpu = [], []
        for _ in range(args.rounds):
            began, began_cpu = time.perf_counter(), time.process_time()
            definition, problems = validate_source(text, label)
            times.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        errors = sum(p.severity == "error" for p in problems)
        verdict = "ok" if definition is not None else f"refused ({errors} error(s))"
        if "refused" not in label:
            worst_within = max(worst_within, min(cpu))
        print(
            f"{label:47} {len(text.encode()):>9,} B  wall best {min(times):6.2f} s "
            f"worst {max(times):6.2f} s  cpu best {min(cpu):6.2f} s  {verdict}"
        )
    ratio = worst_within / GOAL_SECONDS
    print(
        "slowest within the limits, in processor time (what a busy machine inflates least): "
        f"{worst_within:.2f} s = {ratio:.2f} x the {GOAL_SECONDS} s goal"
    )


if __name__ == "__main__":
    main()
