"""Reading a definition's context fields and its states, with their tasks."""

from __future__ import annotations

from statewrightd.definitions.cel import (
    RESERVED_WORDS,
)
from statewrightd.definitions.model import (
    QUEUE_NAME,
    ContextField,
    RetryPolicy,
    State,
    TaskSpec,
)
from statewrightd.definitions.read_children import ChildReading
from statewrightd.definitions.reading import (
    FIELD_KEYS,
    FIELD_RE,
    RETRY_KEYS,
    STATE_KEYS,
    STATE_RE,
    TASK_KEYS,
    TIMEOUT_KEYS,
    describe,
)
from statewrightd.definitions.values import (
    FieldType,
    JSONValue,
    Reducer,
    ValueTypeError,
    conform,
    freeze,
)


class StateReading(ChildReading):
    """The `context` and `states` of a document."""

    def context_fields(self, raw: object) -> dict[str, ContextField]:
        fields: dict[str, ContextField] = {}
        if raw is None:
            return fields
        if not isinstance(raw, dict):
            self.error("context", f"context must be a map of fields, not {describe(raw)}")
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
            self.error(path, f"a field must be a map with at least `type`, not {describe(spec)}")
            return None
        broken = self.unknown_keys(spec, FIELD_KEYS, path)
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

    def state_names(self, raw: object) -> list[str]:
        if raw is None or raw == {}:
            if "states" not in self.misspelt:
                self.error("states", "a definition needs at least one state")
            return []
        if not isinstance(raw, dict):
            return self.graph_refused("states", "an ordered map", raw)
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
                self.error(path, f"a state must be a map (or empty), not {describe(spec)}")
                self.unsure_states.add(name)
                continue
            if self.unknown_keys(spec, STATE_KEYS, path):
                self.unsure_states.add(name)
            wait = spec.get("wait", False)
            if not isinstance(wait, bool):
                self.error(f"{path}.wait", "wait must be true or false")
                self.unsure_states.add(name)
                wait = False
            task = self.state_work(spec, path, name, wait)
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

    def state_work(
        self, spec: dict[str, object], path: str, name: str, wait: bool
    ) -> TaskSpec | None:
        """What a state hands out when entered: a worker's task (``task:``), or a child
        workflow (``workflow:``, a task the server itself works); None: neither."""
        if "task" in spec and "workflow" in spec:
            self.error(f"{path}.workflow", "a state has a task or a child workflow, not both")
            self.unsure_states.add(name)
            return None
        key = "task" if "task" in spec else "workflow" if "workflow" in spec else None
        if key is None:
            return None
        read = self.task if key == "task" else self.child_workflow
        task = read(spec[key], f"{path}.{key}")
        if task is None:
            self.unsure_states.add(name)
        if wait:
            self.error(f"{path}.wait", f"a {key} state cannot also be a wait state")
            self.unsure_states.add(name)
        return task

    def task(self, raw: object, path: str) -> TaskSpec | None:
        if not isinstance(raw, dict):
            self.error(path, f"task must be a map with at least `queue`, not {describe(raw)}")
            return None
        broken = self.unknown_keys(raw, TASK_KEYS, path)
        queue = raw.get("queue")
        if queue is None:
            self.required(f"{path}.queue")
        elif not isinstance(queue, str) or not QUEUE_NAME.match(queue):
            self.error(f"{path}.queue", "a queue name must match [a-z][a-z0-9-.]{0,62}")
            queue = None
        fan_out, fan_out_ok = self.fan_out(raw, path)
        broken = broken or not fan_out_ok
        task_input = None
        if "input" in raw:
            wrong = "input must give a map, but this one gives {kind}"
            env = self.item_env if fan_out is not None else self.env
            task_input = self.compile_giving(
                raw["input"], f"{path}.input", ("map", "dyn"), wrong, env=env
            )
        apply = None
        if "apply" in raw:
            env = self.join_env if fan_out is not None else self.task_env
            apply = self.set_action(raw["apply"], f"{path}.apply", env=env)
        timeouts = self.task_timeouts(raw.get("timeouts"), f"{path}.timeouts")
        retry = self.retry_policy(raw.get("retry"), f"{path}.retry")
        priority = key = None
        if "priority" in raw:
            wrong = "priority must give an int (1 first .. 5), but this one gives {kind}"
            written = raw["priority"]
            if isinstance(written, int) and not isinstance(written, bool) and not 1 <= written <= 5:
                self.error(f"{path}.priority", "priority must be from 1 (first) to 5")
            else:
                priority = self.compile_giving(written, f"{path}.priority", ("int", "dyn"), wrong)
            broken = broken or priority is None
        if "concurrency_key" in raw:
            wrong = "concurrency_key must give a string, but this one gives {kind}"
            key = self.compile_giving(
                raw["concurrency_key"], f"{path}.concurrency_key", ("string", "dyn"), wrong
            )
            broken = broken or key is None
        if broken or queue is None or timeouts is None or retry is None:
            return None
        return TaskSpec(
            queue,
            task_input,
            apply,
            *timeouts,
            retry=retry,
            priority=priority,
            concurrency_key=key,
            fan_out=fan_out,
        )

    def task_timeouts(self, raw: object, path: str) -> tuple[float, float | None, float] | None:
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            self.error(path, f"timeouts must be a map, not {describe(raw)}")
            return None
        ok = not self.unknown_keys(raw, TIMEOUT_KEYS, path)
        values: dict[str, float] = {}
        for key, value in raw.items():
            if key not in TIMEOUT_KEYS:
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
            self.error(path, f"retry must be a map, not {describe(raw)}")
            return None
        ok = not self.unknown_keys(raw, RETRY_KEYS, path)
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
