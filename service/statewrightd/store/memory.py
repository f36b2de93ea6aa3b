"""An in-process store for ``statewrightd test``: the repository contract held in memory.

The scenario runner runs the server's engine against this store instead of a database, so
a scenario takes microseconds per step and needs nothing installed. It keeps rows exactly
as the SQLite backend does (JSON as text, times as integer microseconds), checks every
operation through the same codec before anything changes, builds its refusals with the
same ``failures`` and reads rows back through the same ``Rows`` mappers: what a step reads
back here is what it would read back from SQLite. The contract tests run against it too.

Each public method holds one lock for its whole work, which makes it a transaction: a
batch of operations is applied (each row's compare-and-swap on its own) as one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from statewrightd.errors import InvalidArgument, StorageUnavailable, StoreError
from statewrightd.reasons import Reason
from statewrightd.store import failures
from statewrightd.store.codec import (
    NEVER,
    EncodedOp,
    encode_definition,
    from_micros,
    loads,
    to_micros,
)
from statewrightd.store.filters import Filter, matches
from statewrightd.store.memory_batches import MemoryBatches
from statewrightd.store.memory_children import MemoryChildren
from statewrightd.store.memory_search import MemorySearch
from statewrightd.store.memory_state import (
    CHILD_TABLES,
    COUNT_CAP,
    FINISHED,
    OPEN,
    PURGE_LIMIT,
    ROWS,
    Instance,
    micros,
    stamp,
    stored_task,
)
from statewrightd.store.memory_work import MemoryWork
from statewrightd.store.outcomes import HistoryWitness, resolve_each
from statewrightd.store.records import (
    Create,
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    ListOrder,
    Operation,
    Purged,
    RequestRecord,
    RetentionCounts,
    TaskFinish,
    Tombstone,
    target_of,
)
from statewrightd.store.repository import Params


class MemoryRepository(MemoryBatches, MemoryChildren, MemorySearch, MemoryWork):
    """The repository contract in this process's memory; gone when the process ends."""

    # -- writes ----------------------------------------------------------------------

    def _write(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        try:
            with self._held():
                return [self._apply_one(e) for e in encoded]
        except StorageUnavailable as exc:
            return [exc for _ in encoded]

    def _apply_one(self, e: EncodedOp) -> InstanceRecord | StoreError:
        """One row's compare-and-swap; every check comes before the first change."""
        op, p = e.op, e.params
        wid = p["workflow_id"]
        rid = p["request_id"]
        instance = self._instances.get(wid)
        refusal = self._fenced(op, p, instance)
        if refusal is not None:
            return refusal
        row = _instance_row(wid, p)
        if isinstance(op, Create):
            if instance is not None:
                return self._refused(op, instance)
            instance = self._instances[wid] = Instance(row)
        else:
            if instance is None or instance.revision != p["expected"]:
                return self._refused(op, instance)
            # A save keeps what only a create writes: the definition and the creation
            # time (it writes the version, a migration's, and the run and recursion
            # limit, a restart's).
            row[1], row[8] = instance.row[1], instance.row[8]
            instance.row = row
        instance.history[p["revision"]] = [
            wid,
            p["revision"],
            p["h_event"],
            p["h_transitions"],
            p["h_state"],
            str(p["h_status"]),
            p["h_context"],
            p["h_error"],
            to_micros(p["h_time"]),
            p["h_timers"],
            p["h_actor"],
            p["h_input"],
            p["run"],
        ]
        if rid is not None:
            self._requests[(wid, rid)] = (
                rid,
                wid,
                p["r_method"],
                p["r_fingerprint"],
                p["r_response"],
                to_micros(p["r_time"]),
            )
        if op.timers.disarm:
            instance.timers.clear()
        if op.timers.arm:
            for t in loads(p["t_arm"]):
                instance.timers[t["timer_id"]] = [
                    wid,
                    t["timer_id"],
                    t["revision"],
                    t["transition"],
                    t["target"],
                    t["after"],
                    t["due_micros"],
                    t.get("trace_parent"),
                    t.get("trace_state"),
                    None,
                ]
        if op.tasks:
            self._task_work(instance, p)
        if op.search is not None:
            instance.search = op.search
        return target_of(op)

    def _fenced(
        self, op: Operation, p: dict[str, Any], instance: Instance | None
    ) -> StoreError | None:
        """Why the step may not save (its request id taken, its timer gone, its task not as
        it saw it), checked before anything changes; None when it may."""
        rid = p["request_id"]
        if rid is not None:
            taken = self._requests.get((p["workflow_id"], rid))
            if taken is not None and taken[5] > to_micros(p["r_cutoff"]):
                return failures.refused(op, request_free=False, actual_revision=None)
        fired = op.timers.fired
        if fired is not None and (instance is None or fired not in instance.timers):
            return self._refused(op, instance)
        finish = op.tasks.finish
        if finish is not None:
            task = None if instance is None else instance.tasks.get(finish.task_id)
            if task is None or not _fence_holds(task, finish):
                found = None if task is None else (task["status"], task["lease_token"])
                return self._refused(op, instance, found)
        return None

    @staticmethod
    def _task_work(instance: Instance, p: dict[str, Any]) -> None:
        update_time = to_micros(p["update_time"])
        finish_id = p["k_finish_id"]
        if finish_id is not None:
            task = instance.tasks[finish_id]
            task["status"] = p["k_finish_status"]
            if p["k_error"] is not None:
                task["last_error"] = p["k_error"]
            if p["k_result"] is not None:
                task["result"] = p["k_result"]
            task["claimed_until"] = None
            task["update_time"] = update_time
        if p["k_cancel"]:
            for task_id, task in instance.tasks.items():
                if task["status"] in OPEN and task_id != finish_id:
                    task["status"] = "CANCELLED"
                    task["update_time"] = update_time
        for encoded in loads(p["k_schedule"]) if p["k_schedule"] is not None else ():
            task = stored_task(encoded)
            instance.tasks[task["task_id"]] = task
        released = instance.tasks.get(p["k_release_id"] or "")
        if released is not None and released["status"] == "SCHEDULED":
            released["available_time"] = to_micros(p["k_release_time"])
            released["deadline"] = to_micros(p["k_release_deadline"])
            released["update_time"] = update_time

    def _refused(
        self,
        op: Operation,
        instance: Instance | None,
        task: tuple[str, str | None] | None = None,
    ) -> StoreError:
        actual = None
        if not isinstance(op, Create) and instance is not None:
            actual = instance.revision
        return failures.refused(op, request_free=True, actual_revision=actual, task=task)

    def resolve_outcome(
        self, ops: Sequence[Operation], *, backend_pids: Sequence[int] = ()
    ) -> list[InstanceRecord | StoreError]:
        # Nothing here is ever lost in transit; the runtime may still re-check.
        with self._held():
            revisions: dict[str, int] = {}
            witnesses: dict[tuple[str, int], HistoryWitness] = {}
            for op in ops:
                target = target_of(op)
                instance = self._instances.get(target.workflow_id)
                if instance is None:
                    continue
                revisions[target.workflow_id] = instance.revision
                row = instance.history.get(target.revision)
                if row is not None:
                    witnesses[(row[0], row[1])] = HistoryWitness(
                        event=row[2], state=row[4], status=row[5], time=from_micros(row[8])
                    )
        return resolve_each(ops, revisions, witnesses)

    # -- instances and history -------------------------------------------------------

    def load(self, workflow_id: str) -> InstanceRecord:
        with self._held():
            instance = self._instances.get(workflow_id)
            if instance is None:
                raise failures.workflow_not_found(workflow_id)
            return ROWS.instance(instance.row)

    def load_many(self, workflow_ids: Sequence[str]) -> list[InstanceRecord]:
        with self._held():
            found = (self._instances.get(w) for w in dict.fromkeys(workflow_ids))
            return [ROWS.instance(i.row) for i in found if i is not None]

    def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]:
        if limit <= 0:
            raise InvalidArgument("limit must be positive", reason=Reason.INVALID_LIMIT)
        with self._held():
            instance = self._instances.get(workflow_id)
            if instance is None:
                return []
            revisions = sorted(r for r in instance.history if r > after_revision)[:limit]
            rows = []
            for revision in revisions:
                row = list(instance.history[revision])
                if row[6] is None:  # a finished instance's last row: the instance's context
                    row[6] = instance.row[5]
                rows.append(row)
        return [ROWS.history(r) for r in rows]

    # -- request records -------------------------------------------------------------

    def lookup_request(
        self, workflow_id: str, request_id: str, live_after: datetime | None = None
    ) -> RequestRecord | None:
        cutoff = stamp(live_after if live_after is not None else NEVER)
        with self._held():
            row = self._requests.get((workflow_id, request_id))
        return None if row is None or row[5] <= cutoff else ROWS.request(row)

    def purge_requests(self, older_than: datetime, limit: int = PURGE_LIMIT) -> int:
        cutoff = stamp(older_than)
        with self._held():
            return _purge_oldest(self._requests, 5, cutoff, limit)

    # -- retention -------------------------------------------------------------------

    def purge_expired(self, now: datetime, limit: int) -> Purged:
        at = stamp(now, "now")
        with self._held():
            expired = sorted(
                (i.row[10], wid)
                for wid, i in self._instances.items()
                if i.row[10] is not None
                and i.row[10] <= at
                and i.status in FINISHED
                and not self.kept_for_parent(wid)
            )[:limit]
            ids = [wid for _, wid in expired]
            if not ids:
                return Purged(rows=dict.fromkeys((*CHILD_TABLES, "workflow_instances"), 0))
            for wid in ids:
                expire = self._instances[wid].row[10]
                self._tombstones[wid] = (wid, expire if expire is not None else at, at)
            return self._remove(ids)

    def delete_workflow(self, workflow_id: str, revision: int | None = None) -> Purged:
        with self._held():
            instance = self._instances.get(workflow_id)
            if instance is None:
                raise failures.workflow_not_found(workflow_id)
            if instance.status not in FINISHED:
                raise failures.workflow_live(workflow_id, instance.status)
            if revision is not None and instance.revision != revision:
                raise failures.revision_moved(workflow_id, revision, instance.revision)
            self._tombstones.pop(workflow_id, None)
            return self._remove([workflow_id])

    def _remove(self, ids: list[str]) -> Purged:
        counts = dict.fromkeys((*CHILD_TABLES, "workflow_instances"), 0)
        gone = set(ids)
        for wid in ids:
            instance = self._instances.pop(wid)
            counts["workflow_history"] += len(instance.history)
            counts["workflow_timers"] += len(instance.timers)
            counts["workflow_tasks"] += len(instance.tasks)
            counts["workflow_instances"] += 1
        requests = [key for key, r in self._requests.items() if r[1] in gone]
        for key in requests:
            del self._requests[key]
        counts["workflow_requests"] = len(requests)
        return Purged(workflow_ids=tuple(sorted(ids)), rows=counts)

    def purge_tombstones(self, older_than: datetime, limit: int = PURGE_LIMIT) -> int:
        cutoff = stamp(older_than)
        with self._held():
            return _purge_oldest(self._tombstones, 2, cutoff, limit)

    def lookup_tombstone(self, workflow_id: str) -> Tombstone | None:
        with self._held():
            row = self._tombstones.get(workflow_id)
        return None if row is None else ROWS.tombstone(row)

    def retention_counts(
        self, now: datetime, requests_before: datetime, cap: int = COUNT_CAP
    ) -> RetentionCounts:
        at, cutoff = stamp(now, "now"), stamp(requests_before)
        with self._held():
            expiring = [
                i.row[10]
                for i in self._instances.values()
                if i.row[10] is not None and i.row[10] <= at
            ]
            requests = [r[5] for r in self._requests.values() if r[5] <= cutoff]
        return RetentionCounts(
            overdue_instances=min(len(expiring), cap),
            oldest_instance_due=from_micros(min(expiring)) if expiring else None,
            overdue_requests=min(len(requests), cap),
            oldest_request_time=from_micros(min(requests)) if requests else None,
        )

    # -- definitions -----------------------------------------------------------------

    def put_definition(self, rec: DefinitionRecord) -> DefinitionRecord:
        name, version, source, digest, source_name, create_time = encode_definition(rec)
        key = (rec.name, rec.version)
        with self._held():
            row = self._definitions.setdefault(
                key, (name, version, source, digest, source_name, to_micros(create_time))
            )
        return failures.same_definition_or_raise(ROWS.definition(row), rec)

    def get_definition(self, name: str, version: int | None = None) -> DefinitionRecord:
        with self._held():
            if version is None:
                versions = [v for n, v in self._definitions if n == name]
                row = self._definitions[(name, max(versions))] if versions else None
            else:
                row = self._definitions.get((name, version))
        if row is None:
            raise failures.definition_not_found(name, version)
        return ROWS.definition(row)

    def list_definitions(self) -> list[DefinitionRecord]:
        with self._held():
            rows = [self._definitions[key] for key in sorted(self._definitions)]
        return [ROWS.definition(r) for r in rows]

    # -- timers ----------------------------------------------------------------------

    # -- tasks -----------------------------------------------------------------------

    # -- lifecycle -------------------------------------------------------------------

    def ping(self) -> None:
        with self._held():
            return

    def set_unreachable(self, unreachable: bool) -> None:
        """Memory is never out of reach: nothing to cut short."""

    def answered_at(self) -> float:
        return time.monotonic()

    def close(self) -> None:
        with self._lock:
            self._closed = True

    def _instances_after(self, p: Params, order: ListOrder) -> list[InstanceRecord]:
        definition, status, prefix = p["definition"], p["status"], p["id_prefix"]
        which: Filter | None = p.get("filter")
        # SQLite's representation: create_time (index 8), update_time (9) in microseconds.
        column = 9 if order.column == "update_time" else 8
        after = p["after_time"]
        position = None if after is None else (to_micros(after), p["after_id"])

        def past(key: tuple[int, str]) -> bool:
            assert position is not None
            return key < position if order.descending else key > position

        with self._held():
            found = sorted(
                (
                    i
                    for i in self._instances.values()
                    if position is None or past((i.row[column], i.row[0]))
                ),
                key=lambda i: (i.row[column], i.row[0]),
                reverse=order.descending,
            )
            found = [
                i
                for i in found
                if (definition is None or i.row[1] == definition)
                and (status is None or i.status == status)
                and (prefix is None or i.row[0].startswith(prefix))
            ]
            out: list[InstanceRecord] = []
            for i in found:
                if len(out) == p["limit"]:
                    break
                record = ROWS.instance(i.row)
                link = self._children.get(i.row[0])
                parent = None if link is None else link.parent_id
                if which is None or matches(which.root, record, i.search, parent=parent):
                    out.append(record)
            return out


