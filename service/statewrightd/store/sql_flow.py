"""The statements of flow control on task queues, in each SQL dialect (see store/flow.py).

Named parameters: queue, now, and those each statement names. Times as the backend keeps
them (timestamptz; integer microseconds in SQLite).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from statewrightd.store import rows

CONFIG_COLUMNS = (
    "queue, max_leased, rate, burst, key_max_leased, key_rate, key_burst, update_time,"
    " tokens, refill_time"
)
KEY_COLUMNS = "key, tokens, refill_time, last_lease_time, closed_until"
_READY = "queue = {q} AND status IN ('SCHEDULED', 'BACKOFF') AND available_time <= {now}"


@dataclass(frozen=True, slots=True)
class FlowStatements:
    lock_config: str  # queue -> CONFIG row, locked for the claim (none: no limits)
    get_config: str  # queue -> CONFIG row
    list_configs: str  # -> CONFIG rows by queue
    put_config: str  # the config's fields, now, tokens -> upserted
    delete_config: str  # queue
    # queue, now, full_since -> one read of where the queue stands: rows ('L', key,
    # leased) for its leases by key, and ('K', KEY columns) for the keys that may hold
    # one back (closed, or a bucket that has not refilled since full_since).
    standing: str
    # queue, now, window, blocked -> up to ``window`` ready tasks of each priority, oldest
    # first, none of a blocked key; locked where the database can. Each row: TASK, then
    # what the queue knows of its key (tokens, refill_time, last_lease_time, closed_until).
    ranked_ready: str
    save_tokens: str  # queue, tokens, now
    # queue, now, served (JSON: [{key, tokens, refill_time}]) -> upserted, last served now
    save_keys: str
    close_key: str  # queue, key, until -> closed until then (or later, if it was)
    closed_keys: str  # queue, now -> KEY rows closed past now
    key_counts: str  # now -> (queue, key, ready, leased) of every keyed open task
    # Where the database can: the lease of the chosen tasks (SQL.lease_chosen's parameters)
    # with save_keys and save_tokens (when spend_tokens) in the same statement.
    lease_and_save: str | None = None
    # Where a round trip is worth saving: SQL.lease_tasks and SQL.ready_tasks that find
    # nothing on a queue with a config (which is then claimed under its lock).
    unlimited_lease: str | None = None
    unlimited_ready: str | None = None
    # Where a poll's claim is worth making in one statement on its own: queue, now, limit,
    # first_ms, room -> (ready, limited, TASK columns or NULLs), see sql_postgres.
    fitting_lease: str | None = None


_KEYED = "s.tokens, s.refill_time, s.last_lease_time, s.closed_until"


def _ranked_postgres() -> str:
    ready = _READY.format(q="%(queue)s", now="%(now)s").replace("queue =", "t.queue =")
    ready = ready.replace("status IN", "t.status IN").replace(
        "available_time <=", "t.available_time <="
    )
    return f"""
SELECT c.* FROM generate_series(1, 5) AS p(priority),
LATERAL (SELECT {rows.listed(rows.TASK, "t.")}, {_KEYED} FROM workflow_tasks t
           LEFT JOIN task_queue_keys s ON s.queue = t.queue AND s.key = t.concurrency_key
          WHERE {ready} AND t.deadline > %(now)s AND t.priority = p.priority
            AND {rows.unpaused("t")}
            AND (t.concurrency_key IS NULL OR NOT t.concurrency_key = ANY(%(blocked)s::text[]))
          ORDER BY t.available_time LIMIT %(window)s
            FOR UPDATE OF t SKIP LOCKED) c
