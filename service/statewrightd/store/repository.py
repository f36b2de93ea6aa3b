"""The storage contract the runtime programs against (``open_repository`` picks a backend).

Implementations are synchronous and thread-safe: the runtime calls them from its writer
thread and from worker threads, never from an event loop. They subclass the contract:
where every backend takes a call's arguments the same way (pages: filters checked, sizes
clamped, tokens decoded and issued; task leases: times checked, values encoded), the
contract does it here once, and a backend brings only the rows, through the narrow
``_...`` methods.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar, runtime_checkable

from statewrightd.domain import Status
from statewrightd.errors import StoreError
from statewrightd.store.codec import (
    check_status_filter,
    check_time,
    clamp_page_size,
    decode_keys_page_token,
    decode_page_token,
    decode_task_page_token,
    decode_value_page_token,
    dumps,
    dumps_optional,
    encode_keys_page_token,
    encode_page_token,
    encode_task_page_token,
    encode_value_page_token,
)
from statewrightd.store.filters import Filter
from statewrightd.store.flow import KeyCounts, KeyState, QueueConfig, StoredQueue
from statewrightd.store.ordering import TIME_KEYS, key_value
from statewrightd.store.records import (
    OLDEST_FIRST,
    BatchItemEnd,
    BatchItemFailure,
    BatchRecord,
    ChildLink,
    Create,
    DefinitionRecord,
    FanOutProgress,
    HistoryRecord,
    InstanceRecord,
    ListOrder,
    Operation,
    Page,
    Purged,
    QueueCounts,
    RequestRecord,
    RetentionCounts,
    Save,
    ScheduleRecord,
    SearchValues,
    TaskRecord,
    TimerRecord,
    Tombstone,
    WholeInstance,
)

Choose = Callable[[list[TaskRecord]], list[TaskRecord]]
# Named values, as the SQL statements name them: times checked (aware, in UTC), maps
# encoded as JSON text.
Params = dict[str, Any]

Item = TypeVar("Item")


def _page(found: list[Item], size: int, token_of: Callable[[Item], str]) -> tuple[list[Item], str]:
    """The first ``size`` of ``found`` (read one longer: a row past them says more follow),
    and the token that names the page after them ("" when none does)."""
    items = found[:size]
    return items, token_of(items[-1]) if len(found) > size else ""


@runtime_checkable
class ScheduleStore(Protocol):
    """The schedules' rows: one a schedule, written at the version it was read at."""

    def insert_schedule(
        self, schedule_id: str, document: dict[str, Any], next_fire: datetime | None, now: datetime
    ) -> ScheduleRecord:
        """Create a schedule at version 1; RecordExists when the id is taken."""
        ...

    def get_schedule(self, schedule_id: str) -> ScheduleRecord | None: ...

    def list_schedules(self, after: str, limit: int) -> list[ScheduleRecord]:
        """Up to ``limit`` schedules with ids after ``after``, by id."""
        ...

    def put_schedule(
        self,
        schedule_id: str,
        version: int,
        document: dict[str, Any],
        next_fire: datetime | None,
        now: datetime,
    ) -> ScheduleRecord | None:
        """Write a schedule read at ``version`` (releasing any claim on it); None when it
        changed since, or is gone."""
        ...

    def delete_schedule(self, schedule_id: str) -> bool: ...

    def claim_schedules(self, now: datetime, until: datetime, limit: int) -> list[ScheduleRecord]:
        """Claim up to ``limit`` schedules due by ``now`` that nobody holds, until
        ``until``, as timers are claimed."""
        ...

    def next_schedule_due(self, now: datetime) -> datetime | None:
        """The earliest next fire time among schedules nobody holds at ``now``."""
        ...

    def schedule_count(self) -> int: ...

    def instance_statuses(self, workflow_ids: Sequence[str]) -> dict[str, Status]:
        """The status of each of ``workflow_ids`` that exists, in one read."""
        ...

    def instance_revisions(self, workflow_ids: Sequence[str]) -> dict[str, int]:
        """The latest revision of each of ``workflow_ids`` that exists, in one read: how
        watchers find the steps another replica's lost hints did not tell them of."""
        ...


