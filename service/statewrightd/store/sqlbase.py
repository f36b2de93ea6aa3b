"""What both SQL backends do the same way: reads, definitions, pages and the schema check.

A backend brings its statements (``Statements``), its ``Rows`` (how its driver hands
values over) and its connection handling (``_reading`` and ``_writing``); its write path
(the batched compare-and-swap) stays its own, because that is where the two databases
differ most.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar, Protocol

from statewrightd.domain import TERMINAL
from statewrightd.errors import InvalidArgument, StorageUnavailable, StoreError
from statewrightd.reasons import Reason
from statewrightd.store import failures, flow, ordering
from statewrightd.store.batching import BatchWriter
from statewrightd.store.codec import (
    NEVER,
    check_time,
    encode_definition,
)
from statewrightd.store.filters import INSTANCES, TASKS, Filter, SqlFilter, Subject
from statewrightd.store.flow import KeyCounts, KeyState, QueueConfig, QueueState, StoredQueue
from statewrightd.store.records import (
    DefinitionRecord,
    HistoryRecord,
    InstanceRecord,
    ListOrder,
    QueueCounts,
    RequestRecord,
    RetentionCounts,
    SearchValues,
    TaskRecord,
    TimerRecord,
    Tombstone,
)
from statewrightd.store.repository import Choose, Params, Repository
from statewrightd.store.rows import INSTANCE, TASK, Rows
from statewrightd.store.sql_children import SqlChildren
from statewrightd.store.sql_fan_out import SqlFanOut
from statewrightd.store.sql_flow import FlowStatements
from statewrightd.store.sql_schedules import ScheduleStatements
from statewrightd.store.sqlbatches import SqlBatches
from statewrightd.store.sqlschedules import SqlSchedules


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The part of a DB-API connection the shared reads use (psycopg's and sqlite3's)."""

    def execute(self, query: str, params: Any = ..., /) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class Statements:
    """One backend's SQL for the shared operations. Rows come back in ``rows`` column order;
    positional parameters are in the order each comment gives."""

    load: str  # workflow_id -> INSTANCE
    load_many: str  # ids -> INSTANCE, each that exists
    history_after: str  # workflow_id, after revision, limit -> HISTORY by revision
    # workflow_id, request_id, cutoff -> REQUEST created after the cutoff
    lookup_request: str
    # Named parameters cutoff and limit: deletes up to limit request records created at or
    # before the cutoff (tombstones removed then), oldest first.
    purge_requests: str
    purge_tombstones: str
    lookup_tombstone: str  # workflow_id -> TOMBSTONE
    # now, cutoff (of request records), cap -> (overdue instances, the earliest passed
    # expire_time, expired request records, the oldest of their create times)
    retention_counts: str
    # The definition's DEFINITION columns; may return the row it inserted (nothing when
    # the row was already there, or when the backend's INSERT returns nothing at all).
    insert_definition: str
    get_definition: str  # name, version -> DEFINITION
    get_latest_definition: str  # name -> DEFINITION
    list_definitions: str  # -> DEFINITION by name, version
    # (by_definition, by_status, after a position) -> a keyset page of INSTANCE rows by
    # (create_time, workflow_id), with the named parameters after_time, after_id,
    # definition, status and limit.
    # The third argument is a filter's condition (store.filters), "" for none.
    list_instances: Callable[[str, frozenset[str], str], str]
    named: Callable[[str], str]  # a named parameter's placeholder
    # (value column, descending, given, filter condition) -> a page by a search field.
    list_by_value: Callable[[str, bool, frozenset[str], str], str]
    # Timers. Named parameters: ids (a JSON array of workflow ids), now, until, limit.
    armed_timers: str  # ids -> TIMER, by workflow id and due time
    # Claims up to limit unclaimed (or lapsed) timers due by now until ``until``; -> TIMER.
    claim_timers: str
    next_timer_due: str  # now -> the earliest due time among timers not claimed now
    delete_timer: str  # workflow_id, timer_id
    timer_counts: str  # now -> (armed, due by now)
    # Tasks. Named parameters as each statement names them; rows in TASK order.
    lease_tasks: str  # queue, now, limit, first_ms -> the tasks it leased
    # The same ready tasks, read (and locked, where the database can) but not leased:
    ready_tasks: str  # queue, now, limit -> TASK rows
    # Lease the ones chosen among them (in the same transaction): chosen is a list of
    # [workflow_id, task_id] (an array pair or JSON, as the dialect takes it).
    lease_chosen: str  # chosen_workflows, chosen_tasks, chosen (JSON), now, first_ms
    heartbeat_task: str  # workflow_id, task_id, token, now, details -> the renewed task
    retry_task: str  # ..., available, error, request_id, expired_only -> the task in BACKOFF
    release_task: str  # workflow_id, task_id, token, now -> the task, ready again
    claim_expired_tasks: str  # now, until, limit -> leases and deadlines past, claimed
    get_task: str  # workflow_id, task_id (positional)
    open_tasks: str  # ids -> the open task of each instance that has one
    queue_stats: str  # now -> (queue, ready, oldest ready time, leased)
    # (by_queue, by_workflow, by_status) -> keyset page of TASK rows.
    list_tasks: Callable[[bool, bool, bool, str], str]


