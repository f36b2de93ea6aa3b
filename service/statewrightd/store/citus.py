"""Citus backend: PostgreSQL distributed by workflow id, every step on one node.

The schema is the PostgreSQL backend's, distributed (see citus_layout); reads of one
instance are Citus router queries through the coordinator, as they are. What changes is
everything that would otherwise span shards, each sent to the node that holds the rows
as one call of a shard function (migrations/citus) that Citus delegates to that node:

- A group-commit batch is grouped by the node that owns each instance's shard
  (citus_routing); each group is one call, one round trip, one local transaction with a
  one-phase commit, whose per-row compare-and-swap answers are those of PostgreSQL.
  Calls are made outside any transaction block (autocommit): only so does Citus delegate
  them. Rows the node does not hold (a shard moved) are answered "misrouted", not
  written, and sent again once the shard map is read anew.
- Claims of due timers, tasks and expired leases, the purges and the counts run on each
  node's shard groups one by one (citus_scans).
- Step hints are NOTIFYed on the coordinator after the calls, where every replica
  listens (LISTEN/NOTIFY is local to a node).

A call whose connection is lost is read back like a lost COMMIT on PostgreSQL, once no
process of it is left on any node and in-doubt two-phase commits have been resolved.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
import psycopg.errors
from psycopg_pool import PoolTimeout

from statewrightd.errors import RecordNotFound, StorageUnavailable, StoreError
from statewrightd.reasons import Reason
from statewrightd.store import citus_layout, failures
from statewrightd.store import sql_citus as c
from statewrightd.store import sql_postgres as q
from statewrightd.store.citus_errors import node_lost, node_never_reached
from statewrightd.store.citus_flow import CitusFlow
from statewrightd.store.citus_routing import ShardMap
from statewrightd.store.citus_scans import ALL, CALL_ROWS, rows_params
from statewrightd.store.codec import EncodedOp
from statewrightd.store.notifications import step_hints_payloads, task_queues_payload
from statewrightd.store.outcomes import resolve_each, unknown
from statewrightd.store.pg_pool import RETRYABLE, Conn
from statewrightd.store.postgres import (
    _CREATE_ROW,
    _SAVE_ROW,
    _TASK_FIELDS,
    _TIMER_FIELDS,
    _CommitLost,
    _read_back,
    _rows_json,
)
from statewrightd.store.records import (
    Create,
    DefinitionRecord,
    InstanceRecord,
    Operation,
    SearchValues,
    target_of,
)
from statewrightd.store.schema import latest_version

_log = logging.getLogger(__name__)

# A batch's misrouted rows are sent again this many times, each after the shard map is
# read anew; what is still misrouted then (shards moving back and forth) is refused as
# not written.
_ROUTE_ATTEMPTS = 3
_GPID = "SELECT citus_backend_gpid()"
# Every process of a distributed statement, on every node, carries its global pid.
_GPID_ALIVE = "SELECT nodeid, pid FROM citus_stat_activity WHERE global_pid = %s"
_TERMINATE_ON_NODE = """
SELECT success FROM master_run_on_worker(
    ARRAY[(SELECT nodename FROM pg_dist_node WHERE nodeid = %s)],
    ARRAY[(SELECT nodeport FROM pg_dist_node WHERE nodeid = %s)],
    ARRAY[format('SELECT pg_terminate_backend(%%s)', %s::integer)], false)