"""


def _ranked_sqlite() -> str:
    ready = _READY.format(q=":queue", now=":now").replace("queue =", "t.queue =")
    ready = ready.replace("status IN", "t.status IN").replace(
        "available_time <=", "t.available_time <="
    )
    parts = [
        f"""SELECT * FROM (SELECT {rows.listed(rows.TASK, "t.")}, {_KEYED} FROM workflow_tasks t
           LEFT JOIN task_queue_keys s ON s.queue = t.queue AND s.key = t.concurrency_key
          WHERE {ready} AND t.deadline > :now AND t.priority = {p}
            AND {rows.unpaused("t")}
            AND (t.concurrency_key IS NULL
                 OR t.concurrency_key NOT IN (SELECT value FROM json_each(:blocked_json)))
          ORDER BY t.available_time LIMIT :window)"""
        for p in range(1, 6)
    ]
    return "\nUNION ALL\n".join(parts)


POSTGRES = FlowStatements(
    lock_config=f"SELECT {CONFIG_COLUMNS} FROM task_queues WHERE queue = %(queue)s FOR UPDATE",
    get_config=f"SELECT {CONFIG_COLUMNS} FROM task_queues WHERE queue = %(queue)s",
    list_configs=f"SELECT {CONFIG_COLUMNS} FROM task_queues ORDER BY queue",
    put_config="""
INSERT INTO task_queues (queue, max_leased, rate, burst, key_max_leased, key_rate, key_burst,
                         tokens, refill_time, update_time)
VALUES (%(queue)s, %(max_leased)s, %(rate)s, %(burst)s, %(key_max_leased)s, %(key_rate)s,
        %(key_burst)s, %(tokens)s, %(now)s, %(now)s)
ON CONFLICT (queue) DO UPDATE SET max_leased = excluded.max_leased, rate = excluded.rate,
    burst = excluded.burst, key_max_leased = excluded.key_max_leased,
    key_rate = excluded.key_rate, key_burst = excluded.key_burst,
    tokens = LEAST(task_queues.tokens, excluded.tokens), update_time = excluded.update_time
""",
    delete_config="DELETE FROM task_queues WHERE queue = %(queue)s",
    standing="""
SELECT 'L', concurrency_key, count(*)::float8, NULL::timestamptz, NULL::timestamptz,
       NULL::timestamptz
  FROM workflow_tasks WHERE queue = %(queue)s AND status = 'LEASED' GROUP BY concurrency_key
UNION ALL
SELECT 'K', key, tokens, refill_time, last_lease_time, closed_until FROM task_queue_keys
 WHERE queue = %(queue)s AND (closed_until > %(now)s OR refill_time > %(full_since)s)
""",
    ranked_ready=_ranked_postgres(),
    save_tokens="UPDATE task_queues SET tokens = %(tokens)s, refill_time = %(now)s"
    " WHERE queue = %(queue)s",
    save_keys="""
INSERT INTO task_queue_keys (queue, key, tokens, refill_time, last_lease_time)
SELECT %(queue)s, s.key, s.tokens, s.refill_time, %(now)s
  FROM json_to_recordset(%(served)s::json) AS s(key text, tokens float8, refill_time timestamptz)
ON CONFLICT (queue, key) DO UPDATE SET tokens = excluded.tokens,
    refill_time = excluded.refill_time, last_lease_time = excluded.last_lease_time
""",
    close_key="""
INSERT INTO task_queue_keys (queue, key, closed_until) VALUES (%(queue)s, %(key)s, %(until)s)
ON CONFLICT (queue, key) DO UPDATE SET closed_until =
    GREATEST(task_queue_keys.closed_until, excluded.closed_until)
""",
    closed_keys=f"""
SELECT {KEY_COLUMNS} FROM task_queue_keys
 WHERE queue = %(queue)s AND closed_until > %(now)s ORDER BY key
""",
    lease_and_save=None,  # see with_lease
    key_counts="""
SELECT queue, concurrency_key,
       count(*) FILTER (WHERE status IN ('SCHEDULED', 'BACKOFF') AND available_time <= %(now)s),
       count(*) FILTER (WHERE status = 'LEASED')
  FROM workflow_tasks
 WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF') AND concurrency_key IS NOT NULL
 GROUP BY queue, concurrency_key