# The most rows one purge statement deletes when its caller names no limit.
PURGE_LIMIT = 1000
# Overdue rows are counted up to this many: the count is an index range, and a backlog
# that long needs no exact figure to be seen.
COUNT_CAP = 100_000


def _filtered(
    named: Callable[[str], str], params: Params, subject: Subject = INSTANCES
) -> tuple[str, Params]:
    """A listing's filter (``params["filter"]``) as a SQL condition ("" for none) over
    ``subject``, and the parameters with its values in place of it."""
    which: Filter | None = params.pop("filter", None)
    if which is None:
        return "", params
    compiled = SqlFilter(named, subject)
    return compiled.condition(which.root), {**params, **compiled.params}


def _named(params: Params, *keys: str) -> tuple[bool, ...]:
    """Which of ``keys`` ``params`` gives a value for: a listing's statement has a variant
    for each set of filters named."""
    return tuple(params[k] is not None for k in keys)


# Where a row of the one-statement claim has its instance's columns: after its counts
# (two) and its task's.
_INSTANCE_AT = 2 + len(TASK)


@dataclass(frozen=True, slots=True)
class _Fitted:
    tasks: list[TaskRecord] | None  # None: the claim could not tell, see _fitting_lease
    limited: bool  # the queue has a config (flow control)


