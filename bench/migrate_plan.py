"""Micro-benchmark: what a MigrateWorkflow step costs in the engine, beside a ResetWorkflow
step and a resume of the same instance (the planner checks both versions and evaluates
the `set` expressions on every migration; the rest is the same re-entry as a reset).

Not a test. Run: ``.venv/bin/python -m bench.migrate_plan [seconds-per-case]``.
The instance is WAITING in v1's ``review`` with a context of 40 fields; v2 renames the
state, drops one field, adds two (one by default, one by a `set` expression).
"""

from __future__ import annotations

import sys

from bench.engine_steps import measure
from statewrightd.definitions import load_definition
from statewrightd.engine import fsm, migration
from statewrightd.engine.model import StepResult

FIELDS = "\n".join(f"  f{i}: {{type: int, default: {i}}}" for i in range(38))

V1 = f"""
name: bench-ticket
version: 1
context:
  amount: {{type: int, default: 0}}
  note:   {{type: string, default: "n"}}
{FIELDS}
states:
  review: {{wait: true}}
  done: {{}}
transitions:
  - {{from: review, on: approve, to: done}}
  - {{from: review, after: 1h, to: done}}
"""

V2 = f"""
name: bench-ticket
version: 2
context:
  amount:   {{type: int, default: 0}}
  priority: {{type: int, default: 3}}
  tier:     {{type: string, default: ""}}
{FIELDS}
states:
  approval: {{wait: true}}
  done: {{}}
transitions:
  - {{from: approval, on: approve, to: done}}
  - {{from: approval, after: 2h, to: done}}
"""


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    v1, v2 = load_definition(V1), load_definition(V2)
    waiting = fsm.start(v1, "w", {"amount": 7}).snapshot
    state_map = {"review": "approval"}
    sets = {"tier": "context.amount > 5 ? 'big' : 'small'"}

    def migrate() -> StepResult:
        return migration.migrate(v1, v2, waiting, state_map, sets)[1]

    resume = measure(
        "resume (v1, one transition)", lambda: fsm.resume(v1, waiting, "approve", {}), seconds
    )
    reset = measure(
        "reset (v1, to its own state)",
        lambda: fsm.reset(v1, waiting, 1, "review", waiting.context),
        seconds,
    )
    moved = measure("migrate v1 -> v2 (plan + step)", migrate, seconds)
    print(f"migrate / reset: {moved / reset:.2f}; migrate / resume: {moved / resume:.2f}")


if __name__ == "__main__":
    main()