class BatchStore(Protocol):
    """Batch operations (store/sql_batches.py): a batch's row, and one row per instance it
    matched, fixed when it starts. Items are worked through in workflow id order."""

    def insert_batch(self, record: BatchRecord, workflow_ids: Sequence[str]) -> BatchRecord:
        """Create a RUNNING batch (version 1, ``matched`` = len(workflow_ids)) and its items,
        all pending, in one transaction; RecordExists when the id is taken. A batch that
        matched nothing is created COMPLETED, its end time its create time."""
        ...

    def get_batch(self, batch_id: str) -> BatchRecord | None: ...

    def list_batches(
        self, after: tuple[datetime, str] | None, limit: int, state: str | None = None
    ) -> list[BatchRecord]:
        """Up to ``limit`` batches (in ``state`` when named), newest first: by create time
        descending then id descending, past ``after`` (create time, id) when given."""
        ...

    def claim_batch(self, owner: str, now: datetime, until: datetime) -> BatchRecord | None:
        """Lease one RUNNING batch to ``owner`` until ``until``: one whose lease lapsed by
        ``now`` (or that nobody held), or one ``owner`` holds already (renewed), the oldest
        first (but the one ``owner`` holds before any other, so that it finishes what it
        started); None when there is none. Replicas never hold the same batch at once.
        A lease is no write of the batch: its version stays."""
        ...

    def pending_items(self, batch_id: str, after: str, limit: int) -> list[str]:
        """Up to ``limit`` workflow ids of the batch's items not yet ended, past ``after``,
        by workflow id."""
        ...

    def end_items(
        self, batch_id: str, ends: Sequence[BatchItemEnd], now: datetime
    ) -> BatchRecord | None:
        """Record each item's end unless it ended already (an item ends once: its counts
        grow once), in one transaction; the batch becomes COMPLETED (its end time ``now``)
        when no item is left pending and it is RUNNING. The batch after it; None when gone."""
        ...

    def cancel_batch(
        self, batch_id: str, document: dict[str, Any], now: datetime
    ) -> BatchRecord | None:
        """Make a RUNNING batch CANCELLED with ``document`` (its end time ``now``, its lease
        released); the batch as it is when it is not RUNNING; None when there is none."""
        ...

    def batch_failures(self, batch_id: str, after: str, limit: int) -> list[BatchItemFailure]:
        """Up to ``limit`` of the batch's failed items past workflow id ``after``, by id."""
        ...

    def purge_batches(self, ended_before: datetime, limit: int) -> Purged:
        """Remove finished batches (COMPLETED or CANCELLED) that ended at or before
        ``ended_before``, oldest first, each with all its items in one transaction (a batch
        is there whole or not at all): as many as fit in ``limit`` rows, and always the
        oldest one, however many items it has. Batches another caller is removing at the
        same time are skipped, not waited for. The rows deleted, by table."""
        ...


class ChildLinks(Protocol):
    """Child workflows' parent links (store/sql_children.py): who is whose parent."""

    def link_child(self, link: ChildLink) -> ChildLink:
        """Record ``link`` unless the child already has one; the link it has."""
        ...

    def child_links(self, workflow_ids: Sequence[str]) -> dict[str, ChildLink]:
        """The parent links of those of ``workflow_ids`` that are children."""
        ...

    def children_of(self, parent_id: str, limit: int) -> tuple[int, list[str]]:
        """(How many of the instance's children are live, the first ``limit`` of their
        ids, in id order)."""
        ...

    def live_children(self, after: str, limit: int) -> list[ChildLink]:
        """Up to ``limit`` links of live children, by child id after ``after``."""
        ...

    def untaken_children(self, limit: int) -> list[ChildLink]:
        """Up to ``limit`` links of finished children whose end no parent has taken yet
        (retention keeps them), by child id."""
        ...

    def take_children(self, workflow_ids: Sequence[str]) -> int:
        """Mark the ends of these children taken (their parents no longer wait for them),
        so that retention may remove them; how many were untaken."""
        ...


class WholeLoads(Protocol):
    def load_whole(self, workflow_id: str) -> WholeInstance | None:
        """The instance with its armed timers and its open task, read in one round trip;
        None from a store that reads them one at a time (then ``load``, ``armed_timers``
        and ``open_tasks`` are asked, only for what the definition can have). Raises
        RecordNotFound like ``load``."""
        return None

    def load_many(self, workflow_ids: Sequence[str]) -> list[InstanceRecord]:
        """The instances of ``workflow_ids`` that exist, each once, read together (one
        statement, or one a node)."""
        ...