"""
# Two-phase commits the coordinator started and did not finish are committed or rolled
# back now, rather than by the maintenance daemon a minute later: a read-back before
# that could see the pre-state of a transaction that then commits.
_RECOVER_2PC = "SELECT recover_prepared_transactions()"
_GRACE_S = 1.0


@dataclass(frozen=True, slots=True)
class NodeCall:
    """One node's share of a batch: its operations (their positions in the batch) and
    the statements that apply them, part after part, each with its rows as JSON."""

    group: int
    route: str  # a workflow id of the group: the call is delegated to its node
    positions: list[int]
    statements: list[str]
    batches: list[str]


def plan_calls(
    encoded: Sequence[EncodedOp], positions: Iterable[int], shards: ShardMap
) -> list[NodeCall]:
    """The calls that apply ``encoded[i]`` for every ``i`` in ``positions``, one per node.

    Within a call, the k-th step of an instance goes in the k-th wave, so that each
    statement touches an instance once and a later step sees its earlier one. A wave's
    saves lock their rows first, in one order, so that two replicas' batches cannot
    deadlock.
    """
    by_group: dict[int, list[int]] = {}
    for i in positions:
        group = shards.group_of(target_of(encoded[i].op).workflow_id)
        by_group.setdefault(group, []).append(i)
    calls = []
    for group, members in sorted(by_group.items()):
        statements: list[str] = []
        batches: list[str] = []
        for wave in _waves(encoded, members):
            creates = [
                (n, encoded[members[n]]) for n in wave if isinstance(encoded[members[n]].op, Create)
            ]
            saves = [
                (n, encoded[members[n]])
                for n in wave
                if not isinstance(encoded[members[n]].op, Create)
            ]
            if creates:
                kind = _work(e for _, e in creates)
                statements.append(c.CREATE_ROWS[kind])
                batches.append(_rows(creates, _CREATE_ROW, kind))
            if saves:
                ids = [{"workflow_id": target_of(e.op).workflow_id} for _, e in saves]
                statements.append(c.LOCK_ROWS)
                batches.append(json.dumps(ids, ensure_ascii=False))
                kind = _work(e for _, e in saves)
                statements.append(c.SAVE_ROWS[kind])
                batches.append(_rows(saves, _SAVE_ROW, kind))
        route = target_of(encoded[members[0]].op).workflow_id
        calls.append(NodeCall(group, route, members, statements, batches))
    return calls


def _waves(encoded: Sequence[EncodedOp], members: list[int]) -> list[list[int]]:
    """Positions within ``members`` by wave: an instance's k-th operation in wave k."""
    seen: dict[str, int] = {}
    waves: list[list[int]] = []
    for n, i in enumerate(members):
        wid = target_of(encoded[i].op).workflow_id
        k = seen.get(wid, 0)
        seen[wid] = k + 1
        if k == len(waves):
            waves.append([])
        waves[k].append(n)
    return waves


def _work(encoded: Iterable[EncodedOp]) -> tuple[bool, bool, bool]:
    timed = tasked = searched = False
    for e in encoded:
        timed = timed or bool(e.op.timers)
        tasked = tasked or bool(e.op.tasks)
        searched = searched or e.op.search is not None
    return timed, tasked, searched


def _rows(
    members: list[tuple[int, EncodedOp]], base: tuple[str, ...], kind: tuple[bool, bool, bool]
) -> str:
    fields = (
        base
        + (_TIMER_FIELDS if kind[0] else ())
        + (_TASK_FIELDS if kind[1] else ())
        + (("s_values",) if kind[2] else ())
        + q.REQUEST_FIELDS
        + ("n",)
    )
    return _rows_json(
        [{**e.params, "n": n, "s_values": search_json(e.op.search)} for n, e in members], fields
    )


def search_json(values: SearchValues | None) -> str | None:
    """A step's search values as the shard statements read them (None: unchanged)."""
    if values is None:
        return None
    rows = [{"field": v.field, "text": v.text, "number": v.number} for v in values]
    return json.dumps(rows, ensure_ascii=False)


_MISROUTED = object()


