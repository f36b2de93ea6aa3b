"""What a server process remembers of the task leases it handed out.

A worker usually completes a task through the process that leased it (its channel stays
on one), and that process knows the task as the lease left it: its completion need not
read the task first. The completion's save then requires the task's row unchanged since
this process last wrote it (the lease, or a heartbeat through it), so that what the
answer says of the task is what is stored. Whatever this process did not see (a heartbeat
through another process, a cancellation, the lease given to another worker) refuses that
save, and the completion is made as any other: the task read first.

Only the asyncio thread uses it. It holds at most ``CAPACITY`` leases, the oldest
forgotten first: a lease forgotten costs its completion one read, nothing else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from statewrightd.store.records import TaskRecord

# Leases in flight through one process: a few hundred for a busy queue's workers.
CAPACITY = 2048


class LeaseMemory:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._leases: OrderedDict[tuple[str, str], TaskRecord] = OrderedDict()

    def __len__(self) -> int:
        return len(self._leases)

    def leased(self, tasks: Iterable[TaskRecord]) -> None:
        """Tasks as the lease that handed them out left their rows."""
        leases = self._leases
        for task in tasks:
            key = (task.workflow_id, task.task_id)
            leases[key] = task
            leases.move_to_end(key)
        while len(leases) > self._capacity:
            leases.popitem(last=False)

    def renewed(self, task: TaskRecord) -> None:
        """A heartbeat through this process left the task's row so; remembered if its
        lease is."""
        key = (task.workflow_id, task.task_id)
        known = self._leases.get(key)
        if known is not None and known.lease_token == task.lease_token:
            self._leases[key] = task

    def take(self, workflow_id: str, task_id: str, token: str) -> TaskRecord | None:
        """The task as this process last wrote it under lease ``token``, forgotten as it
        is taken (a completion ends the lease whatever its answer); None if unknown. A
        call with another token (an old lease's late completion) leaves it remembered."""
        key = (workflow_id, task_id)
        task = self._leases.get(key)
        if task is None or task.lease_token != token:
            return None
        del self._leases[key]
        return task

    def forget(self, workflow_id: str, task_id: str) -> None:
        self._leases.pop((workflow_id, task_id), None)