""",
)

SQLITE = FlowStatements(
    lock_config=f"SELECT {CONFIG_COLUMNS} FROM task_queues WHERE queue = :queue",
    get_config=f"SELECT {CONFIG_COLUMNS} FROM task_queues WHERE queue = :queue",
    list_configs=f"SELECT {CONFIG_COLUMNS} FROM task_queues ORDER BY queue",
    put_config="""
INSERT INTO task_queues (queue, max_leased, rate, burst, key_max_leased, key_rate, key_burst,
                         tokens, refill_time, update_time)
VALUES (:queue, :max_leased, :rate, :burst, :key_max_leased, :key_rate, :key_burst, :tokens,
        :now, :now)
ON CONFLICT (queue) DO UPDATE SET max_leased = excluded.max_leased, rate = excluded.rate,
    burst = excluded.burst, key_max_leased = excluded.key_max_leased,
    key_rate = excluded.key_rate, key_burst = excluded.key_burst,
    tokens = min(task_queues.tokens, excluded.tokens), update_time = excluded.update_time
""",
    delete_config="DELETE FROM task_queues WHERE queue = :queue",
    standing="""
SELECT 'L', concurrency_key, count(*), NULL, NULL, NULL
  FROM workflow_tasks WHERE queue = :queue AND status = 'LEASED' GROUP BY concurrency_key
UNION ALL
SELECT 'K', key, tokens, refill_time, last_lease_time, closed_until FROM task_queue_keys
 WHERE queue = :queue AND (closed_until > :now OR refill_time > :full_since)
""",
    ranked_ready=_ranked_sqlite(),
    save_tokens="UPDATE task_queues SET tokens = :tokens, refill_time = :now WHERE queue = :queue",
    save_keys="""
INSERT INTO task_queue_keys (queue, key, tokens, refill_time, last_lease_time)
SELECT :queue, json_extract(value, '$.key'), json_extract(value, '$.tokens'),
       json_extract(value, '$.refill_time'), :now
  FROM json_each(:served) WHERE true
ON CONFLICT (queue, key) DO UPDATE SET tokens = excluded.tokens,
    refill_time = excluded.refill_time, last_lease_time = excluded.last_lease_time
""",
    close_key="""
INSERT INTO task_queue_keys (queue, key, closed_until) VALUES (:queue, :key, :until)
ON CONFLICT (queue, key) DO UPDATE SET closed_until =
    max(coalesce(task_queue_keys.closed_until, 0), excluded.closed_until)
""",
    closed_keys=f"""
SELECT {KEY_COLUMNS} FROM task_queue_keys
 WHERE queue = :queue AND closed_until > :now ORDER BY key
""",
    lease_and_save=None,
    key_counts="""
SELECT queue, concurrency_key,
       coalesce(sum(status IN ('SCHEDULED', 'BACKOFF') AND available_time <= :now), 0),
       coalesce(sum(status = 'LEASED'), 0)
  FROM workflow_tasks
 WHERE status IN ('SCHEDULED', 'LEASED', 'BACKOFF') AND concurrency_key IS NOT NULL
 GROUP BY queue, concurrency_key
""",
)


def with_lease(
    statements: FlowStatements,
    lease_chosen: str,
    unlimited: tuple[str, str],
    fitting: str | None = None,
) -> FlowStatements:
    """``statements`` with lease_and_save built on the dialect's lease of chosen tasks:
    one round trip fewer under the queue's lock, as the served keys and the spent tokens
    are saved by the lease's own statement (data-modifying CTEs run whether or not read);
    and with the ``unlimited`` (lease, ready) claims and the ``fitting`` one."""
    return dataclasses.replace(
        statements,
        unlimited_lease=unlimited[0],
        unlimited_ready=unlimited[1],
        fitting_lease=fitting,
        lease_and_save=f"""
WITH served AS ({statements.save_keys.strip()}),
spent AS (
    UPDATE task_queues SET tokens = %(tokens)s, refill_time = %(now)s
     WHERE queue = %(queue)s AND %(spend_tokens)s
)
{lease_chosen.strip()}
""",
    )