class TaskLeases(Protocol):
    def lease_tasks(
        self,
        queue: str,
        now: datetime,
        limit: int,
        first_lease: float,
        choose: Callable[[list[TaskRecord]], list[TaskRecord]] | None = None,
        *,
        room: int | None = None,
        read: dict[str, InstanceRecord] | None = None,
    ) -> list[TaskRecord]:
        """Lease up to ``limit`` of ``queue``'s ready tasks: a new attempt each, a fresh
        token, a lease of at most ``first_lease`` seconds that a heartbeat extends.
        ``choose``, given the ready tasks in order (as they are before the lease), picks
        those to lease, in the same transaction: the rest stay ready, untouched. Given the
        answer's ``room`` in bytes, a store may lease unread the oldest that surely fit.
        Given ``read``, a store whose claim reads the leased tasks' instances along with
        them (in the same statement) puts there, by id, those of tasks that are no item
        of a fan-out; a store that does not puts none."""
        params = {
            "queue": queue,
            "now": _time(now),
            "limit": limit,
            "first_ms": round(first_lease * 1000),
            "room": room,
        }
        return self._lease_tasks(params, choose, read)

    def _lease_tasks(
        self, params: Params, choose: Choose | None, read: dict[str, InstanceRecord] | None
    ) -> list[TaskRecord]:
        """Lease (queue, now, limit, first_ms, room) the ready tasks ``choose`` picks (all
        if None), in the order they became ready; ``read`` as lease_tasks says."""
        ...


