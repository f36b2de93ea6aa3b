"""Loading instances: a row, its definition, its armed timers and its open task.

The one way an instance is read whole, for a step (the runtime), for a read (GetWorkflow)
and for a page of them (ListWorkflows): the timers and tasks of a page are read in one
query each, and only for the instances that can have any.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from statewrightd.definitions.registry import DefinitionRegistry, Loaded
from statewrightd.domain import TERMINAL, Status, TaskStatus
from statewrightd.engine.fsm import FIRST_ERRORS
from statewrightd.engine.sessions import context_bytes
from statewrightd.engine.snapshots import settled_from
from statewrightd.reasons import Reason
from statewrightd.store.records import (
    ChildLink,
    FanOutProgress,
    InstanceRecord,
    ItemEnd,
    TaskRecord,
    TimerRecord,
)
from statewrightd.store.repository import Repository

# The names of a parent's live children a read shows (the rest: ListWorkflows).
FIRST_CHILDREN = 20

# The revision a process holds of an instance in memory, if it holds it.
Cached = Callable[[str], int | None]


def _nothing(workflow_id: str) -> int | None:
    return None


_NONE_READ: Mapping[str, InstanceRecord] = {}


@dataclass(frozen=True, slots=True)
class Family:
    """An instance's parent (if it is a child workflow) and its live children: what a
    read shows of it, not what a step needs."""

    parent: ChildLink | None = None
    open_children: int = 0
    children: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Found:
    """An instance as read from the store, with its definition, its armed timers and its
    open task (and for a read, its family)."""

    record: InstanceRecord
    loaded: Loaded
    timers: tuple[TimerRecord, ...] = ()
    task: TaskRecord | None = None
    family: Family | None = None
    # The context in bytes of JSON, measured where a cache will hold the instance (off
    # the EventLoop); None: not measured. Derived from the record, so not compared.
    context_bytes: int | None = field(default=None, compare=False)


def starts_children(loaded: Loaded) -> bool:
    """Whether the definition has a ``workflow:`` state."""
    states = loaded.definition.states.values()
    return any(s.task is not None and s.task.child is not None for s in states)


def with_family(repo: Repository, found: Sequence[Found]) -> list[Found]:
    """``found`` with each instance's parent, and the live children of those whose
    definition can start any (blocking reads, one or two an instance)."""
    links = repo.child_links([f.record.workflow_id for f in found])
    out: list[Found] = []
    for f in found:
        wid = f.record.workflow_id
        count: int = 0
        first: list[str] = []
        if starts_children(f.loaded):
            count, first = repo.children_of(wid, FIRST_CHILDREN)
        out.append(replace(f, family=Family(links.get(wid), count, tuple(first))))
    return out


def in_task_state(loaded: Loaded, record: InstanceRecord) -> bool:
    """In a task state with one task (a map state's items are read by ``fan_out``)."""
    state = loaded.definition.states.get(record.state)
    return (
        state is not None
        and state.task is not None
        and state.task.fan_out is None
        and record.status not in TERMINAL
    )


def can_have_timers(loaded: Loaded, record: InstanceRecord) -> bool:
    """Only a definition with timers can have armed any, or an instance whose delayed
    start waits on its start timer."""
    return bool(loaded.definition.timed_from) or delayed(record)


def in_map_state(loaded: Loaded, record: InstanceRecord) -> bool:
    state = loaded.definition.states.get(record.state)
    return (
        state is not None
        and state.task is not None
        and state.task.fan_out is not None
        and record.status is Status.RUNNING
    )


def fan_out(repo: Repository, workflow_id: str) -> FanOutProgress | None:
    """The instance's fan-out as its steps know it: the counts of its items, the first
    errors, and once at most one item is open the ends of the others (the join's)."""
    found = repo.fan_out(workflow_id)
    if found is None:
        return None
    errors: tuple[dict[str, object], ...] = ()
    if found.given_up:
        failed = repo.item_ends(workflow_id, found.revision, given_up_only=True, limit=FIRST_ERRORS)
        errors = tuple(item_error(t) for t in failed)
    ended = None
    if found.total - found.completed - found.given_up <= 1:
        ends = repo.item_ends(workflow_id, found.revision, given_up_only=False, limit=found.total)
        ended = {
            t.item_index: ItemEnd(result=t.result)
            if t.status is TaskStatus.COMPLETED
            else ItemEnd(error=item_error(t))
            for t in ends
            if t.item_index is not None
        }
    return replace(found, errors=errors, ended=ended)


def item_error(task: TaskRecord) -> dict[str, object]:
    """A given-up item's error, as ``failures`` and the ``task_failed`` payload carry it."""
    error = task.last_error or {}
    return {
        "item": task.item_index,
        "type": error.get("type"),
        "message": error.get("message"),
        "attempts": task.attempt,
    }


def delayed(record: InstanceRecord) -> bool:
    """Whether ``record`` waits for its delayed start (its start timer is armed)."""
    reason = (record.error or {}).get("reason")
    return record.status == Status.WAITING and reason == Reason.START_DELAYED


def weighed(found: Found) -> Found:
    """``found`` with its context measured: for the caches that weigh what they hold."""
    return replace(found, context_bytes=context_bytes(found.record.context))


class InstanceLoader:
    """Blocking reads; call them off the EventLoop and asyncio threads."""

    def __init__(self, repo: Repository, registry: DefinitionRegistry) -> None:
        self._repo = repo
        self._registry = registry

    def load(self, workflow_id: str) -> Found:
        """The instance ``workflow_id``; raises RecordNotFound when there is none."""
        whole = self._repo.load_whole(workflow_id)
        if whole is None:
            (found,) = self.complete([self._repo.load(workflow_id)])
            return found
        record = whole.record
        loaded = self._registry.get(record.definition, record.version)
        # What ``complete`` would have read: a map state's items are not its one task.
        timers = whole.timers if can_have_timers(loaded, record) else ()
        task = whole.task if in_task_state(loaded, record) else None
        return self._found(record, loaded, timers, task)

    def leased(
        self,
        tasks: Sequence[TaskRecord],
        read: Mapping[str, InstanceRecord] = _NONE_READ,
        cached: Cached = _nothing,
    ) -> dict[str, Found]:
        """The instances of tasks just leased, by id, each with its task as the lease
        left it: only those the task's scheduling step left as they are (the same
        revision) and that a load would read whole from the row and that task (no
        timers, no fan-out). Not read: those ``cached`` already holds at the task's
        revision or later, and those ``read`` holds already (the lease read them)."""
        by_id = {
            t.workflow_id: t
            for t in tasks
            if t.item_index is None and (cached(t.workflow_id) or 0) < t.revision
        }
        if not by_id:
            return {}
        records = [read[i] for i in by_id if i in read]
        unread = [i for i in by_id if i not in read]
        if unread:
            records += self._repo.load_many(unread)
        found: dict[str, Found] = {}
        for record in records:
            task = by_id[record.workflow_id]
            loaded = self._registry.get(record.definition, record.version)
            if (
                record.revision == task.revision
                and record.state == task.state
                and in_task_state(loaded, record)
                and not can_have_timers(loaded, record)
            ):
                found[record.workflow_id] = weighed(self._found(record, loaded, (), task))
        return found

    def complete(self, records: Sequence[InstanceRecord]) -> list[Found]:
        """The instances of ``records`` (as a page lists them), each whole."""
        repo = self._repo
        loaded = [self._registry.get(r.definition, r.version) for r in records]
        pairs = list(zip(records, loaded, strict=True))
        timed = [r.workflow_id for r, d in pairs if can_have_timers(d, r)]
        tasked = [r.workflow_id for r, d in pairs if in_task_state(d, r)]
        timers = repo.armed_timers(timed) if timed else {}
        tasks = repo.open_tasks(tasked) if tasked else {}
        return [
            self._found(r, d, tuple(timers.get(r.workflow_id, ())), tasks.get(r.workflow_id))
            for r, d in pairs
        ]

    def _found(
        self,
        record: InstanceRecord,
        loaded: Loaded,
        timers: tuple[TimerRecord, ...],
        task: TaskRecord | None,
    ) -> Found:
        repo = self._repo
        settled = settled_from(repo, record)
        if in_map_state(loaded, record):
            settled = replace(settled, fan_out=fan_out(repo, record.workflow_id))
        return Found(settled, loaded, timers, task)
