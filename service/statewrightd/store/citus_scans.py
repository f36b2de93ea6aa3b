"""Citus: what visits the shard groups rather than one instance's rows.

Claims of due timers, tasks and expired leases, the purges and the counts run on each
node's shard groups one by one, ``FOR UPDATE SKIP LOCKED`` staying local to a shard;
each call starts at another shard group and each claim at another node, so replicas
spread over the shard groups and every one is visited within a few calls. Reads of a
few named instances go to each node that holds some of them, in one call.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import psycopg

from statewrightd.errors import OutcomeUnknown, StorageUnavailable
from statewrightd.store import sql_citus as c
from statewrightd.store.citus_errors import node_lost, node_never_reached
from statewrightd.store.citus_routing import Shard, ShardMap
from statewrightd.store.codec import check_time
from statewrightd.store.pg_pool import Conn
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.records import (
    InstanceRecord,
    Purged,
    QueueCounts,
    RetentionCounts,
    TaskRecord,
    TimerRecord,
    WholeInstance,
)
from statewrightd.store.repository import Choose, Params
from statewrightd.store.rows import Rows
from statewrightd.store.sqlbase import COUNT_CAP, PURGE_LIMIT

# A scan that visits every shard group (counts, the next due time) wants this many rows.
ALL = 1 << 30
# How often a claim looks again when other replicas took the rows it was offered.
_CLAIM_ROUNDS = 3
CALL_ROWS = "SELECT * FROM statewright_shard_rows(%s, %s, %s, %s, %s)"
_CALL_SCAN = "SELECT * FROM statewright_shard_scan(%s, %s, %s, %s, %s)"
_SHARD_MAP = """
SELECT s.shardminvalue::integer, s.shardmaxvalue::integer, p.groupid
  FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
 WHERE s.logicalrelid = 'workflow_instances'::regclass
