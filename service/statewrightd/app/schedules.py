"""What callers ask of schedules: create, read, change, pause, trigger, backfill.

A schedule is one stored document; every change here reads it, changes it and writes it
back naming the version it read, and tries again (a few times) when a fire of the
schedule's firer wrote in between. A change that makes the schedule due sooner pokes
this replica's firer; other replicas find it at their next round.

Triggering fires now, through the same rules as a scheduled fire (schedule_spec.decide
and record), with the instance id derived from the trigger's time.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from statewrightd import errors
from statewrightd.app.storage import Reader
from statewrightd.app.workflows import Workflows
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.domain import SCHEDULE_ACTOR, TERMINAL
from statewrightd.engine import schedule_spec as spec
from statewrightd.engine.clock import Clock
from statewrightd.engine.commands import CancelCommand
from statewrightd.engine.observer import StepObserver, Unobserved
from statewrightd.engine.schedules import start_command, with_trace
from statewrightd.reasons import Reason
from statewrightd.store.records import ScheduleRecord
from statewrightd.store.repository import Repository

RETRIES = 5
MAX_BACKFILL_FIRES = 100_000


@dataclass(frozen=True, slots=True)
class TriggerResult:
    candidate: spec.Candidate
    outcome: str
    reason: str
    actual: datetime


def not_found(schedule_id: str) -> errors.NotFound:
    return errors.NotFound(
        f"schedule {schedule_id} not found",
        reason=Reason.SCHEDULE_NOT_FOUND,
        metadata={"schedule_id": schedule_id},
    )


@dataclass(kw_only=True)
class Schedules:
    repo: Repository
    registry: DefinitionRegistry
    read: Reader
    clock: Clock
    workflows: Workflows
    poke: Callable[[], None]
    # Where the caller's trace context comes from: a schedule keeps that of the call that
    # created or last changed it, and each fire's start is linked to it.
    observer: StepObserver = field(default_factory=Unobserved)

    async def create(
        self, schedule_id: str, document: dict[str, Any], *, actor: str, source: str = "api"
    ) -> ScheduleRecord:
        spec.Spec.of(document["spec"])  # refused before anything is written
        spec.input_expressions(document["action"])
        now = self.clock.now()
        doc = {
            **document,
            "source": source,
            "revision": 1,
            "cursor": spec.iso(now),
            "counts": {"fires": 0, "skips": 0, "misses": 0},
            "recent": [],
            "backfills": [],
            "buffered": None,
            "last_workflow_id": None,
            "created_by": actor,
        }
        doc = with_trace(doc, self.observer.caller())
        look = spec.next_look(schedule_id, doc, now)
        record: ScheduleRecord = await self.read(
            lambda: self.repo.insert_schedule(schedule_id, doc, look, now)
        )
        self._poke()
        return record

    async def get(self, schedule_id: str) -> ScheduleRecord:
        found: ScheduleRecord | None = await self.read(lambda: self.repo.get_schedule(schedule_id))
        if found is None:
            raise not_found(schedule_id)
        return found

    async def list(self, page_size: int, page_token: str) -> tuple[list[ScheduleRecord], str]:
        found: list[ScheduleRecord] = await self.read(
            lambda: self.repo.list_schedules(page_token, page_size + 1)
        )
        items = found[:page_size]
        return items, items[-1].schedule_id if len(found) > page_size else ""

    async def delete(self, schedule_id: str) -> None:
        if not await self.read(lambda: self.repo.delete_schedule(schedule_id)):
            raise not_found(schedule_id)

    async def update(
        self,
        schedule_id: str,
        changes: dict[str, Any],
        expected_revision: int,
        *,
        by_api: bool = True,
    ) -> ScheduleRecord:
        """Replace the spec, action and policies. ``by_api``: a caller's change, which
        its definitions file no longer overrides (schedule_files)."""
        spec.Spec.of(changes["spec"])
        if "action" in changes:
            spec.input_expressions(changes["action"])
        caller = self.observer.caller()  # read here, in the caller's task

        def change(doc: dict[str, Any]) -> dict[str, Any]:
            if expected_revision and int(doc.get("revision", 0)) != expected_revision:
                raise errors.Aborted(
                    f"schedule {schedule_id} is at revision {doc.get('revision')}, "
                    f"not {expected_revision}",
                    reason=Reason.SCHEDULE_CHANGED,
                    metadata={"schedule_id": schedule_id, "revision": str(doc.get("revision"))},
                )
            changed = {**doc, **changes, "revision": int(doc.get("revision", 0)) + 1}
            changed = with_trace(changed, caller)
            if by_api:
                changed["changed_by_api"] = True
            return changed

        return await self._change(schedule_id, change)

    async def pause(self, schedule_id: str, paused: bool, note: str, actor: str) -> ScheduleRecord:
        now = self.clock.now()

        def change(doc: dict[str, Any]) -> dict[str, Any]:
            doc = {**doc, "revision": int(doc.get("revision", 0)) + 1}
            doc["state"] = {"paused": paused, "note": note, "actor": actor, "time": spec.iso(now)}
            if not paused:
                # What came due while paused does not run: the schedule resumes from now.
                doc["cursor"] = spec.iso(max(now, spec.parse_iso(doc["cursor"])))
            return doc

        return await self._change(schedule_id, change)

    async def backfill(self, schedule_id: str, start: datetime, end: datetime) -> int:
        now = self.clock.now()
        if end < start or end > now:
            raise errors.InvalidArgument(
                "a backfill's end is after its start and not in the future",
                reason=Reason.INVALID_FIELD,
                metadata={"field": "end_time"},
            )
        record = await self.get(schedule_id)
        times = spec.Spec.of(record.document["spec"])
        before = start - timedelta(microseconds=1)
        count = 0
        for t in times.times(before, MAX_BACKFILL_FIRES + 1):
            if t > end:
                break
            count += 1
        if count > MAX_BACKFILL_FIRES:
            raise errors.InvalidArgument(
                f"a backfill fires at most {MAX_BACKFILL_FIRES} times",
                reason=Reason.INVALID_FIELD,
                metadata={"field": "start_time"},
            )

        def change(doc: dict[str, Any]) -> dict[str, Any]:
            entry = {"cursor": spec.iso(before), "end": spec.iso(end)}
            return {**doc, "backfills": [*doc.get("backfills", []), entry]}

        if count:
            await self._change(schedule_id, change)
        return count

    async def trigger(
        self, schedule_id: str, *, force: bool, budget: float | None
    ) -> TriggerResult:
        now = self.clock.now()
        nominal = now.replace(microsecond=now.microsecond // 1000 * 1000)
        record = await self.get(schedule_id)
        doc = record.document
        candidate = spec.Candidate(
            "forced" if force else "trigger", nominal, spec.workflow_id_for(schedule_id, nominal)
        )
        last = doc.get("last_workflow_id")
        last_open = bool(last) and await self.read(lambda: _open(self.repo, str(last)))
        decision = spec.decide(doc, candidate, exists=False, last_open=last_open)
        outcome, reason = decision, ""
        if decision == "cancel":
            cancel = CancelCommand(
                workflow_id=str(last),
                reason=f"schedule {schedule_id}: overlap policy CANCEL_OTHER",
                actor=SCHEDULE_ACTOR,
            )
            # One that ended meanwhile refuses the cancel: the fire starts all the same.
            with contextlib.suppress(errors.StatewrightError):
                await self.workflows.step(cancel, budget)
            outcome = spec.STARTED
        if outcome == spec.STARTED:
            try:
                command = await self.read(
                    lambda: start_command(self.registry, schedule_id, doc, candidate)
                )
                await self.workflows.step(command, budget)
            except errors.StatewrightError as exc:
                outcome, reason = spec.FAILED, exc.reason or type(exc).__name__
        elif outcome == spec.SKIPPED:
            reason = Reason.SCHEDULE_OVERLAP
        actual = self.clock.now()

        def change(current: dict[str, Any]) -> dict[str, Any]:
            return spec.record(schedule_id, current, candidate, outcome, actual, reason=reason)

        await self._change(schedule_id, change)
        return TriggerResult(candidate, outcome, reason, actual)

    # -- read, change, write ---------------------------------------------------------

    async def _change(
        self, schedule_id: str, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> ScheduleRecord:
        for _ in range(RETRIES):
            record = await self.get(schedule_id)
            doc = change(record.document)
            now = self.clock.now()
            look = spec.next_look(schedule_id, doc, now)
            put = functools.partial(
                self.repo.put_schedule, schedule_id, record.version, doc, look, now
            )
            written: ScheduleRecord | None = await self.read(put)
            if written is not None:
                self._poke()
                return written
        raise errors.Aborted(
            f"schedule {schedule_id} kept changing; try again",
            reason=Reason.SCHEDULE_CHANGED,
            metadata={"schedule_id": schedule_id},
        )

    def _poke(self) -> None:
        with contextlib.suppress(errors.Unavailable):  # stopping: nothing more fires here
            self.poke()


def _open(repo: Repository, workflow_id: str) -> bool:
    try:
        return repo.load(workflow_id).status not in TERMINAL
    except errors.RecordNotFound:
        return False
