"""Batch operations on SQLite, PostgreSQL and Citus (BatchStore of store/repository.py).

A part of ``SqlRepository``, kept in a class of its own as the schedules are: a batch's
row, and one row per instance it matched. The writes that belong together (a batch and
its items; items' ends and the counts) are one transaction each."""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any, ClassVar

from statewrightd.store import failures
from statewrightd.store.batch_purge import doomed_batches
from statewrightd.store.codec import check_time, dumps
from statewrightd.store.records import BatchItemEnd, BatchItemFailure, BatchRecord, Purged
from statewrightd.store.rows import Rows
from statewrightd.store.sql_batches import BatchStatements


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _ends(ends: Sequence[BatchItemEnd]) -> str:
    """The ends as the statement takes them, each item's first only: an item ends once."""
    first: dict[str, dict[str, Any]] = {}
    for end in ends:
        first.setdefault(
            end.workflow_id,
            {
                "workflow_id": end.workflow_id,
                "failed": end.failed,
                "code": end.code if end.failed else None,
                "reason": end.reason if end.failed else None,
                "message": end.message if end.failed else None,
            },
        )
    return _text(list(first.values()))


class SqlBatches:
    BATCH_SQL: ClassVar[BatchStatements]
    ROWS: ClassVar[Rows]
    # Whether the connections ``_writing`` hands out commit each statement on its own
    # (Citus's, so that node calls are delegated): the statements of one batch write then
    # run in a transaction block of their own.
    AUTOCOMMIT: ClassVar[bool] = False

    @abstractmethod
    def _reading(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _writing(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _writing_one(self) -> AbstractContextManager[Any]: ...

    @abstractmethod
    def _read_all(self, sql: str, params: Any = None) -> list[Any]: ...

    @contextmanager
    def _one_transaction(self) -> Iterator[Any]:
        with self._writing() as conn:
            if not self.AUTOCOMMIT:
                yield conn
                return
            with conn.transaction():
                yield conn

    def insert_batch(self, record: BatchRecord, workflow_ids: Sequence[str]) -> BatchRecord:
        ids = list(dict.fromkeys(workflow_ids))
        at = self._at(record.create_time, "create_time")
        params = {
            "batch_id": record.batch_id,
            "document": dumps(record.document, "batch document"),
            "state": "RUNNING" if ids else "COMPLETED",
            "matched": len(ids),
            "now": at,
            "end_time": None if ids else at,
        }
        with self._one_transaction() as conn:
            row = conn.execute(self.BATCH_SQL.insert, params).fetchone()
            if row is None:
                raise failures.batch_exists(record.batch_id)
            if ids:
                items = {"batch_id": record.batch_id, "ids": _text(ids)}
                conn.execute(self.BATCH_SQL.insert_items, items)
        return self.ROWS.batch(row)

    def get_batch(self, batch_id: str) -> BatchRecord | None:
        with self._reading() as conn:
            row = conn.execute(self.BATCH_SQL.get, {"batch_id": batch_id}).fetchone()
        return None if row is None else self.ROWS.batch(row)

    def list_batches(
        self, after: tuple[datetime, str] | None, limit: int, state: str | None = None
    ) -> list[BatchRecord]:
        params: dict[str, Any] = {"limit": limit, "state": state}
        if after is not None:
            params.update(after_time=self._at(after[0], "after"), after_id=after[1])
        sql = self.BATCH_SQL.listings[after is not None, state is not None]
        return [self.ROWS.batch(r) for r in self._read_all(sql, params)]

    def claim_batch(self, owner: str, now: datetime, until: datetime) -> BatchRecord | None:
        params = {"owner": owner, "now": self._at(now, "now"), "until": self._at(until, "until")}
        with self._writing_one() as conn:
            row = conn.execute(self.BATCH_SQL.claim, params).fetchone()
        return None if row is None else self.ROWS.batch(row)

    def pending_items(self, batch_id: str, after: str, limit: int) -> list[str]:
        params = {"batch_id": batch_id, "after": after, "limit": limit}
        return [str(r[0]) for r in self._read_all(self.BATCH_SQL.pending, params)]

    def end_items(
        self, batch_id: str, ends: Sequence[BatchItemEnd], now: datetime
    ) -> BatchRecord | None:
        params: dict[str, Any] = {"batch_id": batch_id, "now": self._at(now, "now")}
        with self._one_transaction() as conn:
            if conn.execute(self.BATCH_SQL.lock, params).fetchone() is None:
                return None
            ended: list[Any] = []
            if ends:
                params["ends"] = _ends(ends)
                ended = conn.execute(self.BATCH_SQL.end_items, params).fetchall()
            failed = sum(1 for r in ended if r[0])
            if ended:
                params.update(done=len(ended) - failed, failed=failed)
                row = conn.execute(self.BATCH_SQL.count_ends, params).fetchone()
            else:
                row = conn.execute(self.BATCH_SQL.get, params).fetchone()
        return self.ROWS.batch(row)

    def cancel_batch(
        self, batch_id: str, document: dict[str, Any], now: datetime
    ) -> BatchRecord | None:
        params = {
            "batch_id": batch_id,
            "document": dumps(document, "batch document"),
            "now": self._at(now, "now"),
        }
        with self._writing() as conn:
            row = conn.execute(self.BATCH_SQL.cancel, params).fetchone()
            if row is None:
                row = conn.execute(self.BATCH_SQL.get, params).fetchone()
        return None if row is None else self.ROWS.batch(row)

    def batch_failures(self, batch_id: str, after: str, limit: int) -> list[BatchItemFailure]:
        params = {"batch_id": batch_id, "after": after, "limit": limit}
        return [self.ROWS.batch_failure(r) for r in self._read_all(self.BATCH_SQL.failures, params)]

    def purge_batches(self, ended_before: datetime, limit: int) -> Purged:
        params = {"before": self._at(ended_before, "ended_before"), "limit": max(limit, 1)}
        with self._one_transaction() as conn:
            found = [
                (str(r[0]), int(r[1]))
                for r in conn.execute(self.BATCH_SQL.doomed, params).fetchall()
            ]
            ids = doomed_batches(found, limit)
            if not ids:
                return Purged()
            doomed = {"ids": _text(ids)}
            items = conn.execute(self.BATCH_SQL.purge_items, doomed).rowcount
            batches = conn.execute(self.BATCH_SQL.purge, doomed).rowcount
        return Purged(rows={"batch_operations": batches, "batch_items": items})

    def _at(self, value: datetime, where: str) -> Any:
        return self.ROWS.time_param(check_time(value, where))
