"""The SQL both backends write alike, built once per dialect.

PostgreSQL (psycopg) and SQLite differ in how a statement names its parameters
(``%(name)s`` and ``%s``; ``:name`` and ``?``), and in much else besides: each backend's
module (sql_postgres.py, sql_sqlite.py) keeps what is its own, and takes from here every
statement that differs only in its placeholders, so that such a statement is written
once. Citus runs the PostgreSQL statements; where it runs them on a shard group
(sql_citus.py), its dialect takes a statement's parameters from the JSON input of the
shard function that runs it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from statewrightd.domain import TaskStatus
from statewrightd.store import rows
from statewrightd.store.ordering import listing_conditions
from statewrightd.store.sqlbase import Statements

INSTANCE_COLUMNS = rows.listed(rows.INSTANCE)
HISTORY_COLUMNS = rows.listed(rows.HISTORY)
REQUEST_COLUMNS = rows.listed(rows.REQUEST)
DEFINITION_COLUMNS = rows.listed(rows.DEFINITION)
TIMER_COLUMNS = rows.listed(rows.TIMER)
TASK_COLUMNS = rows.listed(rows.TASK)
TOMBSTONE_COLUMNS = rows.listed(rows.TOMBSTONE)
# A history row as readers get it: a finished instance's last row takes its context from
# the instance row (it stores none of its own).
HISTORY_READ = ", ".join(
    "coalesce(h.context, w.context)" if c == "context" else f"h.{c}" for c in rows.HISTORY
)
OPEN_TASK = "('SCHEDULED', 'LEASED', 'BACKOFF')"


def task_status_in(column: str, statuses: Iterable[str]) -> str:
    """``column`` is one of ``statuses``, said as the statuses it is not (the tables' CHECK
    allows no other). A statement that reads one instance's tasks, or one task by its key,
    and tests its status says it this way: "open" or "leased" would match the predicate of
    a partial index over every such task of every queue, and PostgreSQL, whose statistics
    of a table that churns are always behind, then reads that whole index (dead entries
    and all) for each instance instead of its rows by key. In the task benchmark a batch
    that took instances out of a task state spent 1.9 ms so on each of them."""
    wanted = frozenset(statuses)
    others = ", ".join(f"'{s}'" for s in TaskStatus if s not in wanted)
    return f"{column} NOT IN ({others})"


FINISHED = "('COMPLETED', 'FAILED', 'CANCELLED')"
# A finished child is kept until its parent has taken its end (store/sql_children.py):
# retention shorter than the delivery of its end must not take its result from its parent.
KEPT_FOR_PARENT = """NOT EXISTS (
           SELECT 1 FROM workflow_children c
            WHERE c.workflow_id = workflow_instances.workflow_id AND NOT c.taken)"""


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one database's driver spells a statement's parameters."""

    named: Callable[[str], str]  # a named parameter
    positional: str  # a positional one

    def __call__(self, name: str) -> str:
        return self.named(name)


POSTGRES = Dialect(named=lambda name: f"%({name})s", positional="%s")
SQLITE = Dialect(named=lambda name: f":{name}", positional="?")


def instance_standing(d: Dialect) -> str:
    """workflow_id -> (revision, status)."""
    return f"SELECT revision, status FROM workflow_instances WHERE workflow_id = {d.positional}"


def statements(
    d: Dialect,
    *,
    purge_requests: str,
    purge_tombstones: str,
    insert_definition: str,
    armed_timers: str,
    claim_timers: str,
    timer_counts: str,
    lease_tasks: str,
    ready_tasks: str,
    lease_chosen: str,
    heartbeat_task: str,
    retry_task: str,
    claim_expired_tasks: str,
    open_tasks: str,
    load_many: str,
    queue_stats: str,
) -> Statements:
    """A backend's statements: the shared ones in its dialect, with its own."""
    p, q = d, d.positional
    return Statements(
        load=f"SELECT {INSTANCE_COLUMNS} FROM workflow_instances WHERE workflow_id = {q}",
        load_many=load_many,
        history_after=(
            f"SELECT {HISTORY_READ} FROM workflow_history h"
            " JOIN workflow_instances w ON w.workflow_id = h.workflow_id"
            f" WHERE h.workflow_id = {q} AND h.revision > {q} ORDER BY h.revision LIMIT {q}"
        ),
        lookup_request=(
            f"SELECT {REQUEST_COLUMNS} FROM workflow_requests"
            f" WHERE workflow_id = {q} AND request_id = {q} AND create_time > {q}"
        ),
        purge_requests=purge_requests,
        purge_tombstones=purge_tombstones,
        lookup_tombstone=(
            f"SELECT {TOMBSTONE_COLUMNS} FROM workflow_tombstones WHERE workflow_id = {q}"
        ),
        retention_counts=retention_counts(d),
        insert_definition=insert_definition,
        get_definition=(
            f"SELECT {DEFINITION_COLUMNS} FROM workflow_definitions"
            f" WHERE name = {q} AND version = {q}"
        ),
        get_latest_definition=(
            f"SELECT {DEFINITION_COLUMNS} FROM workflow_definitions"
            f" WHERE name = {q} ORDER BY version DESC LIMIT 1"
        ),
        list_definitions=(
            f"SELECT {DEFINITION_COLUMNS} FROM workflow_definitions ORDER BY name, version"
        ),
        list_instances=functools.partial(_list_instances, d),
        named=d.named,
        list_by_value=functools.partial(list_by_value, d),
        armed_timers=armed_timers,
        claim_timers=claim_timers,
        next_timer_due=f"""
SELECT due_time FROM workflow_timers
 WHERE (claimed_until IS NULL OR claimed_until <= {p("now")})
   AND {rows.unpaused("workflow_timers")}
 ORDER BY due_time LIMIT 1
""",
        delete_timer=f"DELETE FROM workflow_timers WHERE workflow_id = {q} AND timer_id = {q}",
        timer_counts=timer_counts,
        lease_tasks=lease_tasks,
        ready_tasks=ready_tasks,
        lease_chosen=lease_chosen,
        heartbeat_task=heartbeat_task,
        retry_task=retry_task,
        release_task=_release_task(d),
        claim_expired_tasks=claim_expired_tasks,
        get_task=(
            f"SELECT {TASK_COLUMNS} FROM workflow_tasks WHERE workflow_id = {q} AND task_id = {q}"
        ),
        open_tasks=open_tasks,
        queue_stats=queue_stats,
        list_tasks=functools.partial(_list_tasks, d),
    )


