"""What a server process remembers of the task leases it handed out.

A worker usually completes a task through the process that leased it (its channel stays
on one), and that process knows the task as the lease left it: its completion need not
read the task first. The completion's save then requires the task's row unchanged since
this process last wrote it (the lease, or a heartbeat through it), so that what the
answer says of the task is what is stored. Whatever this process did not see (a heartbeat
through another process, a cancellation, the lease given to another worker) refuses that
save, and the completion is made as any other: the task read first.

The lease also remembers the task's instance as the poll read it just after leasing (with
the other leases' instances, in one read): a process that did not step
the instance last then completes it without loading it first. The save's compare-and-swap
refuses that instance if anything stepped it since, and it is loaded then.

Only the asyncio thread uses it. It holds at most ``CAPACITY`` leases, and instances whose
contexts come to at most its budget in bytes of JSON (a quarter of what the session cache
may hold), the oldest forgotten first: a lease forgotten costs its completion one read,
nothing else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from statewrightd.config import CACHED_CONTEXT_BYTES
from statewrightd.engine.loading import Found
from statewrightd.store.records import TaskRecord

# Leases in flight through one process: a few hundred for a busy queue's workers.
CAPACITY = 2048
BUDGET = CACHED_CONTEXT_BYTES // 4


@dataclass(frozen=True, slots=True)
class Lease:
    task: TaskRecord  # as this process last wrote it
    instance: Found | None = None  # as the poll read it after leasing, if it could

    @property
    def weight(self) -> int:
        """What the lease counts against the budget: its instance's context."""
        instance = self.instance
        return 0 if instance is None else instance.context_bytes or 0


class LeaseMemory:
    def __init__(self, capacity: int = CAPACITY, budget: int = BUDGET) -> None:
        self._capacity = capacity
        self._budget = budget
        self._bytes = 0
        self._leases: OrderedDict[tuple[str, str], Lease] = OrderedDict()

    def __len__(self) -> int:
        return len(self._leases)

    @property
    def context_bytes(self) -> int:
        """The remembered instances' contexts, in bytes of JSON."""
        return self._bytes

    def leased(
        self, tasks: Iterable[TaskRecord], instances: Mapping[str, Found] | None = None
    ) -> None:
        """Tasks as the lease that handed them out left their rows, with their instances
        by id as read after it (those ``instances`` has)."""
        instances = instances or {}
        for task in tasks:
            self._put(
                (task.workflow_id, task.task_id), Lease(task, instances.get(task.workflow_id))
            )
        leases = self._leases
        while len(leases) > self._capacity or self._bytes > self._budget:
            _, oldest = leases.popitem(last=False)
            self._bytes -= oldest.weight

    def renewed(self, task: TaskRecord) -> None:
        """A heartbeat through this process left the task's row so; remembered if its
        lease is."""
        key = (task.workflow_id, task.task_id)
        known = self._leases.get(key)
        if known is not None and known.task.lease_token == task.lease_token:
            self._put(key, Lease(task, known.instance))

    def take(self, workflow_id: str, task_id: str, token: str) -> Lease | None:
        """The lease ``token`` as this process last wrote it, forgotten as it is taken (a
        completion ends the lease whatever its answer); None if unknown. A call with
        another token (an old lease's late completion) leaves it remembered."""
        key = (workflow_id, task_id)
        lease = self._leases.get(key)
        if lease is None or lease.task.lease_token != token:
            return None
        self.forget(workflow_id, task_id)
        return lease

    def forget(self, workflow_id: str, task_id: str) -> None:
        lease = self._leases.pop((workflow_id, task_id), None)
        if lease is not None:
            self._bytes -= lease.weight

    def _put(self, key: tuple[str, str], lease: Lease) -> None:
        """Remember ``lease`` as the newest, in place of any under ``key``."""
        leases = self._leases
        old = leases.pop(key, None)
        if old is not None:
            self._bytes -= old.weight
        leases[key] = lease
        self._bytes += lease.weight