class Repository(BatchStore, ChildLinks, ScheduleStore, TaskLeases, WholeLoads, Protocol):
    def create(self, op: Create) -> InstanceRecord:
        """Insert a new instance at revision 1 with its first history row.

        Raises RecordExists when the id (or the request id) is taken.
        """
        ...

    def load(self, workflow_id: str) -> InstanceRecord: ...

    def save(self, op: Save) -> int:
        """Compare-and-swap one step; return the new revision.

        Raises Conflict (with ``actual_revision``), RecordNotFound, RecordExists (request id
        taken), StorageUnavailable (known not written) or OutcomeUnknown.
        """
        ...

    def apply_batch(self, ops: Sequence[Operation]) -> list[InstanceRecord | StoreError]:
        """Apply many operations in one transaction; each row's CAS succeeds or fails alone.

        The result list is parallel to ``ops``.
        """
        ...

    def resolve_outcome(
        self, ops: Sequence[Operation], *, backend_pids: Sequence[int] = ()
    ) -> list[InstanceRecord | StoreError]:
        """Re-check operations whose outcome was unknown by reading the rows back.

        ``backend_pids`` (from ``OutcomeUnknown.metadata``) are the server processes that
        ran the lost COMMITs; the verdict waits until they are gone.
        """
        ...

    def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]: ...

    def put_definition(self, rec: DefinitionRecord) -> DefinitionRecord: ...

    def get_definition(self, name: str, version: int | None = None) -> DefinitionRecord: ...

    def list_definitions(self) -> list[DefinitionRecord]: ...

    def lookup_request(
        self, workflow_id: str, request_id: str, live_after: datetime | None = None
    ) -> RequestRecord | None:
        """The record of ``request_id`` on instance ``workflow_id`` (request ids are unique
        per instance), unless it was created at or before ``live_after`` (out of its
        window: it answers no retry any more)."""
        ...

    def purge_requests(self, older_than: datetime, limit: int = ...) -> int:
        """Delete up to ``limit`` request records created at or before ``older_than``."""
        ...

    # -- retention -------------------------------------------------------------------

    def purge_expired(self, now: datetime, limit: int) -> Purged:
        """Remove up to ``limit`` finished instances whose expire_time is at or before
        ``now``, oldest first, with their history, timers, tasks and request records, and
        leave a tombstone for each. Instances another caller is removing at the same time
        are skipped, not waited for."""
        ...

    def delete_workflow(self, workflow_id: str, revision: int | None = None) -> Purged:
        """Remove one finished instance and everything of it, at ``revision`` (None: any).

        Raises RecordNotFound, RecordLive (not finished) or Conflict (another revision).
        Leaves no tombstone, and removes one an earlier instance of the id left."""
        ...

    def purge_tombstones(self, older_than: datetime, limit: int = ...) -> int: ...

    def lookup_tombstone(self, workflow_id: str) -> Tombstone | None: ...

    def retention_counts(
        self, now: datetime, requests_before: datetime, cap: int = ...
    ) -> RetentionCounts:
        """What is overdue: instances past their expire_time at ``now``, request records
        created at or before ``requests_before``; counts stop at ``cap``."""
        ...

    def armed_timers(self, workflow_ids: Sequence[str]) -> dict[str, list[TimerRecord]]:
        """The armed timers of each instance that has any, in due order."""
        ...

    def claim_timers(self, now: datetime, until: datetime, limit: int) -> list[TimerRecord]:
        """Claim up to ``limit`` timers due by ``now`` that nobody holds, until ``until``;
        a claim that lapses lets another replica claim the timer again."""
        ...

    def next_timer_due(self, now: datetime) -> datetime | None:
        """The earliest due time among timers nobody holds at ``now``."""
        ...

    def delete_timer(self, workflow_id: str, timer_id: str) -> bool:
        """Consume a timer whose guard was false; False if it was already gone."""
        ...

    def timer_counts(self, now: datetime) -> tuple[int, int]:
        """(armed timers, of them due by ``now``)."""
        ...

    def heartbeat_task(
        self,
        workflow_id: str,
        task_id: str,
        token: str,
        now: datetime,
        details: dict[str, Any] | None,
    ) -> TaskRecord | None:
        """Extend the lease ``token`` holds; None when it is not current."""
        params = _lease(workflow_id, task_id, token, now)
        params["details"] = dumps_optional(details, "heartbeat details")
        return self._heartbeat_task(params)

    def retry_task(
        self,
        workflow_id: str,
        task_id: str,
        token: str,
        *,
        now: datetime,
        available: datetime,
        error: dict[str, Any],
        request_id: str | None = None,
        expired_only: bool = False,
    ) -> TaskRecord | None:
        """End the attempt leased with ``token``, to be retried at ``available``."""
        params = _lease(workflow_id, task_id, token, now)
        params["available"] = _time(available)
        params["error"] = dumps(error, "task error")
        params["request_id"] = request_id
        params["expired_only"] = expired_only
        return self._retry_task(params)

    def release_task(
        self, workflow_id: str, task_id: str, token: str, now: datetime
    ) -> TaskRecord | None:
        """Undo the lease ``token`` holds without counting its attempt."""
        return self._release_task(_lease(workflow_id, task_id, token, now))

    def claim_expired_tasks(self, now: datetime, until: datetime, limit: int) -> list[TaskRecord]:
        """Claim tasks whose lease or deadline has passed, until ``until``."""
        ...

    # Flow control (store/flow.py): a queue's limits, shared by every replica.

    def set_queue_config(self, config: QueueConfig, now: datetime) -> QueueConfig | None:
        """Store ``config`` (its limits all zero: remove the queue's); the stored one."""
        ...

    def queue_configs(self, queue: str | None = None) -> list[StoredQueue]:
        """The queues with a config (only ``queue``'s if named), by name."""
        ...

    def close_key(self, queue: str, key: str, until: datetime) -> None:
        """No task of ``key`` on ``queue`` leased before ``until`` (or a later time set)."""
        ...

    def closed_keys(self, queue: str, now: datetime) -> list[KeyState]: ...

    def key_counts(self, now: datetime) -> list[KeyCounts]:
        """The open tasks of every concurrency key: ready and leased."""
        ...

    def get_task(self, workflow_id: str, task_id: str) -> TaskRecord: ...

    def open_tasks(self, workflow_ids: Sequence[str]) -> dict[str, TaskRecord]: ...

    def fan_out(self, workflow_id: str) -> FanOutProgress | None:
        """The counts of the instance's latest fan-out's items; None: it has none."""
        ...

    def item_ends(
        self, workflow_id: str, revision: int, *, given_up_only: bool, limit: int
    ) -> list[TaskRecord]:
        """Up to ``limit`` ended items (or only those given up) of the fan-out entered at
        ``revision``, by index."""
        ...

    def queue_stats(self, now: datetime) -> list[QueueCounts]: ...

    def list_tasks(
        self,
        *,
        queue: str | None = None,
        workflow_id: str | None = None,
        status: str | None = None,
        page_size: int = 0,
        page_token: str = "",
        which: Filter | None = None,
    ) -> Page[TaskRecord]:
        """A page of tasks in (schedule time, workflow, task) order, of ``queue``,
        ``workflow_id`` and ``status`` when given, matching ``which`` (a list filter over
        store.filters.TASKS) when given; the token is bound to all of them."""
        size = clamp_page_size(page_size)
        key = f"{queue}|{workflow_id}|{status}" + ("" if which is None else f"|{which.text}")
        after_time, after_w, after_t = decode_task_page_token(page_token, key)
        params = {
            "after_time": _time(after_time),
            "after_w": after_w,
            "after_t": after_t,
            "queue": queue,
            "workflow_id": workflow_id,
            "status": status,
            "limit": size + 1,
            "filter": which,
        }
        tasks, token = _page(
            self._tasks_after(params),
            size,
            lambda last: encode_task_page_token(
                last.schedule_time, last.workflow_id, last.task_id, key
            ),
        )
        return Page(items=tasks, next_page_token=token)

    # What a backend brings: the rows, from values checked and encoded.

    def _heartbeat_task(self, params: Params) -> TaskRecord | None:
        """Lease (workflow_id, task_id, token, now), details."""
        ...

    def _retry_task(self, params: Params) -> TaskRecord | None:
        """Lease, available, error, request_id, expired_only."""
        ...

    def _release_task(self, params: Params) -> TaskRecord | None:
        """Lease (workflow_id, task_id, token, now)."""
        ...

    def _tasks_after(self, params: Params) -> list[TaskRecord]:
        """Up to ``limit`` tasks past (after_time, after_w, after_t) in (schedule time,
        workflow, task) order, of ``queue``, ``workflow_id`` and ``status`` where named,
        matching ``filter`` when it is not None."""
        ...

    def count_by_status(self, which: Filter | None = None) -> dict[str, int]:
        """How many instances match ``which`` (None: all), by status (only those found)."""
        ...

    def replace_search(self, items: Sequence[tuple[str, int, SearchValues]]) -> int:
        """Replace the search values of each (workflow id, revision, values) whose instance
        is still at that revision (a save since wrote its own); how many were replaced."""
        ...

    def _instances_after(self, params: Params, order: ListOrder) -> list[InstanceRecord]:
        """Up to ``limit`` instances past (after_time, after_id) in ``order`` (from the
        first when after_time is None), of ``definition`` and ``status`` where named, and
        whose id starts with ``id_prefix`` where named."""
        ...

    def _instances_by_value(
        self, params: Params, order: ListOrder
    ) -> list[tuple[InstanceRecord, Any]]:
        """The same, ordered by the search field ``order_field`` (past (after_value,
        after_id) when after_value is not None), each with its value."""
        ...

    def _instances_by_keys(
        self, params: Params, order: ListOrder
    ) -> list[tuple[InstanceRecord, tuple[Any, ...]]]:
        """The same, in the order of ``order.keys`` then the id (past the values
        ``after`` and ``after_id`` when after is not None), each with its values of the
        order's search keys."""
        ...

    def ping(self) -> None:
        """Raise StorageUnavailable unless the database answers and is fully migrated.

        It waits for the database even while it is known to be unreachable: it is how the
        server finds it back."""
        ...

    def set_unreachable(self, unreachable: bool) -> None:
        """While True the database is known to be down (the server's readiness check
        found it so): a call that would wait for a connection fails at once instead."""
        ...

    def answered_at(self) -> float:
        """When (time.monotonic()) the database last answered a call: a transaction that
        completed. A busy database answers others while a check waits for a connection."""
        ...

    def close(self) -> None: ...

    # Last in the class: the method name shadows the builtin in later annotations.
    def list(
        self,
        *,
        definition: str | None = None,
        status: str | None = None,
        page_size: int = 0,
        page_token: str = "",
        order: ListOrder = OLDEST_FIRST,
        id_prefix: str | None = None,
        which: Filter | None = None,
    ) -> Page[InstanceRecord]:
        """One page of instances in ``order``, of ``definition``, ``status`` and
        ``id_prefix`` when given, and matching ``which`` (a list filter) when given."""
        check_status_filter(status)
        size = clamp_page_size(page_size)
        # The default order is spelled "" in tokens: a token of an older server resumes.
        # A token is bound to its filter too: it resumes that listing only.
        spelled = "" if order == OLDEST_FIRST else order.spelled
        if which is not None:
            spelled = f"{spelled}|{which.text}"
        by_value = order.search_field is not None
        after = None
        if not by_value and not order.by_keys:
            after = decode_page_token(
                page_token, definition, status, order=spelled, id_prefix=id_prefix
            )
        params = {
            "after_time": None if after is None else _time(after[0]),
            "after_id": None if after is None else after[1],
            "definition": definition,
            "status": status,
            "id_prefix": id_prefix or None,
            "prefix_length": len(id_prefix or ""),
            "limit": size + 1,
            "filter": which,
        }

        def token_of(last: InstanceRecord) -> str:
            when = last.update_time if order.column == "update_time" else last.create_time
            return encode_page_token(
                when, last.workflow_id, definition, status, order=spelled, id_prefix=id_prefix
            )

        if order.by_keys:
            return _page_by_keys(self, params, order, spelled, token=page_token, size=size)
        if by_value:
            return self._page_by_value(params, order, spelled, page_token, size)
        items, token = _page(self._instances_after(params, order), size, token_of)
        return Page(items=items, next_page_token=token)

    def _page_by_value(
        self, params: Params, order: ListOrder, spelled: str, page_token: str, size: int
    ) -> Page[InstanceRecord]:
        """A page ordered by a search field's value, ties by workflow id; only instances
        that have a value of it are listed."""
        definition, status, prefix = params["definition"], params["status"], params["id_prefix"]
        after = decode_value_page_token(
            page_token, definition, status, order=spelled, id_prefix=prefix
        )
        params = {
            **params,
            "after_time": None,
            "after_value": None if after is None else after[0],
            "after_id": None if after is None else after[1],
            "order_field": order.search_field,
        }
        found = self._instances_by_value(params, order)
        values = {record.workflow_id: value for record, value in found}

        def token_of(last: InstanceRecord) -> str:
            return encode_value_page_token(
                values[last.workflow_id],
                last.workflow_id,
                definition,
                status,
                order=spelled,
                id_prefix=prefix,
            )

        items, token = _page([record for record, _ in found], size, token_of)
        return Page(items=items, next_page_token=token)


