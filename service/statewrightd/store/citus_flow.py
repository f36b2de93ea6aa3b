"""Citus: flow control on task queues (store/flow.py), its limits held across nodes.

On PostgreSQL a limited queue's claim runs under its config row's lock and counts the
queue's leases from the task rows. On Citus the task rows are spread over the shard
groups of every worker; what stays the same is that nothing but the claim counts leases,
from the task rows themselves, so a finish, a retry or an expired lease stays one
single-shard step (no counter on another node, no two-phase commit):

- the queue configs, token buckets and keys stay on the coordinator (plain tables there),
  and a limited queue's claims take turns on a session advisory lock of the queue;
- under it a claim counts the queue's leases on every shard group (one call per node),
  reads the oldest ready tasks of each priority there, plans with ``flow.plan_claim``,
  and leases the chosen tasks with one delegated call per node that holds some: each a
  one-phase commit on that node, committed before the lock is let go, so that the next
  claim counts it; then it saves the buckets and the keys it served;
- the lock is the session's of the connection that makes the calls, not a transaction's:
  the coordinator lets it go when the claim unlocks or its session ends, never while a
  call of it still runs (a transaction's row lock is free to others from the moment the
  coordinator commits locally, before a two-phase commit reaches the workers). A call
  whose node connection broke is waited for, a bounded time, before the unlock.

A queue without a config keeps the claim it had (CitusScans._unlimited_claim), after one
read of the coordinator's config table.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import psycopg

from statewrightd.errors import StoreError
from statewrightd.store import flow
from statewrightd.store import sql_citus as c
from statewrightd.store.citus_scans import ALL, JSON_ROWS, CitusScans, fields_of
from statewrightd.store.flow import KeyCounts, KeyState, QueueState, StoredQueue
from statewrightd.store.pg_pool import Conn
from statewrightd.store.records import InstanceRecord, TaskRecord
from statewrightd.store.repository import Choose, Params
from statewrightd.store.sql_flow import KEY_COLUMNS

# Names "statewright queue claim" among the coordinator's advisory locks ("SWFC").
QUEUE_LOCK_CLASS = 0x5357_4643
# How long an unlock waits for a lease call whose node connection broke to end.
_SETTLE_S = 2.0

# On the coordinator, where the queue configs and keys are (plain tables there): a
# limited queue's claims take turns on a session lock of the queue, which the
# coordinator releases only once the call that leases under it has ended.
QUEUE_LOCK = "SELECT pg_advisory_lock(%(lock_class)s, hashtext(%(queue)s))"
QUEUE_UNLOCK = "SELECT pg_advisory_unlock(%(lock_class)s, hashtext(%(queue)s))"
# The keys that may hold a claim back (closed, or a bucket not full since full_since).
_KEYS_STANDING = f"""
SELECT {KEY_COLUMNS} FROM task_queue_keys
 WHERE queue = %(queue)s AND (closed_until > %(now)s OR refill_time > %(full_since)s)
"""
_KEYS_OF = f"""
SELECT {KEY_COLUMNS} FROM task_queue_keys WHERE queue = %(queue)s AND key = ANY(%(keys)s)
"""
# A claim's session's call still running on some node after its error: the processes
# that carry the session's global pid, other than the session itself and its idle
# connections (asked on another session: this query's own carry the asker's).
_CALL_ALIVE = """
SELECT count(*) FROM citus_stat_activity
 WHERE global_pid = %(gpid)s AND state <> 'idle'
   AND NOT (pid = %(pid)s AND nodeid = (SELECT nodeid FROM pg_dist_node WHERE groupid = 0))
