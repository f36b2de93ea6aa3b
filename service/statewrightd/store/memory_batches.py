"""Batch operations of the repository contract, held in memory (rows as SQLite keeps them)."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from statewrightd.store import failures
from statewrightd.store.batch_purge import doomed_batches
from statewrightd.store.codec import dumps
from statewrightd.store.memory_state import ROWS, MemoryState, stamp
from statewrightd.store.records import BatchItemEnd, BatchItemFailure, BatchRecord, Purged

# batch_id -> [the BATCH columns..., lease_owner, lease_until]
_Row = list[Any]
_STATE, _DONE, _FAILED, _VERSION, _UPDATE, _END, _OWNER, _UNTIL = 2, 4, 5, 6, 8, 9, 10, 11
# An ended item: (failed, code, reason, message, end time)
_End = tuple[bool, str, str, str, int]


class MemoryBatches(MemoryState):
    def __init__(self) -> None:
        super().__init__()
        self._batches: dict[str, _Row] = {}
        self._batch_items: dict[str, list[str]] = {}  # batch id -> its items' ids, sorted
        self._batch_ends: dict[str, dict[str, _End]] = {}  # batch id -> its ended items

    def insert_batch(self, record: BatchRecord, workflow_ids: Sequence[str]) -> BatchRecord:
        at = stamp(record.create_time, "create_time")
        ids = sorted(set(workflow_ids))
        with self._held():
            if record.batch_id in self._batches:
                raise failures.batch_exists(record.batch_id)
            state, end = ("RUNNING", None) if ids else ("COMPLETED", at)
            document = dumps(record.document, "batch document")
            row = [record.batch_id, document, state, len(ids), 0, 0, 1, at, at, end, None, None]
            self._batches[record.batch_id] = row
            self._batch_items[record.batch_id] = ids
            self._batch_ends[record.batch_id] = {}
            return ROWS.batch(row)

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        with self._held():
            row = self._batches.get(batch_id)
            return None if row is None else ROWS.batch(row)

    def list_batches(
        self, after: tuple[datetime, str] | None, limit: int, state: str | None = None
    ) -> list[BatchRecord]:
        position = None if after is None else (stamp(after[0], "after"), after[1])
        with self._held():
            found = [
                r
                for r in self._batches.values()
                if (state is None or r[_STATE] == state)
                and (position is None or (r[7], r[0]) < position)
            ]
            found.sort(key=lambda r: (r[7], r[0]), reverse=True)
            return [ROWS.batch(r) for r in found[: max(limit, 0)]]

    def claim_batch(self, owner: str, now: datetime, until: datetime) -> BatchRecord | None:
        at, held = stamp(now, "now"), stamp(until, "until")
        with self._held():
            free = [
                r
                for r in self._batches.values()
                if r[_STATE] == "RUNNING"
                and (r[_OWNER] == owner or r[_UNTIL] is None or r[_UNTIL] <= at)
            ]
            if not free:
                return None
            row = min(free, key=lambda r: (r[_OWNER] != owner, r[7], r[0]))
            row[_OWNER], row[_UNTIL] = owner, held
            return ROWS.batch(row)

    def pending_items(self, batch_id: str, after: str, limit: int) -> list[str]:
        with self._held():
            ids = self._batch_items.get(batch_id, [])
            ended = self._batch_ends.get(batch_id, {})
            found: list[str] = []
            for workflow_id in ids[bisect.bisect_right(ids, after) :]:
                if len(found) >= limit:
                    break
                if workflow_id not in ended:
                    found.append(workflow_id)
            return found

    def end_items(
        self, batch_id: str, ends: Sequence[BatchItemEnd], now: datetime
    ) -> BatchRecord | None:
        at = stamp(now, "now")
        with self._held():
            row = self._batches.get(batch_id)
            if row is None:
                return None
            ids, ended = self._batch_items[batch_id], self._batch_ends[batch_id]
            changed = 0
            for end in ends:
                i = bisect.bisect_left(ids, end.workflow_id)
                if i == len(ids) or ids[i] != end.workflow_id or end.workflow_id in ended:
                    continue
                ended[end.workflow_id] = (end.failed, end.code, end.reason, end.message, at)
                row[_FAILED if end.failed else _DONE] += 1
                changed += 1
            if changed:
                row[_VERSION] += 1
                row[_UPDATE] = at
                if row[_STATE] == "RUNNING" and row[_DONE] + row[_FAILED] >= row[3]:
                    row[_STATE], row[_END], row[_OWNER], row[_UNTIL] = "COMPLETED", at, None, None
            return ROWS.batch(row)

    def cancel_batch(
        self, batch_id: str, document: dict[str, Any], now: datetime
    ) -> BatchRecord | None:
        at = stamp(now, "now")
        with self._held():
            row = self._batches.get(batch_id)
            if row is None:
                return None
            if row[_STATE] == "RUNNING":
                row[1], row[_STATE] = dumps(document, "batch document"), "CANCELLED"
                row[_VERSION] += 1
                row[_UPDATE], row[_END], row[_OWNER], row[_UNTIL] = at, at, None, None
            return ROWS.batch(row)

    def batch_failures(self, batch_id: str, after: str, limit: int) -> list[BatchItemFailure]:
        with self._held():
            ended = self._batch_ends.get(batch_id, {})
            ids = sorted(w for w, e in ended.items() if e[0] and w > after)[: max(limit, 0)]
            return [ROWS.batch_failure([w, *ended[w][1:]]) for w in ids]

    def purge_batches(self, ended_before: datetime, limit: int) -> Purged:
        before = stamp(ended_before, "ended_before")
        with self._held():
            finished = sorted(
                (r[_END], r[0], r[3])
                for r in self._batches.values()
                if r[_STATE] != "RUNNING" and r[_END] is not None and r[_END] <= before
            )
            ids = doomed_batches([(batch_id, matched) for _, batch_id, matched in finished], limit)
            items = 0
            for batch_id in ids:
                del self._batches[batch_id]
                items += len(self._batch_items.pop(batch_id))
                del self._batch_ends[batch_id]
        if not ids:
            return Purged()
        return Purged(rows={"batch_operations": len(ids), "batch_items": items})