class _FlowControl:
    """The queue configs and keys of flow control (store/flow.py), and the claim of a
    queue with limits, kept apart from the other claims only to keep each class readable."""

    FLOW: ClassVar[FlowStatements]
    ROWS: ClassVar[Rows]

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Connection]: ...

    @abstractmethod
    def _writing_one(self) -> AbstractContextManager[Connection]:
        """A connection for one writing statement, which needs no transaction around it
        (a backend with round trips runs it on its own: no BEGIN, no COMMIT)."""

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    @abstractmethod
    def _lease_chosen(
        self, conn: Connection, chosen: list[TaskRecord], params: Params, sql: str | None = None
    ) -> list[Any]: ...

    def _time(self, value: datetime) -> Any:
        """A time as this database's statements take it (every part of the store's)."""
        return self.ROWS.time_param(check_time(value, "time"))

    def _json_time(self, value: datetime | None) -> Any:
        """A time inside a JSON parameter: as this database reads it from JSON text."""
        if value is None:
            return None
        param = self.ROWS.time_param(value)
        return param.isoformat() if isinstance(param, datetime) else param

    def _stored_queue(self, row: Sequence[Any]) -> StoredQueue:
        config = QueueConfig(
            queue=row[0],
            max_leased=row[1] or 0,
            rate=row[2] or 0.0,
            burst=row[3] or 0,
            key_max_leased=row[4] or 0,
            key_rate=row[5] or 0.0,
            key_burst=row[6] or 0,
            update_time=self.ROWS.time(row[7]),
        )
        refill = None if row[9] is None else self.ROWS.time(row[9])
        return StoredQueue(config, float(row[8] or 0.0), refill)

    def _key_state(self, row: Sequence[Any]) -> KeyState:
        def time(value: Any) -> datetime | None:
            return None if value is None else self.ROWS.time(value)

        tokens = None if row[1] is None else float(row[1])
        return KeyState(row[0], tokens, time(row[2]), time(row[3]), time(row[4]))

    def _limits_claim(
        self, conn: Connection, now: datetime, params: Params, choose: Choose | None
    ) -> list[TaskRecord] | None:
        """The claim of a queue with limits, under its config row's lock, in the order
        the claim served them (priority, the keys' turns, age); None when it has none."""
        limits = conn.execute(self.FLOW.lock_config, params).fetchone()
        if limits is None:
            return None
        return self._limited_lease(conn, self._stored_queue(limits), now, params, choose)

    def _limited_lease(
        self,
        conn: Connection,
        stored: StoredQueue,
        now: datetime,
        params: Params,
        choose: Choose | None,
    ) -> list[TaskRecord]:
        """The claim of a queue with limits, under its config row's lock (store/flow.py)."""
        config, limit = stored.config, params["limit"]
        refill = config.key_bucket / config.key_rate if config.key_rate else 0.0
        params["full_since"] = self.ROWS.time_param(now - timedelta(seconds=refill))
        by_key: dict[str, int] = {}
        keys: dict[str, KeyState] = {}
        leased = 0
        for row in conn.execute(self.FLOW.standing, params).fetchall():
            if row[0] == "L":
                leased += int(row[2])
                if row[1] is not None:
                    by_key[row[1]] = int(row[2])
            else:
                keys[row[1]] = self._key_state(row[1:])
        state = QueueState(config, stored.tokens, stored.refill_time, leased, by_key, keys)
        if flow.room(state, limit, now) == 0:
            return []  # full, or out of tokens: nothing to read
        blocked = flow.blocked_keys(state, now)
        params.update(window=flow.WINDOW, blocked=blocked, blocked_json=json.dumps(blocked))
        width = len(TASK)
        ready = []
        for r in conn.execute(self.FLOW.ranked_ready, params).fetchall():
            task = self.ROWS.task(r[:width])
            ready.append(task)
            if task.concurrency_key is not None and task.concurrency_key not in keys:
                keys[task.concurrency_key] = self._key_state((task.concurrency_key, *r[width:]))
        claim = flow.plan_claim(state, ready, limit, now)
        if choose is not None and claim.chosen:
            claim = flow.plan_claim(state, choose(claim.chosen), limit, now)
        if not claim.chosen:
            return []
        served = [
            {"key": ks.key, "tokens": ks.tokens, "refill_time": self._json_time(ks.refill_time)}
            for ks in claim.keys
        ]
        params.update(
            served=json.dumps(served), tokens=claim.tokens, spend_tokens=bool(config.rate)
        )
        if self.FLOW.lease_and_save is not None:
            found = self._lease_chosen(conn, claim.chosen, params, self.FLOW.lease_and_save)
        else:
            found = self._lease_chosen(conn, claim.chosen, params)
            if found and config.rate:
                conn.execute(self.FLOW.save_tokens, params)
            if found and claim.keys:
                conn.execute(self.FLOW.save_keys, params)
        made = {(t.workflow_id, t.task_id): t for t in map(self.ROWS.task, found)}
        return [made[k] for k in ((t.workflow_id, t.task_id) for t in claim.chosen) if k in made]

    def set_queue_config(self, config: QueueConfig, now: datetime) -> QueueConfig | None:
        params: Params = {"queue": config.queue, "now": self._time(now)}
        with self._writing() as conn:
            if not config.limited:
                conn.execute(self.FLOW.delete_config, params)
                return None
            params.update(config.limits(), tokens=float(config.bucket))
            conn.execute(self.FLOW.put_config, params)
            row = conn.execute(self.FLOW.get_config, params).fetchone()
        return self._stored_queue(row).config

    def queue_configs(self, queue: str | None = None) -> list[StoredQueue]:
        if queue is not None:
            rows = self._read_all(self.FLOW.get_config, {"queue": queue})
        else:
            rows = self._read_all(self.FLOW.list_configs)
        return [self._stored_queue(r) for r in rows]

    def close_key(self, queue: str, key: str, until: datetime) -> None:
        params = {"queue": queue, "key": key, "until": self._time(until)}
        with self._writing_one() as conn:
            conn.execute(self.FLOW.close_key, params)

    def closed_keys(self, queue: str, now: datetime) -> list[KeyState]:
        rows = self._read_all(self.FLOW.closed_keys, {"queue": queue, "now": self._time(now)})
        return [self._key_state(r) for r in rows]

    def key_counts(self, now: datetime) -> list[KeyCounts]:
        rows = self._read_all(self.FLOW.key_counts, {"now": self._time(now)})
        return [KeyCounts(r[0], r[1], int(r[2] or 0), int(r[3] or 0)) for r in rows]