"""
_SESSION_GPID = "SELECT citus_backend_gpid()"


class CitusFlow(CitusScans):
    """The claims of limited queues, and ListQueues' counts by key, on Citus."""

    def _lease_tasks(
        self, params: Params, choose: Choose | None, read: dict[str, InstanceRecord] | None
    ) -> list[TaskRecord]:
        if not self._read_all(self.FLOW.get_config, {"queue": params["queue"]}):
            return self._unlimited_claim(params, choose)
        lock = {"lock_class": QUEUE_LOCK_CLASS, "queue": params["queue"]}
        with self._reading() as conn:
            conn.execute(QUEUE_LOCK, lock)
            try:
                return self._limited_claim(conn, params, choose)
            except psycopg.Error:
                if not conn.broken:
                    self._settle(conn)
                raise
            finally:
                try:
                    conn.execute(QUEUE_UNLOCK, lock)
                except psycopg.Error:
                    conn.close()  # the session ends, and its lock with it

    def _limited_claim(self, conn: Conn, params: Params, choose: Choose | None) -> list[TaskRecord]:
        """The claim of a queue with limits, under its lock (see the module's docstring)."""
        queue, now, limit = params["queue"], params["now"], params["limit"]
        row = conn.execute(self.FLOW.get_config, {"queue": queue}).fetchone()
        if row is None:
            return []  # its limits were removed meanwhile: the next poll claims as usual
        stored: StoredQueue = self._stored_queue(row)
        state = self._standing(conn, stored, queue, now)
        if flow.room(state, limit, now) == 0:
            return []  # full, or out of tokens: nothing to read
        shards = self._shards()
        wanted = {
            "queue": queue,
            "now": now.isoformat(),
            "blocked": flow.blocked_keys(state, now),
            # Each shard group's share of the window, so that a claim reads about twice
            # the window of each priority whatever the number of shards.
            "per_shard": max(8, math.ceil(2 * flow.WINDOW / shards.count)),
        }
        ready = [
            JSON_ROWS.task(fields_of(r, c.TASK_FIELDS))
            for r in self._scan(c.RANKED_READY, wanted, ALL, conn)
        ]
        keys = dict(state.keys)
        self._known_keys(conn, queue, ready, keys)
        state = dataclasses.replace(state, keys=keys)
        claim = flow.plan_claim(state, ready, limit, now)
        if choose is not None and claim.chosen:
            claim = flow.plan_claim(state, choose(claim.chosen), limit, now)
        if not claim.chosen:
            return []
        base = {"queue": queue, "now": now.isoformat(), "first_ms": params["first_ms"]}
        docs = [{**base, "workflow_id": t.workflow_id, "task_id": t.task_id} for t in claim.chosen]
        found = {
            (t.workflow_id, t.task_id): t
            for t in (
                JSON_ROWS.task(fields_of(r, c.TASK_FIELDS))
                for r in self._by_node(c.LEASE_TASKS, docs, shards, one_each=True, conn=conn)
            )
        }
        leased = [t for t in claim.chosen if (t.workflow_id, t.task_id) in found]
        if leased:
            # The buckets and keys as the tasks it did lease leave them (a task another
            # replica's unlimited claim took meanwhile spends nothing).
            self._save_spent(conn, stored, flow.plan_claim(state, leased, limit, now), now)
        return [found[(t.workflow_id, t.task_id)] for t in leased]

    def _standing(self, conn: Conn, stored: StoredQueue, queue: str, now: datetime) -> QueueState:
        """Where the queue stands: its leases in all and by key (every shard group), and
        the keys that may hold a claim back (closed, or a bucket not full)."""
        config = stored.config
        by_key: dict[str, int] = {}
        leased = 0
        for r in self._scan(c.LEASED_BY_KEY, {"queue": queue}, ALL, conn):
            n = int(r["leased"])
            leased += n
            if r["key"] is not None:
                by_key[r["key"]] = by_key.get(r["key"], 0) + n
        refill = config.key_bucket / config.key_rate if config.key_rate else 0.0
        since = {"queue": queue, "now": now, "full_since": now - timedelta(seconds=refill)}
        keys = {r[0]: self._key_state(r) for r in conn.execute(_KEYS_STANDING, since)}
        return QueueState(config, stored.tokens, stored.refill_time, leased, by_key, keys)

    def _known_keys(
        self, conn: Conn, queue: str, ready: Sequence[TaskRecord], keys: dict[str, KeyState]
    ) -> None:
        """Adds to ``keys`` what the queue knows of the ready tasks' other keys (when
        each was last served: their turns)."""
        others = sorted(
            {t.concurrency_key for t in ready if t.concurrency_key is not None} - keys.keys()
        )
        if others:
            for r in conn.execute(_KEYS_OF, {"queue": queue, "keys": others}):
                keys[r[0]] = self._key_state(r)

    def _save_spent(
        self, conn: Conn, stored: StoredQueue, spent: flow.Claim, now: datetime
    ) -> None:
        served = [
            {"key": ks.key, "tokens": ks.tokens, "refill_time": self._json_time(ks.refill_time)}
            for ks in spent.keys
        ]
        params: dict[str, Any] = {
            "queue": stored.config.queue,
            "now": now,
            "tokens": spent.tokens,
            "served": json.dumps(served),
        }
        if stored.config.rate:
            conn.execute(self.FLOW.save_tokens, params)
        if served:
            conn.execute(self.FLOW.save_keys, params)

    def _settle(self, conn: Conn) -> None:
        """After an error of a call on ``conn``: waits (a bounded time) until no process
        of the call runs on any node, so that the lock is let go only once what it
        leased has committed or rolled back."""
        try:
            row = conn.execute(_SESSION_GPID).fetchone()
            ask = {"gpid": int(row[0]) if row else 0, "pid": conn.info.backend_pid}
            deadline = time.monotonic() + _SETTLE_S
            with self._reading() as other:
                while time.monotonic() < deadline:
                    alive = other.execute(_CALL_ALIVE, ask).fetchone()
                    if alive is None or not alive[0]:
                        return
                    time.sleep(0.05)
        except (psycopg.Error, OSError, StoreError):
            time.sleep(_SETTLE_S)  # no node to ask: let a running call end meanwhile

    # -- visibility ------------------------------------------------------------------

    def key_counts(self, now: datetime) -> list[KeyCounts]:
        merged: dict[tuple[str, str], tuple[int, int]] = {}
        for r in self._scan(c.KEY_COUNTS, {"now": self._when(now, "now")}, ALL):
            k = (r["queue"], r["key"])
            ready, leased = merged.get(k, (0, 0))
            merged[k] = (ready + int(r["ready"]), leased + int(r["leased"]))
        return [KeyCounts(q, key, *merged[(q, key)]) for q, key in sorted(merged)]
