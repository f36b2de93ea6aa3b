"""Batch operations: one operation (cancel, signal, reset, retry, migrate, pause, unpause,
delete) applied to every instance a filter matches, as a durable job.

A start matches the instances once, with ListWorkflows' own query, filter and view (a
scoped caller's batch holds only what that caller could list), and stores them as the
batch's items; the runner of some replica (app/batch_runner.py) then works through them.
The batch keeps what it was asked as plain data (the operation, its definition, filter,
reason and rate), who asked (history records each item's step as that caller's) and the
caller's view, under which its items are applied.

A start naming the id of a batch that exists answers that batch when it was asked the
same, and is refused when it was asked something else: a caller retrying its start never
starts two.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from statewrightd import errors, visibility
from statewrightd.app.reads import Reads, WorkflowFilter
from statewrightd.app.storage import Storage
from statewrightd.context import current_actor
from statewrightd.engine.clock import Clock
from statewrightd.reasons import Reason
from statewrightd.store.records import BatchItemFailure, BatchRecord
from statewrightd.store.repository import Repository

RUNNING: Final = "RUNNING"
COMPLETED: Final = "COMPLETED"
CANCELLED: Final = "CANCELLED"
# A dry run's batch is in no state: it was never saved.
DRY_RUN: Final = ""
STATES: Final = (RUNNING, COMPLETED, CANCELLED)

DEFAULT_RATE: Final = 50.0
MAX_RATE: Final = 1000.0
# The most instances one batch may hold: its items are written in the start's own
# transaction, and its matching reads each of them. A filter that matches more is refused;
# split the work (by id prefix, by status, by create_time).
MAX_BATCH_INSTANCES: Final = 100_000
SAMPLE_SIZE: Final = 20
BATCH_ID: Final = re.compile(r"^[A-Za-z0-9._-]{1,128}\Z")
# The operations a batch applies, each by the use case of one RPC of WorkflowService
# (the request's oneof field, and that RPC).
SINGLE_RPC: Final[Mapping[str, str]] = {
    "cancel": "CancelWorkflow",
    "signal": "SignalWorkflow",
    "reset": "ResetWorkflow",
    "retry": "RetryWorkflow",
    "migrate": "MigrateWorkflow",
    "pause": "PauseWorkflow",
    "unpause": "UnpauseWorkflow",
    "delete": "DeleteWorkflow",
}
OPERATIONS: Final = tuple(SINGLE_RPC)


def request_id(batch_id: str) -> str:
    """The request id of every step a batch makes: each instance's is applied once,
    however often its item is tried (by this replica or another after it died)."""
    return f"batch-{batch_id}"


def batch_rate(rate: float) -> float:
    """A batch's instances per second: zero means the default; refused above the most."""
    if math.isnan(rate) or rate < 0 or rate > MAX_RATE:
        raise errors.InvalidArgument(
            f"rate must be between 0 (meaning {DEFAULT_RATE:g}) and {MAX_RATE:g} instances "
            f"per second; got {rate:g}",
            reason=Reason.INVALID_FIELD,
            metadata={"field": "rate", "maximum": f"{MAX_RATE:g}"},
        )
    return rate or DEFAULT_RATE


def batch_not_found(batch_id: str) -> errors.NotFound:
    return errors.NotFound(
        f"batch {batch_id} not found",
        reason=Reason.BATCH_NOT_FOUND,
        metadata={"batch_id": batch_id},
    )


