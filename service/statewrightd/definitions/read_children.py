"""Reading a ``workflow:`` state (a child workflow) and the ``map`` it shares with tasks.

A child workflow is a task the server works itself, on the reserved queue CHILD_QUEUE:
its task row is the durable record (the outbox) that the step entering the state writes
in its own transaction, the server's child runner starts the child from it, and the
child's end finishes it. So a child has what a task has: it is cancelled when its state
is left, a ``map`` of children is joined as a map of tasks is, and its result is applied
exactly once (fenced by the task's lease).
"""

from __future__ import annotations

from statewrightd.definitions.model import (
    CHILD_HOLD_SECONDS,
    CHILD_QUEUE,
    DEFINITION_NAME,
    ChildSpec,
    FanOut,
    RetryPolicy,
    TaskSpec,
)
from statewrightd.definitions.reading import CHILD_KEYS, Reading, describe

# A child's start is retried (a replica that died between its lease and the start): each
# attempt is idempotent, since the child's id and its parent link decide what exists.
CHILD_RETRY = RetryPolicy(max_attempts=20, initial_interval=1.0, max_interval=30.0)


class ChildReading(Reading):
    """A state's ``workflow:`` and a ``map`` (of tasks or of children)."""

    def child_workflow(self, raw: object, path: str) -> TaskSpec | None:
        if not isinstance(raw, dict):
            self.error(
                path, f"workflow must be a map with at least `definition`, not {describe(raw)}"
            )
            return None
        broken = self.unknown_keys(raw, CHILD_KEYS, path)
        definition = raw.get("definition")
        if definition is None:
            self.required(f"{path}.definition")
        elif not isinstance(definition, str) or not DEFINITION_NAME.match(definition):
            self.error(f"{path}.definition", "a definition name must match [a-z][a-z0-9-]{0,62}")
            definition = None
        version = raw.get("version")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or version < 1
        ):
            self.error(f"{path}.version", "version must be a positive integer")
            broken = True
        fan_out, fan_out_ok = self.fan_out(raw, path)
        env = self.item_env if fan_out is not None else self.env
        child_id = child_input = apply = None
        if "id" in raw:
            wrong = "id must give a string, but this one gives {kind}"
            child_id = self.compile_giving(
                raw["id"], f"{path}.id", ("string", "dyn"), wrong, env=env
            )
            broken = broken or child_id is None
        if "input" in raw:
            wrong = "input must give a map, but this one gives {kind}"
            child_input = self.compile_giving(
                raw["input"], f"{path}.input", ("map", "dyn"), wrong, env=env
            )
            broken = broken or child_input is None
        if "apply" in raw:
            # `result`: the child's final Workflow as a map (id, status, state, context).
            join = self.join_env if fan_out is not None else self.task_env
            apply = self.set_action(raw["apply"], f"{path}.apply", env=join)
        if broken or not fan_out_ok or not isinstance(definition, str):
            return None
        assert version is None or isinstance(version, int)
        return TaskSpec(
            CHILD_QUEUE,
            child_input,
            apply,
            start_to_close=CHILD_HOLD_SECONDS,
            heartbeat=None,
            schedule_to_close=CHILD_HOLD_SECONDS,
            retry=CHILD_RETRY,
            fan_out=fan_out,
            child=ChildSpec(definition, version, child_id),
        )

    def fan_out(self, raw: dict[str, object], path: str) -> tuple[FanOut | None, bool]:
        """A ``map`` (of tasks or children) and its limits: (the fan-out or None, whether it
        read)."""
        limits = ("max_concurrency", "tolerated_failures")
        if "map" not in raw:
            for key in limits:
                if key in raw:
                    self.error(f"{path}.{key}", f"{key} applies only to a state with `map`")
            return None, not any(key in raw for key in limits)
        wrong = "map must give a list (one item per element), but this one gives {kind}"
        items = self.compile_giving(raw["map"], f"{path}.map", ("list", "dyn"), wrong)
        concurrency = raw.get("max_concurrency")
        ok = items is not None
        if concurrency is not None and (
            isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
        ):
            self.error(f"{path}.max_concurrency", "max_concurrency must be a positive integer")
            ok = False
        tolerated = raw.get("tolerated_failures", 0)
        if isinstance(tolerated, bool) or not isinstance(tolerated, int) or tolerated < 0:
            self.error(
                f"{path}.tolerated_failures", "tolerated_failures must be an integer of 0 or more"
            )
            ok = False
        if not ok or items is None:
            return None, False
        assert isinstance(tolerated, int) and (concurrency is None or isinstance(concurrency, int))
        return FanOut(items, concurrency, tolerated), True