def call_results(
    call: NodeCall, encoded: Sequence[EncodedOp], answers: list[dict[str, Any]]
) -> list[Any]:
    """Each operation's outcome from a node call's answer rows: its record, the error that
    refused it, or ``_MISROUTED`` (not written: its shard is on another node)."""
    written: dict[int, dict[str, Any]] = {}
    detail: dict[int, dict[str, Any]] = {}
    misrouted: set[int] = set()
    for row in answers:
        n = row.get("n")
        if n is None:
            continue  # a lock part's count
        if row.get("misrouted"):
            misrouted.add(n)
        elif "changed" in row:
            written[n] = row
        else:
            detail[n] = row
    out: list[Any] = []
    for n, i in enumerate(call.positions):
        op = encoded[i].op
        if n in misrouted:
            out.append(_MISROUTED)
            continue
        mine = written.get(n)
        if mine is None:
            out.append(StoreError("the node answered nothing for a row", reason=Reason.STORE_ERROR))
        elif mine["changed"]:
            out.append(target_of(op))
        else:
            found = detail.get(n, {})
            task = None
            if found.get("task_status") is not None:
                task = (found["task_status"], found.get("task_token"))
            out.append(
                failures.refused(
                    op,
                    request_free=bool(mine["free"]),
                    actual_revision=found.get("revision"),
                    task=task,
                )
            )
    return out