@dataclass(frozen=True, slots=True)
class BatchAsked:
    """A batch as a door asks it, checked there: ``operation`` is plain data, its kind
    (one of OPERATIONS) under ``kind`` and its arguments beside it."""

    batch_id: str  # "": one is made
    definition: str  # "": every definition
    filter: str
    operation: Mapping[str, Any]
    reason: str
    rate: float  # as batch_rate gives it
    dry_run: bool = False
    id_prefix: str = ""  # "": any id

    def fingerprint(self) -> str:
        """What makes two starts the same request (its id, and a dry run, aside)."""
        asked = {
            "definition": self.definition,
            "filter": self.filter,
            "operation": dict(self.operation),
            "reason": self.reason,
            "rate": self.rate,
        }
        if self.id_prefix:  # absent otherwise: batches started before it keep their print
            asked["id_prefix"] = self.id_prefix
        text = json.dumps(asked, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Started:
    """A batch as started (a dry run's: never saved, in no state), and its first items."""

    batch: BatchRecord
    sample: list[str]


@dataclass(kw_only=True)
class Batches:
    repo: Repository
    reads: Reads
    storage: Storage
    clock: Clock
    # Called once a batch is saved: this replica's runner looks for work at once.
    started: list[Callable[[], None]] = field(default_factory=list)
    # How long a cancel waits before it answers: a runner starts an item only within this
    # long of reading its batch RUNNING (app/batch_runner.py), so that after the answer no
    # replica starts one.
    settle: float = 0.0

    async def start(self, asked: BatchAsked) -> Started:
        if asked.definition:
            await self.reads.definition(asked.definition, None)  # NOT_FOUND when unknown
            if asked.operation["kind"] == "migrate":
                await self.reads.definition(asked.definition, int(asked.operation["to_version"]))
        if asked.batch_id and not asked.dry_run:
            existing = await self._get(asked.batch_id)
            if existing is not None:
                return self._same(existing, asked)
        which = WorkflowFilter(
            definition=asked.definition or None,
            filter=asked.filter,
            id_prefix=asked.id_prefix or None,
        )
        ids = await self.reads.matching_ids(which, MAX_BATCH_INSTANCES)
        if len(ids) > MAX_BATCH_INSTANCES:
            raise errors.FailedPrecondition(
                f"the filter matches more than {MAX_BATCH_INSTANCES:,} instances, the most one "
                "batch holds: narrow it (by definition, status, create_time or a search "
                "field) and start several batches",
                reason=Reason.BATCH_TOO_LARGE,
                metadata={"limit": str(MAX_BATCH_INSTANCES)},
            )
        sample = ids[:SAMPLE_SIZE]
        now = self.clock.now()
        record = BatchRecord(
            batch_id=asked.batch_id or uuid.uuid4().hex,
            document=self._document(asked, sample),
            state=DRY_RUN if asked.dry_run else RUNNING,
            matched=len(ids),
            done=0,
            failed=0,
            version=0 if asked.dry_run else 1,
            create_time=now,
            update_time=now,
        )
        if asked.dry_run:
            return Started(record, sample)
        repo = self.repo
        try:
            saved = await self.storage.read(lambda: repo.insert_batch(record, ids))
        except errors.RecordExists:
            # Another start of the same id got there first (a client's retry, most often).
            existing = await self._get(record.batch_id)
            if existing is None:
                raise
            return self._same(existing, asked)
        for wake in self.started:
            wake()
        return Started(saved, sample)

    def _document(self, asked: BatchAsked, sample: list[str]) -> dict[str, Any]:
        view = visibility.current()
        return {
            "operation": dict(asked.operation),
            "definition": asked.definition,
            "filter": asked.filter,
            "id_prefix": asked.id_prefix,
            "reason": asked.reason,
            "rate": asked.rate,
            "actor": current_actor(),
            "view": None if view is None else list(view.patterns),
            "sample": sample,
            "fingerprint": asked.fingerprint(),
        }

    @staticmethod
    def _same(existing: BatchRecord, asked: BatchAsked) -> Started:
        if existing.document.get("fingerprint") != asked.fingerprint():
            raise errors.AlreadyExists(
                f"batch {existing.batch_id} exists and was started with another request; "
                "name a new batch_id for a new batch",
                reason=Reason.BATCH_EXISTS,
                metadata={"batch_id": existing.batch_id},
            )
        return Started(existing, list(existing.document.get("sample", [])))

    async def _get(self, batch_id: str) -> BatchRecord | None:
        repo = self.repo
        found: BatchRecord | None = await self.storage.read(lambda: repo.get_batch(batch_id))
        return found

    async def get(self, batch_id: str) -> BatchRecord:
        found = await self._get(batch_id)
        if found is None:
            raise batch_not_found(batch_id)
        return found

    async def failures(
        self, batch_id: str, after: str, limit: int
    ) -> tuple[list[BatchItemFailure], str]:
        """A page of the batch's failed items past workflow id ``after``, and the id the
        next page starts after ("": this is the last)."""
        repo = self.repo
        found: list[BatchItemFailure] = await self.storage.read(
            lambda: repo.batch_failures(batch_id, after, limit + 1)
        )
        page = found[:limit]
        return page, page[-1].workflow_id if len(found) > limit else ""

    async def list(
        self, after: tuple[datetime, str] | None, limit: int, state: str | None
    ) -> tuple[list[BatchRecord], tuple[datetime, str] | None]:
        """A page of batches, newest first, and where the next page starts (None: none)."""
        repo = self.repo
        found: list[BatchRecord] = await self.storage.read(
            lambda: repo.list_batches(after, limit + 1, state)
        )
        page = found[:limit]
        last = page[-1] if len(found) > limit else None
        return page, None if last is None else (last.create_time, last.batch_id)

    async def cancel(self, batch_id: str, reason: str) -> BatchRecord:
        """Stop a running batch: once this answers, no replica starts on another of its
        instances. A cancelled batch is answered as it is; a completed one is refused."""
        batch = await self.get(batch_id)
        if batch.state == RUNNING:
            document = {**batch.document, "cancel_reason": reason, "cancelled_by": current_actor()}
            repo, now = self.repo, self.clock.now()
            found = await self.storage.read(lambda: repo.cancel_batch(batch_id, document, now))
            if found is None:
                raise batch_not_found(batch_id)
            if found.state == CANCELLED:
                await asyncio.sleep(self.settle)
            batch = found
        if batch.state == COMPLETED:
            raise errors.FailedPrecondition(
                f"batch {batch_id} has completed: every instance of it was tried; there is "
                "nothing left to cancel",
                reason=Reason.BATCH_FINISHED,
                metadata={"batch_id": batch_id},
            )
        return batch