"""


def _iso(value: Any) -> datetime:
    # to_json spells a timestamptz in ISO 8601 with its offset.
    return datetime.fromisoformat(value).astimezone(UTC) if isinstance(value, str) else value


def _as_is(value: Any) -> Any:
    return value


# Rows that come back as JSON objects from the shard functions.
JSON_ROWS = Rows(json=_as_is, time=_iso, time_param=_as_is)


def fields_of(doc: dict[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(doc.get(name) for name in names)


class CitusScans(PostgresRepository):
    """The shard map, and the statements that run on shard groups: scans, claims, reads
    of a few instances by node, and the purges."""

    # Citus delegates a function call to the node that holds its rows only outside a
    # transaction block; the reads are single statements anyway.
    AUTOCOMMIT = True

    def _before_open(self) -> None:
        super()._before_open()
        self._map: ShardMap | None = None
        self._map_lock = threading.Lock()
        self._turn = itertools.count(random.randrange(1 << 20))

    # -- connections: a node lost is the database unavailable, whatever its class -----

    @contextlib.contextmanager
    def _reading(self) -> Iterator[Conn]:
        try:
            with super()._reading() as conn:
                yield conn
        except psycopg.InternalError as exc:
            if not node_lost(exc):
                raise
            raise StorageUnavailable(f"database unavailable: {exc}") from exc

    @contextlib.contextmanager
    def _writing(self, alone: bool = False) -> Iterator[Conn]:
        committing = False
        try:
            with super()._writing(alone) as conn:
                yield conn
                committing = True
        except psycopg.InternalError as exc:
            if not node_lost(exc):
                raise
            if committing or not node_never_reached(exc):
                # A node lost while its part commits (each statement commits as it runs
                # here; two-phase when the write spans nodes) may have committed it.
                raise OutcomeUnknown(f"a node was lost while a write ran: {exc}") from exc
            raise StorageUnavailable(f"database unavailable: {exc}") from exc

    # -- the shard map ---------------------------------------------------------------

    def _shards(self, stale: ShardMap | None = None) -> ShardMap:
        """The shard map; ``stale``: a map that sent rows to a node that does not hold
        them, read anew unless another thread has done so since."""
        with self._map_lock:
            if self._map is None or (stale is not None and self._map is stale):
                with self._reading() as conn:
                    found = conn.execute(_SHARD_MAP).fetchall()
                self._map = ShardMap(Shard(low, high, group) for low, high, group in found)
            return self._map

    # -- scans -----------------------------------------------------------------------

    @contextlib.contextmanager
    def _given(self, conn: Conn | None) -> Iterator[Conn]:
        """``conn`` when given (a claim's, which holds its queue's lock), else a pooled
        connection for reads (autocommit: node calls are delegated)."""
        if conn is not None:
            yield conn
            return
        with self._reading() as pooled:
            yield pooled

    def _scan(
        self, statement: str, params: dict[str, Any], wanted: int, conn: Conn | None = None
    ) -> list[dict[str, Any]]:
        """``statement`` on every node's shard groups until ``wanted`` rows came back;
        each scan starts at another node and another shard group. On ``conn`` if given."""
        shards = self._shards()
        groups = list(shards.groups)
        turn = next(self._turn)
        start = turn % len(groups)
        order = groups[start:] + groups[:start]
        doc = json.dumps(params)
        found: list[dict[str, Any]] = []
        remaining = wanted
        with self._given(conn) as on:
            for group in order:
                if remaining <= 0:
                    break
                rows = on.execute(
                    _CALL_SCAN, (shards.route(group), statement, doc, remaining, turn)
                ).fetchall()
                for (row,) in rows:
                    found.append(row)
                    remaining -= int(row.get("taken", 1))
        return found

    def _by_node(
        self,
        statement: str,
        docs: Sequence[dict[str, Any]],
        shards: ShardMap | None = None,
        *,
        one_each: bool = False,
        conn: Conn | None = None,
    ) -> list[dict[str, Any]]:
        """``statement`` on the rows ``docs`` name (each has a workflow_id), one call per
        node (by ``shards``, or the current map); ``one_each``: a node gives back a row for
        each doc at most (a claim). What comes back from rows a node no longer holds is
        left out."""
        shards = shards or self._shards()
        groups: dict[int, list[dict[str, Any]]] = {}
        for doc in docs:
            groups.setdefault(shards.group_of(doc["workflow_id"]), []).append(doc)
        found: list[dict[str, Any]] = []
        with self._given(conn) as on:
            for members in groups.values():
                batch = json.dumps([{**d, "n": n} for n, d in enumerate(members)])
                wanted = len(members) if one_each else ALL
                rows = on.execute(
                    CALL_ROWS,
                    rows_params(members[0]["workflow_id"], [statement], [batch], wanted),
                ).fetchall()
                found.extend(row for (row,) in rows if not row.get("misrouted"))
        return found

    def _ordered(
        self,
        peek: str,
        claim: str,
        params: dict[str, Any],
        limit: int,
        keys: tuple[str, ...],
        *,
        pick: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None,
    ) -> list[dict[str, Any]]:
        """Claim up to ``limit`` rows, the oldest first: every shard's oldest candidates
        are read (``peek``, with a ``sort`` value) and offered to ``claim`` on their nodes
        in order, as many as are still wanted at a time; a node claims what it is offered
        unless another replica holds it by then, and the next candidates are offered in
        its place. Replicas racing for the same rows thus take different ones, and a
        claim reads the candidates again a few times at most. ``pick``, when given,
        chooses once among the oldest ``limit`` candidates which to offer (and only
        those)."""
        taken: list[dict[str, Any]] = []
        shards = self._shards()

        def offer(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            docs = [{**params, **{k: r[k] for k in keys}} for r in rows]
            return self._by_node(claim, docs, shards, one_each=True)

        for _peek in range(_CLAIM_ROUNDS):
            wanted = limit - len(taken)
            if wanted <= 0:
                break
            found = self._scan(peek, {**params, "each": 2 * wanted}, ALL)
            found.sort(key=lambda r: (_iso(r["sort"]), *(r[k] for k in keys)))
            if pick is not None:
                chosen = pick(found[:limit])
                return offer(chosen) if chosen else []
            candidates = found[: 2 * wanted]
            while candidates and len(taken) < limit:
                offered = candidates[: limit - len(taken)]
                candidates = candidates[len(offered) :]
                taken.extend(offer(offered))
            if len(found) < 2 * wanted:
                break  # every candidate was offered: nothing more is due
        return taken

    @staticmethod
    def _when(value: datetime, name: str) -> str:
        return check_time(value, name).isoformat()

    def claim_timers(self, now: datetime, until: datetime, limit: int) -> list[TimerRecord]:
        params = {"now": self._when(now, "now"), "until": self._when(until, "until")}
        rows = self._ordered(
            c.PEEK_TIMERS, c.CLAIM_TIMERS, params, limit, ("workflow_id", "timer_id")
        )
        timers = [JSON_ROWS.timer(fields_of(r, c.TIMER_FIELDS)) for r in rows]
        return sorted(timers, key=lambda t: (t.due_time, t.workflow_id))

    def next_timer_due(self, now: datetime) -> datetime | None:
        rows = self._scan(c.NEXT_TIMER_DUE, {"now": self._when(now, "now")}, ALL)
        due = [_iso(r["due"]) for r in rows if r.get("due") is not None]
        return min(due) if due else None

    def timer_counts(self, now: datetime) -> tuple[int, int]:
        rows = self._scan(c.TIMER_COUNTS, {"now": self._when(now, "now")}, ALL)
        return sum(int(r["armed"]) for r in rows), sum(int(r["due"]) for r in rows)

    def load_whole(self, workflow_id: str) -> WholeInstance | None:
        return None  # timers and tasks are read node by node (below), not in one pipeline

    def load_many(self, workflow_ids: Sequence[str]) -> list[InstanceRecord]:
        docs = [{"workflow_id": w} for w in dict.fromkeys(workflow_ids)]
        rows = self._by_node(c.LOAD_INSTANCES, docs)
        return [JSON_ROWS.instance(fields_of(r, c.INSTANCE_FIELDS)) for r in rows]

    def armed_timers(self, workflow_ids: Sequence[str]) -> dict[str, list[TimerRecord]]:
        if not workflow_ids:
            return {}
        out: dict[str, list[TimerRecord]] = {}
        docs = [{"workflow_id": w} for w in dict.fromkeys(workflow_ids)]
        timers = (
            JSON_ROWS.timer(fields_of(r, c.TIMER_FIELDS))
            for r in self._by_node(c.ARMED_TIMERS, docs)
        )
        for timer in sorted(timers, key=lambda t: (t.workflow_id, t.due_time)):
            out.setdefault(timer.workflow_id, []).append(timer)
        return out

    def open_tasks(self, workflow_ids: Sequence[str]) -> dict[str, TaskRecord]:
        if not workflow_ids:
            return {}
        docs = [{"workflow_id": w} for w in dict.fromkeys(workflow_ids)]
        rows = self._by_node(c.OPEN_TASKS, docs)
        return {
            t.workflow_id: t for t in (JSON_ROWS.task(fields_of(r, c.TASK_FIELDS)) for r in rows)
        }

    def _unlimited_claim(self, params: Params, choose: Choose | None) -> list[TaskRecord]:
        """The claim of a queue without limits: its oldest ready tasks, each node's share
        leased there (``choose``, when given, picks among the oldest)."""
        doc = {
            "queue": params["queue"],
            "now": params["now"].isoformat(),
            "first_ms": params["first_ms"],
        }
        pick = None
        if choose is not None:

            def pick(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
                ready = [JSON_ROWS.task(fields_of(r, c.TASK_FIELDS)) for r in rows]
                wanted = {(t.workflow_id, t.task_id) for t in choose(ready)}
                return [r for r in rows if (r["workflow_id"], r["task_id"]) in wanted]

        keys = ("workflow_id", "task_id")
        rows = self._ordered(c.PEEK_TASKS, c.LEASE_TASKS, doc, params["limit"], keys, pick=pick)
        tasks = [JSON_ROWS.task(fields_of(r, c.TASK_FIELDS)) for r in rows]
        return sorted(tasks, key=lambda t: (t.available_time, t.workflow_id))

    def _heartbeat_task(self, params: Params) -> TaskRecord | None:
        doc = {**params, "now": params["now"].isoformat()}
        rows = self._by_node(c.HEARTBEAT_TASK, [doc])
        return JSON_ROWS.task(fields_of(rows[0], c.TASK_FIELDS)) if rows else None

    def claim_expired_tasks(self, now: datetime, until: datetime, limit: int) -> list[TaskRecord]:
        params = {"now": self._when(now, "now"), "until": self._when(until, "until")}
        rows = self._scan(c.CLAIM_EXPIRED_TASKS, params, limit)
        return [JSON_ROWS.task(fields_of(r, c.TASK_FIELDS)) for r in rows]

    def queue_stats(self, now: datetime) -> list[QueueCounts]:
        merged: dict[str, QueueCounts] = {}
        for r in self._scan(c.QUEUE_STATS, {"now": self._when(now, "now")}, ALL):
            name, ready, leased = r["queue"], int(r["ready"]), int(r["leased"])
            oldest = None if r["oldest"] is None else _iso(r["oldest"])
            seen = merged.get(name)
            if seen is not None:
                ready, leased = ready + seen.ready, leased + seen.leased
                times = [t for t in (oldest, seen.oldest_ready) if t is not None]
                oldest = min(times) if times else None
            merged[name] = QueueCounts(name, ready, oldest, leased)
        return [merged[name] for name in sorted(merged)]

    # -- retention -------------------------------------------------------------------

    def purge_requests(self, older_than: datetime, limit: int = PURGE_LIMIT) -> int:
        return len(self._scan(c.PURGE_REQUESTS, {"cutoff": self._when(older_than, "time")}, limit))

    def purge_tombstones(self, older_than: datetime, limit: int = PURGE_LIMIT) -> int:
        return len(
            self._scan(c.PURGE_TOMBSTONES, {"cutoff": self._when(older_than, "time")}, limit)
        )

    def purge_expired(self, now: datetime, limit: int) -> Purged:
        params = {"now": self._when(now, "now")}
        rows = self._ordered(c.PEEK_EXPIRED, c.PURGE_EXPIRED, params, limit, ("workflow_id",))
        return _merged_purges(rows)

    def delete_workflow(self, workflow_id: str, revision: int | None = None) -> Purged:
        doc = json.dumps([{"workflow_id": workflow_id, "revision": revision, "n": 0}])
        with self._writing() as conn:
            rows = conn.execute(
                CALL_ROWS, rows_params(workflow_id, [c.DELETE_WORKFLOW], [doc], ALL)
            ).fetchall()
            answers = [row for (row,) in rows]
            if any(a.get("misrouted") for a in answers):
                raise StorageUnavailable("the instance's shard is moving between nodes; retry")
            purged = _merged_purges(answers)
            if not purged.workflow_ids:
                raise self._removal_failure(conn, workflow_id, revision)
        return purged

    def retention_counts(
        self, now: datetime, requests_before: datetime, cap: int = COUNT_CAP
    ) -> RetentionCounts:
        params = {
            "now": self._when(now, "now"),
            "cutoff": self._when(requests_before, "time"),
            "cap": cap,
        }
        rows = self._scan(c.RETENTION_COUNTS, params, ALL)

        def earliest(key: str) -> datetime | None:
            found = [_iso(r[key]) for r in rows if r.get(key) is not None]
            return min(found) if found else None

        return RetentionCounts(
            overdue_instances=min(cap, sum(int(r["instances"]) for r in rows)),
            oldest_instance_due=earliest("oldest_instance"),
            overdue_requests=min(cap, sum(int(r["requests"]) for r in rows)),
            oldest_request_time=earliest("oldest_request"),
        )


def rows_params(
    route: str, statements: list[str], batches: list[str], wanted: int
) -> tuple[str, str, str, str, int]:
    """A shard-rows call's parameters: the statements and the batches (each already a
    JSON text) as one JSON text each, which the coordinator forwards without parsing."""
    return (route, json.dumps(statements), "[" + ",".join(batches) + "]", c.DETAIL, wanted)


def _merged_purges(rows: list[dict[str, Any]]) -> Purged:
    ids: list[str] = []
    counts = dict.fromkeys(("history", "timers", "tasks", "requests"), 0)
    for r in rows:
        if "ids" not in r:
            continue
        ids.extend(r["ids"] or ())
        for key in counts:
            counts[key] += int(r[key])
    removed = tuple(sorted(ids))
    return Purged(
        workflow_ids=removed,
        rows={
            "workflow_instances": len(removed),
            "workflow_history": counts["history"],
            "workflow_timers": counts["timers"],
            "workflow_tasks": counts["tasks"],
            "workflow_requests": counts["requests"],
        },
    )