class CitusRepository(CitusFlow):
    """Writes as node calls, their lost answers read back, and the Citus schema's check
    (the shard map, scans and claims are CitusScans', limited queues' CitusFlow's)."""

    # A step's hint is NOTIFYed after its node call, not inside its transaction: a process
    # that dies in between leaves the step unhinted, and other replicas' watchers learn
    # of it only from their periodic look at history.
    hints_after_commit = True

    def _before_open(self) -> None:
        super()._before_open()
        self._citus_version = latest_version("citus")
        # Global pids (node id and pid) of this pool's coordinator processes.
        self._gpids: dict[int, int] = {}

    def _configure(self, conn: Conn) -> None:
        super()._configure(conn)
        row = conn.execute(_GPID).fetchone()
        if row is not None:
            self._gpids[conn.info.backend_pid] = int(row[0])

    # -- search values -----------------------------------------------------------------

    def replace_search(self, items: Sequence[tuple[str, int, SearchValues]]) -> int:
        """Each instance's search rows replaced on its node, while it is still at the
        revision its values were computed from; one call per node, each one local
        transaction."""
        docs = [
            {"workflow_id": w, "revision": revision, "s_values": json.loads(search_json(v) or "[]")}
            for w, revision, v in items
        ]
        if not docs:
            return 0
        return sum(1 for row in self._by_node(c.REPLACE_SEARCH, docs) if row.get("replaced"))

    # -- writes ----------------------------------------------------------------------

    def _write(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        results: list[Any] = [None] * len(encoded)
        todo: list[int] = list(range(len(encoded)))
        shards: ShardMap | None = None
        for _attempt in range(_ROUTE_ATTEMPTS):
            try:
                shards = self._shards(stale=shards)
                calls = plan_calls(encoded, todo, shards)
            except StorageUnavailable as exc:
                return _fill(results, exc)
            todo = []
            for call, outcome in self._run_calls(encoded, calls):
                for i, result in zip(call.positions, outcome, strict=True):
                    if result is _MISROUTED:
                        todo.append(i)
                    else:
                        results[i] = result
            if not todo:
                break
        moving = StorageUnavailable(
            "the instance's shard is moving between nodes; nothing was written, retry"
        )
        return _fill(results, moving)

    def _run_calls(
        self, encoded: list[EncodedOp], calls: list[NodeCall]
    ) -> list[tuple[NodeCall, list[Any]]]:
        """Each call's outcomes, the calls one after the other on one connection (each
        its own transaction), then the hints of what they wrote."""
        done: list[tuple[NodeCall, list[Any]]] = []
        try:
            with self._pooled(self._pool_timeout) as conn:
                for k, call in enumerate(calls):
                    try:
                        done.append((call, self._call(conn, encoded, call)))
                    except _CommitLost as lost:
                        sub = [encoded[i] for i in call.positions]
                        done.append((call, self._reconcile(sub, lost, _written(encoded, done))))
                        gone = StorageUnavailable("database unavailable: connection lost")
                        done.extend(
                            (later, [gone] * len(later.positions)) for later in calls[k + 1 :]
                        )
                        return done
                self._notify_written(conn, encoded, done)
        except PoolTimeout as exc:
            return self._fail_rest(
                calls, done, StorageUnavailable(f"no database connection: {exc}")
            )
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            # Lost after the calls, while hinting: what they wrote stands, hints are
            # allowed to be lost.
            if len(done) == len(calls):
                _log.info("step hints not sent: %s", exc)
                return done
            return self._fail_rest(calls, done, StorageUnavailable(f"database unavailable: {exc}"))
        return done

    @staticmethod
    def _fail_rest(
        calls: list[NodeCall], done: list[tuple[NodeCall, list[Any]]], error: StoreError
    ) -> list[tuple[NodeCall, list[Any]]]:
        return done + [(call, [error] * len(call.positions)) for call in calls[len(done) :]]

    def _call(self, conn: Conn, encoded: list[EncodedOp], call: NodeCall) -> list[Any]:
        """One node call, retried when the node's transaction deadlocked (nothing was
        written); a row the database refuses fails alone."""
        params = rows_params(call.route, call.statements, call.batches, ALL)
        # Read while the connection is alive: its global pid names the call's processes.
        gpid = self._gpids.get(conn.info.backend_pid)
        for attempt in range(1, 4):
            try:
                answers = [row[0] for row in conn.execute(CALL_ROWS, params).fetchall()]
                return call_results(call, encoded, answers)
            except RETRYABLE as exc:
                if attempt == 3:
                    return [StorageUnavailable(f"transaction kept failing: {exc}")] * len(
                        call.positions
                    )
            except psycopg.Error as exc:
                if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and (
                    not node_lost(exc)
                ):
                    return self._refused(conn, encoded, call, exc)
                if not conn.broken and node_never_reached(exc):
                    # The coordinator could not open a connection to the call's node:
                    # nothing of the call was sent, nothing of it was written.
                    error = StorageUnavailable(f"database unavailable: {exc}")
                    return [error] * len(call.positions)
                # Either our connection to the coordinator broke, or the coordinator's to
                # the node broke mid-call ("connection not open"): the node may have
                # committed before it went away (a worker restarted right after its
                # commit, or its prepared transaction recovered later). Read back.
                raise _CommitLost(gpid, []) from exc
        raise AssertionError("unreachable")

    def _refused(
        self, conn: Conn, encoded: list[EncodedOp], call: NodeCall, exc: psycopg.Error
    ) -> list[Any]:
        if len(call.positions) == 1:
            return [StoreError(f"database rejected the write: {exc}", reason=Reason.STORE_ERROR)]
        # A row the database refuses must not fail its neighbours: each alone.
        shards = self._shards()
        return [
            self._call(conn, encoded, plan_calls(encoded, [i], shards)[0])[0]
            for i in call.positions
        ]

    def _reconcile(
        self, encoded: list[EncodedOp], lost: _CommitLost, earlier: Sequence[Any] = ()
    ) -> list[InstanceRecord | StoreError]:
        """A node call whose answer was lost: its rows read back, each on its own (its
        answers were lost with the rest, so no row's refusal is known beforehand), once
        none of its processes is left on any node. ``earlier``: what the batch's calls
        before it wrote, whose hints were to follow the batch."""
        ops = [e.op for e in encoded]
        try:
            with psycopg.connect(
                self._url, autocommit=True, connect_timeout=int(self._connect_timeout)
            ) as conn:
                results: list[InstanceRecord | StoreError]
                if lost.backend_pid is None or not self._backend_gone(conn, lost.backend_pid):
                    results = [unknown(op, lost.backend_pid) for op in ops]
                else:
                    results = resolve_each(ops, *_read_back(conn, ops))
                # A node call's hints go after it, not in its transaction (as on
                # PostgreSQL): those of the calls before the lost one, and of its steps
                # found applied, go now, or watchers on other servers would learn of
                # these steps only when they next poll.
                applied = [
                    op for op, r in zip(ops, results, strict=True) if isinstance(r, InstanceRecord)
                ]
                try:
                    self._hint(conn, [*earlier, *applied])
                except psycopg.Error as exc:
                    _log.info("step hints not sent: %s", exc)
                return results
        except psycopg.Error:
            return [unknown(op, lost.backend_pid) for op in ops]

    def resolve_outcome(
        self, ops: Sequence[Operation], *, backend_pids: Sequence[int] = ()
    ) -> list[InstanceRecord | StoreError]:
        """As on PostgreSQL, and a step found applied sends its hint now: on Citus the
        hint was not part of the step's transaction, so it was lost with the answer."""
        results = super().resolve_outcome(ops, backend_pids=backend_pids)
        applied = [op for op, r in zip(ops, results, strict=True) if isinstance(r, InstanceRecord)]
        if applied:
            try:
                with self._pooled(self._pool_timeout) as conn:
                    self._hint(conn, applied)
            except (PoolTimeout, psycopg.Error) as exc:
                _log.info("step hints not sent: %s", exc)
        return results

    def _notify_written(
        self, conn: Conn, encoded: list[EncodedOp], done: list[tuple[NodeCall, list[Any]]]
    ) -> None:
        self._hint(conn, _written(encoded, done))

    @staticmethod
    def _hint(conn: Conn, written: list[Any]) -> None:
        for payload in step_hints_payloads(target_of(op) for op in written):
            conn.execute(q.NOTIFY_STEPS, (q.STEPS_CHANNEL, payload))
        queues = [op.tasks.schedule.queue for op in written if op.tasks.schedule is not None]
        if queues:
            conn.execute(q.NOTIFY_STEPS, (q.TASKS_CHANNEL, task_queues_payload(queues)))

    # -- unknown outcomes ------------------------------------------------------------

    def _backend_gone(self, conn: Conn, pid: int) -> bool:
        """``pid`` is a global pid here: the call's processes on the coordinator and on
        the node it was delegated to all carry it."""
        deadline = time.monotonic() + _GRACE_S
        while time.monotonic() < deadline:
            if not conn.execute(_GPID_ALIVE, (pid,)).fetchall():
                conn.execute(_RECOVER_2PC)
                return True
            time.sleep(0.02)
        for nodeid, node_pid in conn.execute(_GPID_ALIVE, (pid,)).fetchall():
            conn.execute(_TERMINATE_ON_NODE, (nodeid, nodeid, node_pid))
        if conn.execute(_GPID_ALIVE, (pid,)).fetchall():
            return False
        conn.execute(_RECOVER_2PC)
        return True

    # -- definitions -----------------------------------------------------------------

    def put_definition(self, rec: DefinitionRecord) -> DefinitionRecord:
        """Read first: a definition recorded already needs no write, and a write to a
        reference table reaches every node (in two phases), so that a server starts while
        a worker is down unless it brings a definition version new to the database."""
        try:
            stored = self.get_definition(rec.name, rec.version)
        except RecordNotFound:
            return super().put_definition(rec)
        return failures.same_definition_or_raise(stored, rec)

    # -- lifecycle -------------------------------------------------------------------

    def ping(self) -> None:
        super().ping()
        try:
            with self._pooled(min(self._pool_timeout, 5.0), probe=True) as conn:
                version = citus_layout.citus_schema_version(conn)
        except (psycopg.Error, PoolTimeout) as exc:
            raise StorageUnavailable(f"database unavailable: {exc}") from exc
        if version < self._citus_version:
            raise failures.schema_behind(version, self._citus_version)


def _written(encoded: list[EncodedOp], done: list[tuple[NodeCall, list[Any]]]) -> list[Any]:
    """The operations of ``done`` that were applied."""
    return [
        encoded[i].op
        for call, outcome in done
        for i, result in zip(call.positions, outcome, strict=True)
        if isinstance(result, InstanceRecord)
    ]


def _fill(results: list[Any], error: StoreError) -> list[InstanceRecord | StoreError]:
    return [error if r is None else r for r in results]