class _Definitions:
    """The definitions table, kept apart only to keep each class readable."""

    SQL: ClassVar[Statements]
    ROWS: ClassVar[Rows]

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Connection]: ...

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Connection]: ...

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    def put_definition(self, rec: DefinitionRecord) -> DefinitionRecord:
        *columns, create_time = encode_definition(rec)
        params = (*columns, self.ROWS.time_param(create_time))
        with self._writing() as conn:
            row = conn.execute(self.SQL.insert_definition, params).fetchone()
            if row is None:
                row = conn.execute(self.SQL.get_definition, (rec.name, rec.version)).fetchone()
        if row is None:  # only if someone deletes definitions, which nothing does
            raise StorageUnavailable(f"definition {rec.name} v{rec.version} vanished; retry")
        return failures.same_definition_or_raise(self.ROWS.definition(row), rec)

    def get_definition(self, name: str, version: int | None = None) -> DefinitionRecord:
        with self._reading() as conn:
            if version is None:
                row = conn.execute(self.SQL.get_latest_definition, (name,)).fetchone()
            else:
                row = conn.execute(self.SQL.get_definition, (name, version)).fetchone()
        if row is None:
            raise failures.definition_not_found(name, version)
        return self.ROWS.definition(row)

    def list_definitions(self) -> list[DefinitionRecord]:
        return [self.ROWS.definition(r) for r in self._read_all(self.SQL.list_definitions)]