def _page_by_keys(
    repo: Repository, params: Params, order: ListOrder, spelled: str, *, token: str, size: int
) -> Page[InstanceRecord]:
    """A page in an order of several keys (store.ordering), ties by workflow id."""
    definition, status, prefix = params["definition"], params["status"], params["id_prefix"]
    keys = order.keys
    kinds = ["time" if k.column in TIME_KEYS else (k.value_column or "text") for k in keys]
    after = decode_keys_page_token(
        token, definition, status, order=spelled, kinds=kinds, id_prefix=prefix
    )
    params = {
        **params,
        "after_time": None,
        "after": None if after is None else after[0],
        "after_id": None if after is None else after[1],
    }
    found = repo._instances_by_keys(params, order)
    searched = {record.workflow_id: values for record, values in found}

    def token_of(last: InstanceRecord) -> str:
        values = iter(searched[last.workflow_id])
        row = [key_value(k, last, next(values) if k.value_column else None) for k in keys]
        return encode_keys_page_token(
            row, last.workflow_id, definition, status, order=spelled, id_prefix=prefix
        )

    items, following = _page([record for record, _ in found], size, token_of)
    return Page(items=items, next_page_token=following)


def _lease(workflow_id: str, task_id: str, token: str, now: datetime) -> Params:
    return {"workflow_id": workflow_id, "task_id": task_id, "token": token, "now": _time(now)}


def _time(value: datetime) -> datetime:
    return check_time(value, "time")


__all__ = ["Create", "Repository", "Save"]