def retention_counts(p: Dialect) -> str:
    """now, cutoff, cap -> (overdue instances, the earliest passed expire_time, expired
    request records, the oldest of their create times). Counts stop at the cap: an index
    range that long is reported as "at least". The columns are named for the backends that
    read rows by name (Citus's shard groups answer JSON objects)."""
    return f"""
SELECT (SELECT count(*) FROM (SELECT 1 FROM workflow_instances WHERE expire_time <= {p("now")}
                               LIMIT {p("cap")}) x) AS instances,
       (SELECT min(expire_time) FROM workflow_instances WHERE expire_time <= {p("now")})
           AS oldest_instance,
       (SELECT count(*) FROM (SELECT 1 FROM workflow_requests WHERE create_time <= {p("cutoff")}
                               LIMIT {p("cap")}) y) AS requests,
       (SELECT min(create_time) FROM workflow_requests WHERE create_time <= {p("cutoff")})
           AS oldest_request
"""


def _release_task(p: Dialect) -> str:
    """workflow_id, task_id, token, now -> the task, ready again (its attempt not counted)."""
    return f"""
UPDATE workflow_tasks
   SET status = CASE WHEN attempt <= 1 THEN 'SCHEDULED' ELSE 'BACKOFF' END,
       attempt = attempt - 1, lease_token = NULL, lease_expire_time = NULL,
       attempt_start_time = NULL, claimed_until = NULL, update_time = {p("now")}
 WHERE workflow_id = {p("workflow_id")} AND task_id = {p("task_id")}
   AND lease_token = {p("token")} AND status = 'LEASED'
RETURNING {TASK_COLUMNS}
"""


def _list_instances(d: Dialect, order: str, given: frozenset[str], condition: str = "") -> str:
    """Keyset page over (time, workflow_id) in ``order`` (a ListOrder's spelling), not a
    sequence (on Citus a sequence's values do not follow the order rows were made in); a
    filter is in the statement only when ``given`` (of after_time, definition, status,
    id_prefix), so that the indexes stay usable; ``condition`` is a list filter's. Both
    columns run the same way, so that one index on (time, workflow_id) serves either
    direction, read forwards or backwards."""
    column, _, desc = order.partition(" ")
    past = "<" if desc else ">"
    where = [f"({column}, workflow_id) {past} ({d('after_time')}, {d('after_id')})"]
    where *= "after_time" in given
    where += listing_conditions(d, given, condition)
    filtered = f" WHERE {' AND '.join(where)}" if where else ""
    way = " DESC" if desc else ""
    return (
        f"SELECT {INSTANCE_COLUMNS} FROM workflow_instances{filtered}"
        f" ORDER BY {column}{way}, workflow_id{way} LIMIT {d('limit')}"
    )


def list_by_value(
    d: Dialect, value_column: str, descending: bool, given: frozenset[str], condition: str
) -> str:
    """Keyset page over (a search field's value, workflow_id), read in the order of the
    search table's index on (field, value, workflow_id): only instances with a value of
    it. ``given`` and ``condition`` as _list_instances takes them (after_value for the
    position)."""
    assert value_column in ("text", "number")  # never text of a request
    past = "<" if descending else ">"
    where = [f"field = {d('order_field')}", f"{value_column} IS NOT NULL"]
    position = f"({value_column}, workflow_id) {past} ({d('after_value')}, {d('after_id')})"
    where += [position] * ("after_value" in given)
    where += listing_conditions(d, given, condition)
    way = " DESC" if descending else ""
    # USING merges the two workflow_id columns: an unqualified one names it in either.
    return (
        f"SELECT {INSTANCE_COLUMNS}, {value_column} FROM workflow_search"
        f" JOIN workflow_instances USING (workflow_id) WHERE {' AND '.join(where)}"
        f" ORDER BY {value_column}{way}, workflow_id{way} LIMIT {d('limit')}"
    )


def _list_tasks(
    d: Dialect, by_queue: bool, by_workflow: bool, by_status: bool, condition: str = ""
) -> str:
    """Keyset page over (schedule_time, workflow_id, task_id); filters only when set, and
    ``condition``, a list filter's (store.filters, over TASKS: values as parameters)."""
    after = f"({d('after_time')}, {d('after_w')}, {d('after_t')})"
    where = [f"(schedule_time, workflow_id, task_id) > {after}"]
    where += [f"queue = {d('queue')}"] * by_queue
    where += [f"workflow_id = {d('workflow_id')}"] * by_workflow
    where += [f"status = {d('status')}"] * by_status
    where += [condition] * bool(condition)
    return (
        f"SELECT {TASK_COLUMNS} FROM workflow_tasks WHERE {' AND '.join(where)}"
        f" ORDER BY schedule_time, workflow_id, task_id LIMIT {d('limit')}"
    )