class SqlRepository(
    _Definitions,
    _FlowControl,
    SqlBatches,
    SqlChildren,
    SqlFanOut,
    SqlSchedules,
    BatchWriter,
    Repository,
):
    SQL: ClassVar[Statements]
    SCHEDULE_SQL: ClassVar[ScheduleStatements]
    FLOW: ClassVar[FlowStatements]
    ROWS: ClassVar[Rows]
    SQL_STANDING: ClassVar[str]  # workflow_id -> (revision, status)

    def __init__(self, schema_version: int) -> None:
        self._schema_version = schema_version

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Connection]:
        """A connection for reads; driver failures come out as StorageUnavailable."""

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Connection]:
        """A connection in a write transaction that commits when the block succeeds."""

    @abstractmethod
    def _stored_schema_version(self) -> int:
        """The database's schema version; StorageUnavailable if it does not answer."""

    # -- reads -----------------------------------------------------------------------

    def _read_all(self, sql: str, params: Any = None) -> list[Any]:
        """Every row ``sql`` reads, with ``params`` when it takes any."""
        with self._reading() as conn:
            cursor = conn.execute(sql) if params is None else conn.execute(sql, params)
            return cursor.fetchall()

    def load(self, workflow_id: str) -> InstanceRecord:
        with self._reading() as conn:
            row = conn.execute(self.SQL.load, (workflow_id,)).fetchone()
        if row is None:
            raise failures.workflow_not_found(workflow_id)
        return self.ROWS.instance(row)

    def load_many(self, workflow_ids: Sequence[str]) -> list[InstanceRecord]:
        ids = json.dumps(list(workflow_ids), ensure_ascii=False)
        return [self.ROWS.instance(r) for r in self._read_all(self.SQL.load_many, {"ids": ids})]

    def history_after(
        self, workflow_id: str, after_revision: int, limit: int
    ) -> list[HistoryRecord]:
        if limit <= 0:
            raise InvalidArgument("limit must be positive", reason=Reason.INVALID_LIMIT)
        rows = self._read_all(self.SQL.history_after, (workflow_id, after_revision, limit))
        return [self.ROWS.history(r) for r in rows]

    def lookup_request(
        self, workflow_id: str, request_id: str, live_after: datetime | None = None
    ) -> RequestRecord | None:
        cutoff = self._time(live_after if live_after is not None else NEVER)
        with self._reading() as conn:
            row = conn.execute(
                self.SQL.lookup_request, (workflow_id, request_id, cutoff)
            ).fetchone()
        return None if row is None else self.ROWS.request(row)

    def purge_requests(self, older_than: datetime, limit: int = PURGE_LIMIT) -> int:
        params = {"cutoff": self._time(older_than), "limit": limit}
        with self._writing_one() as conn:
            return conn.execute(self.SQL.purge_requests, params).rowcount

    def purge_tombstones(self, older_than: datetime, limit: int = PURGE_LIMIT) -> int:
        params = {"cutoff": self._time(older_than), "limit": limit}
        with self._writing_one() as conn:
            return conn.execute(self.SQL.purge_tombstones, params).rowcount

    def lookup_tombstone(self, workflow_id: str) -> Tombstone | None:
        with self._reading() as conn:
            row = conn.execute(self.SQL.lookup_tombstone, (workflow_id,)).fetchone()
        return None if row is None else self.ROWS.tombstone(row)

    def retention_counts(
        self, now: datetime, requests_before: datetime, cap: int = COUNT_CAP
    ) -> RetentionCounts:
        params = {"now": self._time(now), "cutoff": self._time(requests_before), "cap": cap}
        with self._reading() as conn:
            row = conn.execute(self.SQL.retention_counts, params).fetchone()
        instances, oldest_instance, requests, oldest_request = row
        return RetentionCounts(
            overdue_instances=int(instances or 0),
            oldest_instance_due=None
            if oldest_instance is None
            else self.ROWS.time(oldest_instance),
            overdue_requests=int(requests or 0),
            oldest_request_time=None if oldest_request is None else self.ROWS.time(oldest_request),
        )

    def _removal_failure(
        self, conn: Connection, workflow_id: str, revision: int | None
    ) -> StoreError:
        """Why a removal of ``workflow_id`` at ``revision`` removed nothing."""
        row = conn.execute(self.SQL_STANDING, (workflow_id,)).fetchone()
        if row is None:
            return failures.workflow_not_found(workflow_id)
        actual, status = int(row[0]), str(row[1])
        if status not in TERMINAL:
            return failures.workflow_live(workflow_id, status)
        return failures.revision_moved(workflow_id, revision, actual)

    # -- timers ----------------------------------------------------------------------

    def armed_timers(self, workflow_ids: Sequence[str]) -> dict[str, list[TimerRecord]]:
        if not workflow_ids:
            return {}
        ids = json.dumps(list(workflow_ids), ensure_ascii=False)
        rows = self._read_all(self.SQL.armed_timers, {"ids": ids})
        out: dict[str, list[TimerRecord]] = {}
        for row in rows:
            timer = self.ROWS.timer(row)
            out.setdefault(timer.workflow_id, []).append(timer)
        return out

    def claim_timers(self, now: datetime, until: datetime, limit: int) -> list[TimerRecord]:
        params = {
            "now": self.ROWS.time_param(check_time(now, "now")),
            "until": self.ROWS.time_param(check_time(until, "until")),
            "limit": limit,
        }
        with self._writing_one() as conn:
            rows = conn.execute(self.SQL.claim_timers, params).fetchall()
        return sorted((self.ROWS.timer(r) for r in rows), key=lambda t: t.due_time)

    def next_timer_due(self, now: datetime) -> datetime | None:
        params = {"now": self.ROWS.time_param(check_time(now, "now"))}
        with self._reading() as conn:
            row = conn.execute(self.SQL.next_timer_due, params).fetchone()
        return None if row is None or row[0] is None else self.ROWS.time(row[0])

    def delete_timer(self, workflow_id: str, timer_id: str) -> bool:
        with self._writing_one() as conn:
            deleted = conn.execute(self.SQL.delete_timer, (workflow_id, timer_id)).rowcount
        return bool(deleted)

    def timer_counts(self, now: datetime) -> tuple[int, int]:
        params = {"now": self.ROWS.time_param(check_time(now, "now"))}
        with self._reading() as conn:
            armed, due = conn.execute(self.SQL.timer_counts, params).fetchone()
        return int(armed or 0), int(due or 0)

    # -- tasks -----------------------------------------------------------------------

    def _lease_tasks(
        self, params: Params, choose: Choose | None, read: dict[str, InstanceRecord] | None
    ) -> list[TaskRecord]:
        now = params["now"]
        params = self._bound(params)
        flows = self.FLOW
        limited = False
        if flows.fitting_lease is not None and params.get("room") is not None:
            fitted = self._fitting_lease(flows.fitting_lease, params, read)
            if fitted.tasks is not None:
                return fitted.tasks
            limited = fitted.limited
        with self._writing() as conn:
            if flows.unlimited_lease is not None and flows.unlimited_ready is not None:
                if limited:
                    # The one statement saw the queue's config: claim it under its lock.
                    return self._limits_claim(conn, now, params, choose) or []
                # The claim of a queue without limits first, as it always was; a queue
                # with limits answers it nothing, and is then claimed under its lock.
                rows = self._unlimited(
                    conn, params, choose, flows.unlimited_lease, flows.unlimited_ready
                )
                if rows:
                    return sorted(map(self.ROWS.task, rows), key=lambda t: t.available_time)
                return self._limits_claim(conn, now, params, choose) or []
            limited_claim = self._limits_claim(conn, now, params, choose)
            if limited_claim is not None:
                return limited_claim
            rows = self._unlimited(conn, params, choose, self.SQL.lease_tasks, self.SQL.ready_tasks)
        return sorted((self.ROWS.task(r) for r in rows), key=lambda t: t.available_time)

    def _fitting_lease(
        self, sql: str, params: Params, read: dict[str, InstanceRecord] | None
    ) -> _Fitted:
        """A poll's claim in one statement committed on its own (FlowStatements.
        fitting_lease): the tasks it leased, none when nothing was ready on a queue
        without limits; ``tasks`` None when it cannot tell (ready tasks too large for its
        bound, or a queue with limits), for the claim that reads and chooses exactly.
        The statement reads the instances of the tasks it leased too: into ``read``."""
        with self._writing_one() as conn:
            found = conn.execute(sql, params).fetchall()
        ready, limited = int(found[0][0]), bool(found[0][1])
        if found[0][2] is None:
            return _Fitted(None if ready or limited else [], limited)
        task, instance = self.ROWS.task, self.ROWS.instance
        leased = []
        for row in found:
            leased.append(task(row[2:_INSTANCE_AT]))
            if read is not None and row[_INSTANCE_AT] is not None:
                read[row[_INSTANCE_AT]] = instance(row[_INSTANCE_AT:])
        return _Fitted(sorted(leased, key=lambda t: t.available_time), limited)

    def _unlimited(
        self, conn: Connection, params: Params, choose: Choose | None, lease: str, ready: str
    ) -> list[Any]:
        if choose is None:
            return list(conn.execute(lease, params).fetchall())
        found = [self.ROWS.task(r) for r in conn.execute(ready, params).fetchall()]
        return self._lease_chosen(
            conn, choose(sorted(found, key=lambda t: t.available_time)), params
        )

    def _lease_chosen(
        self, conn: Connection, chosen: list[TaskRecord], params: Params, sql: str | None = None
    ) -> list[Any]:
        if not chosen:
            return []
        params["chosen_workflows"] = [t.workflow_id for t in chosen]
        params["chosen_tasks"] = [t.task_id for t in chosen]
        params["chosen"] = json.dumps([[t.workflow_id, t.task_id] for t in chosen])
        return list(conn.execute(sql or self.SQL.lease_chosen, params).fetchall())

    def _heartbeat_task(self, params: Params) -> TaskRecord | None:
        return self._one_task(self.SQL.heartbeat_task, params)

    def _retry_task(self, params: Params) -> TaskRecord | None:
        return self._one_task(self.SQL.retry_task, params)

    def _release_task(self, params: Params) -> TaskRecord | None:
        return self._one_task(self.SQL.release_task, params)

    def _one_task(self, sql: str, params: Params) -> TaskRecord | None:
        """The task a write statement returns; None when it wrote none."""
        with self._writing_one() as conn:
            row = conn.execute(sql, self._bound(params)).fetchone()
        return None if row is None else self.ROWS.task(row)

    def _bound(self, params: Params) -> Params:
        """``params`` with times as this database takes them."""
        return {
            k: self.ROWS.time_param(v) if isinstance(v, datetime) else v for k, v in params.items()
        }

    def claim_expired_tasks(self, now: datetime, until: datetime, limit: int) -> list[TaskRecord]:
        params = {"now": self._time(now), "until": self._time(until), "limit": limit}
        with self._writing_one() as conn:
            rows = conn.execute(self.SQL.claim_expired_tasks, params).fetchall()
        return [self.ROWS.task(r) for r in rows]

    def get_task(self, workflow_id: str, task_id: str) -> TaskRecord:
        with self._reading() as conn:
            row = conn.execute(self.SQL.get_task, (workflow_id, task_id)).fetchone()
        if row is None:
            raise failures.task_not_found(workflow_id, task_id)
        return self.ROWS.task(row)

    def open_tasks(self, workflow_ids: Sequence[str]) -> dict[str, TaskRecord]:
        if not workflow_ids:
            return {}
        ids = json.dumps(list(workflow_ids), ensure_ascii=False)
        rows = self._read_all(self.SQL.open_tasks, {"ids": ids})
        return {t.workflow_id: t for t in map(self.ROWS.task, rows)}

    def queue_stats(self, now: datetime) -> list[QueueCounts]:
        rows = self._read_all(self.SQL.queue_stats, {"now": self._time(now)})
        return [
            QueueCounts(
                queue=r[0],
                ready=int(r[1] or 0),
                oldest_ready=None if r[2] is None else self.ROWS.time(r[2]),
                leased=int(r[3] or 0),
            )
            for r in rows
        ]

    def _tasks_after(self, params: Params) -> list[TaskRecord]:
        condition, params = _filtered(self.SQL.named, params, TASKS)
        queue, workflow, status = _named(params, "queue", "workflow_id", "status")
        sql = self.SQL.list_tasks(queue, workflow, status, condition)
        return [self.ROWS.task(r) for r in self._read_all(sql, self._bound(params))]

    # -- lifecycle -------------------------------------------------------------------

    def set_unreachable(self, unreachable: bool) -> None:
        """An embedded database has no connections to wait for: nothing to cut short."""

    def ping(self) -> None:
        version = self._stored_schema_version()
        if version < self._schema_version:
            raise failures.schema_behind(version, self._schema_version)

    # Locks the instance's row where the database can, so that no save commits between
    # the revision read and the rows written (SQLite's writer holds the whole database).
    REVISION_FOR_UPDATE: ClassVar[str] = ""

    def replace_search(self, items: Sequence[tuple[str, int, SearchValues]]) -> int:
        n = self.SQL.named
        delete = f"DELETE FROM workflow_search WHERE workflow_id = {n('id')}"
        insert = (
            "INSERT INTO workflow_search (workflow_id, field, text, number)"
            f" VALUES ({n('id')}, {n('field')}, {n('text')}, {n('number')})"
        )
        current = (
            f"SELECT revision FROM workflow_instances WHERE workflow_id = {n('id')}"
            + self.REVISION_FOR_UPDATE
        )
        replaced = 0
        with self._writing() as conn:
            for workflow_id, revision, values in items:
                row = conn.execute(current, {"id": workflow_id}).fetchone()
                if row is None or int(row[0]) != revision:
                    continue
                conn.execute(delete, {"id": workflow_id})
                for v in values:
                    fields = {"field": v.field, "text": v.text, "number": v.number}
                    conn.execute(insert, {"id": workflow_id, **fields})
                replaced += 1
        return replaced

    def count_by_status(self, which: Filter | None = None) -> dict[str, int]:
        condition, params = _filtered(self.SQL.named, {"filter": which})
        where = f" WHERE {condition}" if condition else ""
        sql = f"SELECT status, count(*) FROM workflow_instances{where} GROUP BY status"
        return {str(r[0]): int(r[1]) for r in self._read_all(sql, self._bound(params))}

    def _instances_by_value(
        self, params: Params, order: ListOrder
    ) -> list[tuple[InstanceRecord, Any]]:
        given = ("after_value", "definition", "status", "id_prefix")
        condition, params = _filtered(self.SQL.named, params)
        sql = self.SQL.list_by_value(
            order.value_column,
            order.descending,
            frozenset(name for name in given if params[name] is not None),
            condition,
        )
        rows = self._read_all(sql, self._bound(params))
        width = len(INSTANCE)
        return [(self.ROWS.instance(r), r[width]) for r in rows]

    def _instances_by_keys(
        self, params: Params, order: ListOrder
    ) -> list[tuple[InstanceRecord, tuple[Any, ...]]]:
        sql, params = ordering.statement(self.SQL.named, order, *_filtered(self.SQL.named, params))
        rows = self._read_all(sql, self._bound(params))
        return [(self.ROWS.instance(r), tuple(r[len(INSTANCE) :])) for r in rows]

    def _instances_after(self, params: Params, order: ListOrder) -> list[InstanceRecord]:
        given = ("after_time", "definition", "status", "id_prefix")
        condition, params = _filtered(self.SQL.named, params)
        sql = self.SQL.list_instances(
            order.spelled, frozenset(name for name in given if params[name] is not None), condition
        )
        return [self.ROWS.instance(r) for r in self._read_all(sql, self._bound(params))]
