"""Loading instances: a row, its definition, its armed timers and its open task.

The one way an instance is read whole, for a step (the runtime), for a read (GetWorkflow)
and for a page of them (ListWorkflows): the timers and tasks of a page are read in one
query each, and only for the instances that can have any.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import TERMINAL, Status
from statewrightd.engine.snapshots import settled_from
from statewrightd.reasons import Reason
from statewrightd.store.records import InstanceRecord, TaskRecord, TimerRecord
from statewrightd.store.repository import Repository


@dataclass(frozen=True, slots=True)
class Found:
    """An instance as read from the store, with its definition, its armed timers and its
    open task."""

    record: InstanceRecord
    loaded: Loaded
    timers: tuple[TimerRecord, ...] = ()
    task: TaskRecord | None = None


def in_task_state(loaded: Loaded, record: InstanceRecord) -> bool:
    state = loaded.definition.states.get(record.state)
    return state is not None and state.task is not None and record.status not in TERMINAL


def delayed(record: InstanceRecord) -> bool:
    """Whether ``record`` waits for its delayed start (its start timer is armed)."""
    reason = (record.error or {}).get("reason")
    return record.status == Status.WAITING and reason == Reason.START_DELAYED


class InstanceLoader:
    """Blocking reads; call them off the EventLoop and asyncio threads."""

    def __init__(self, repo: Repository, registry: DefinitionRegistry) -> None:
        self._repo = repo
        self._registry = registry

    def load(self, workflow_id: str) -> Found:
        """The instance ``workflow_id``; raises RecordNotFound when there is none."""
        (found,) = self.complete([self._repo.load(workflow_id)])
        return found

    def complete(self, records: Sequence[InstanceRecord]) -> list[Found]:
        """The instances of ``records`` (as a page lists them), each whole."""
        repo = self._repo
        loaded = [self._registry.get(r.definition, r.version) for r in records]
        # Only a definition with timers can have armed any (or an instance whose delayed
        # start waits on its start timer); only a task state a task.
        pairs = list(zip(records, loaded, strict=True))
        timed = [r.workflow_id for r, d in pairs if d.definition.timed_from or delayed(r)]
        tasked = [r.workflow_id for r, d in pairs if in_task_state(d, r)]
        timers = repo.armed_timers(timed) if timed else {}
        tasks = repo.open_tasks(tasked) if tasked else {}
        return [
            Found(
                settled_from(repo, r),
                d,
                tuple(timers.get(r.workflow_id, ())),
                tasks.get(r.workflow_id),
            )
            for r, d in pairs
        ]