def _purge_oldest(table: dict[Any, Any], column: int, cutoff: int, limit: int) -> int:
    """Delete up to ``limit`` rows of ``table`` whose time (at ``column``) is at or before
    ``cutoff``, oldest first; how many it deleted."""
    due = sorted((row[column], key) for key, row in table.items() if row[column] <= cutoff)
    for _, key in due[:limit]:
        del table[key]
    return len(due[:limit])


def _fence_holds(task: dict[str, Any], finish: TaskFinish) -> bool:
    """Whether the task is still as the finishing step saw it (the backends' fence)."""
    if task["lease_token"] != finish.lease_token:
        return False
    if finish.attempt is not None and task["attempt"] != finish.attempt:
        return False
    if finish.seen is not None and task["update_time"] != to_micros(finish.seen):
        return False
    return bool(task["status"] == "LEASED" or (not finish.leased and task["status"] in OPEN))


def _instance_row(wid: str, p: dict[str, Any]) -> list[Any]:
    """An instance's row, in the column order of ``rows.INSTANCE``."""
    return [
        wid,
        p["definition"],
        p["version"],
        p["state"],
        str(p["status"]),
        p["context"],
        p["revision"],
        p["error"],
        to_micros(p["create_time"]),
        to_micros(p["update_time"]),
        micros(p["expire_time"]),
        p.get("recursion_limit"),
        p["run"],
        p.get("pause"),
    ]
