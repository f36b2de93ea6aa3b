"""The ScheduleService servicer: schedules as resources, converted to and from the
schedule use cases' stored documents."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from google.protobuf import duration_pb2, timestamp_pb2
from statewright.v1 import schedule_service_pb2 as pb
from statewright.v1 import schedule_service_pb2_grpc as pb_grpc

from statewrightd import errors
from statewrightd.api.convert import dict_to_struct, struct_to_dict, timestamp
from statewrightd.api.door import Door
from statewrightd.api.handlers import Context, budget, unary
from statewrightd.api.requests import value_limits
from statewrightd.api.validation import page_size
from statewrightd.app.wiring import Application
from statewrightd.context import current_actor
from statewrightd.engine import schedule_spec as spec
from statewrightd.reasons import Reason
from statewrightd.store.records import ScheduleRecord

SCHEDULE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_OUTCOMES = {
    spec.STARTED: pb.SCHEDULE_ACTION_OUTCOME_STARTED,
    spec.SKIPPED: pb.SCHEDULE_ACTION_OUTCOME_SKIPPED,
    spec.MISSED: pb.SCHEDULE_ACTION_OUTCOME_MISSED,
    spec.BUFFERED: pb.SCHEDULE_ACTION_OUTCOME_BUFFERED,
    spec.FAILED: pb.SCHEDULE_ACTION_OUTCOME_FAILED,
}


def _invalid(message: str, field: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(message, reason=Reason.INVALID_FIELD, metadata={"field": field})


def schedule_id_of(name: str, field: str = "name") -> str:
    schedule_id = name.removeprefix("schedules/")
    if not name.startswith("schedules/") or not SCHEDULE_ID.fullmatch(schedule_id):
        raise _invalid(f"{field} must be schedules/{{schedule_id}}, got {name!r}", field)
    return schedule_id


def _seconds(d: duration_pb2.Duration) -> float:
    return d.seconds + d.nanos / 1e9


def _time(t: timestamp_pb2.Timestamp) -> datetime:
    return t.ToDatetime(tzinfo=UTC)


def document_of(schedule: pb.Schedule, limits: Any) -> dict[str, Any]:
    """The stored parts a caller sets: spec, action, policies (and the initial state)."""
    s, a, p = schedule.spec, schedule.action, schedule.policies
    if not a.definition:
        raise errors.InvalidArgument(
            "schedule.action.definition is required",
            reason=Reason.FIELD_REQUIRED,
            metadata={"field": "schedule.action.definition"},
        )
    catchup = _seconds(p.catchup_window) if p.HasField("catchup_window") else spec.DEFAULT_CATCHUP
    if not 0 <= catchup <= spec.MAX_CATCHUP:
        raise _invalid("catchup_window is at most 365 days", "schedule.policies.catchup_window")
    overlap = pb.OverlapPolicy.Name(p.overlap).removeprefix("OVERLAP_POLICY_")
    return {
        "spec": {
            "cron": list(s.cron_expressions),
            "interval": _seconds(s.interval) if s.HasField("interval") else None,
            "phase": _seconds(s.phase),
            "time_zone": s.time_zone,
            "jitter": _seconds(s.jitter),
            "start_time": spec.iso(_time(s.start_time)) if s.HasField("start_time") else None,
            "end_time": spec.iso(_time(s.end_time)) if s.HasField("end_time") else None,
        },
        "action": {
            "definition": a.definition,
            "version": a.version,
            "input": struct_to_dict(a.input, "schedule.action.input", limits),
            "input_expressions": dict(a.input_expressions),
        },
        "policies": {
            "overlap": "SKIP" if overlap == "UNSPECIFIED" else overlap,
            "catchup_window": catchup,
        },
    }


def _duration(seconds: float) -> duration_pb2.Duration:
    d = duration_pb2.Duration()
    d.FromNanoseconds(round(seconds * 1e9))
    return d


def action_pb(action: dict[str, Any]) -> pb.ScheduleActionResult:
    out = pb.ScheduleActionResult(
        workflow=f"workflows/{action['workflow_id']}" if action.get("workflow_id") else "",
        outcome=_OUTCOMES.get(action.get("outcome", ""), pb.SCHEDULE_ACTION_OUTCOME_UNSPECIFIED),
        reason=action.get("reason", ""),
    )
    out.nominal_time.CopyFrom(timestamp(spec.parse_iso(action["nominal"])))
    out.actual_time.CopyFrom(timestamp(spec.parse_iso(action["actual"])))
    return out


def schedule_pb(record: ScheduleRecord, now: datetime) -> pb.Schedule:
    doc = record.document
    s, a = doc["spec"], doc["action"]
    out = pb.Schedule(
        name=f"schedules/{record.schedule_id}",
        schedule_id=record.schedule_id,
        revision=int(doc.get("revision", 1)),
        source=str(doc.get("source", "api")),
    )
    out.spec.cron_expressions.extend(s.get("cron", []))
    if s.get("interval"):
        out.spec.interval.CopyFrom(_duration(float(s["interval"])))
        out.spec.phase.CopyFrom(_duration(float(s.get("phase") or 0)))
    out.spec.time_zone = s.get("time_zone") or ""
    if s.get("jitter"):
        out.spec.jitter.CopyFrom(_duration(float(s["jitter"])))
    if s.get("start_time"):
        out.spec.start_time.CopyFrom(timestamp(spec.parse_iso(s["start_time"])))
    if s.get("end_time"):
        out.spec.end_time.CopyFrom(timestamp(spec.parse_iso(s["end_time"])))
    out.action.definition = a["definition"]
    out.action.version = int(a.get("version") or 0)
    out.action.input.CopyFrom(dict_to_struct(a.get("input") or {}))
    out.action.input_expressions.update(a.get("input_expressions") or {})
    out.policies.overlap = pb.OverlapPolicy.Value("OVERLAP_POLICY_" + spec.overlap(doc))
    out.policies.catchup_window.CopyFrom(_duration(spec.catchup(doc)))
    state = doc.get("state", {})
    out.state.paused = bool(state.get("paused"))
    out.state.note = str(state.get("note", ""))
    info = out.info
    for t in spec.next_fire_times(doc, now):
        info.next_fire_times.append(timestamp(t))
    info.recent_actions.extend(action_pb(x) for x in doc.get("recent", []))
    counts = doc.get("counts", {})
    info.fires, info.skips, info.misses = (
        int(counts.get(k, 0)) for k in ("fires", "skips", "misses")
    )
    info.backfill_pending = _pending(doc)
    if doc.get("buffered"):
        info.buffered_time.CopyFrom(timestamp(spec.parse_iso(doc["buffered"])))
    out.create_time.CopyFrom(timestamp(record.create_time))
    out.update_time.CopyFrom(timestamp(record.update_time))
    return out


def _pending(doc: dict[str, Any]) -> int:
    backfills = doc.get("backfills", [])
    if not backfills:
        return 0
    times = spec.Spec.of(doc["spec"])
    total = 0
    for b in backfills:
        end = spec.parse_iso(b["end"])
        for t in times.times(spec.parse_iso(b["cursor"]), 100_000):
            if t > end:
                break
            total += 1
    return total


class ScheduleServicer(pb_grpc.ScheduleServiceServicer):
    def __init__(self, app: Application, door: Door) -> None:
        self._app = app
        self.door = door
        self._limits = value_limits(app.config.limits)

    def _now(self) -> datetime:
        return self._app.schedules.clock.now()

    @unary
    async def CreateSchedule(
        self, request: pb.CreateScheduleRequest, context: Context
    ) -> pb.CreateScheduleResponse:
        if not SCHEDULE_ID.fullmatch(request.schedule_id):
            raise _invalid("schedule_id must match [A-Za-z0-9][A-Za-z0-9._-]{0,99}", "schedule_id")
        doc = document_of(request.schedule, self._limits)
        doc["state"] = {
            "paused": request.schedule.state.paused,
            "note": request.schedule.state.note,
        }
        record = await self._app.schedules.create(request.schedule_id, doc, actor=current_actor())
        return pb.CreateScheduleResponse(schedule=schedule_pb(record, self._now()))

    @unary
    async def GetSchedule(
        self, request: pb.GetScheduleRequest, context: Context
    ) -> pb.GetScheduleResponse:
        record = await self._app.schedules.get(schedule_id_of(request.name))
        return pb.GetScheduleResponse(schedule=schedule_pb(record, self._now()))

    @unary
    async def ListSchedules(
        self, request: pb.ListSchedulesRequest, context: Context
    ) -> pb.ListSchedulesResponse:
        token = request.page_token
        if token and not SCHEDULE_ID.fullmatch(token):
            raise errors.InvalidArgument(
                "page_token is not one this server handed out",
                reason=Reason.INVALID_PAGE_TOKEN,
                metadata={"field": "page_token"},
            )
        items, next_token = await self._app.schedules.list(page_size(request.page_size), token)
        now = self._now()
        return pb.ListSchedulesResponse(
            schedules=[schedule_pb(r, now) for r in items], next_page_token=next_token
        )

    @unary
    async def UpdateSchedule(
        self, request: pb.UpdateScheduleRequest, context: Context
    ) -> pb.UpdateScheduleResponse:
        schedule_id = schedule_id_of(request.schedule.name, "schedule.name")
        doc = document_of(request.schedule, self._limits)
        record = await self._app.schedules.update(schedule_id, doc, request.expected_revision)
        return pb.UpdateScheduleResponse(schedule=schedule_pb(record, self._now()))

    @unary
    async def DeleteSchedule(
        self, request: pb.DeleteScheduleRequest, context: Context
    ) -> pb.DeleteScheduleResponse:
        await self._app.schedules.delete(schedule_id_of(request.name))
        return pb.DeleteScheduleResponse()

    @unary
    async def PauseSchedule(
        self, request: pb.PauseScheduleRequest, context: Context
    ) -> pb.PauseScheduleResponse:
        record = await self._app.schedules.pause(
            schedule_id_of(request.name), True, request.note, current_actor()
        )
        return pb.PauseScheduleResponse(schedule=schedule_pb(record, self._now()))

    @unary
    async def UnpauseSchedule(
        self, request: pb.UnpauseScheduleRequest, context: Context
    ) -> pb.UnpauseScheduleResponse:
        record = await self._app.schedules.pause(
            schedule_id_of(request.name), False, request.note, current_actor()
        )
        return pb.UnpauseScheduleResponse(schedule=schedule_pb(record, self._now()))

    @unary
    async def TriggerSchedule(
        self, request: pb.TriggerScheduleRequest, context: Context
    ) -> pb.TriggerScheduleResponse:
        fired = await self._app.schedules.trigger(
            schedule_id_of(request.name), force=request.force, budget=budget(context)
        )
        action = {
            "nominal": spec.iso(fired.candidate.nominal),
            "actual": spec.iso(fired.actual),
            "workflow_id": fired.candidate.workflow_id,
            "outcome": fired.outcome,
            "reason": fired.reason,
        }
        return pb.TriggerScheduleResponse(action=action_pb(action))

    @unary
    async def BackfillSchedule(
        self, request: pb.BackfillScheduleRequest, context: Context
    ) -> pb.BackfillScheduleResponse:
        for field in ("start_time", "end_time"):
            if not request.HasField(field):
                raise errors.InvalidArgument(
                    f"{field} is required", reason=Reason.FIELD_REQUIRED, metadata={"field": field}
                )
        fires = await self._app.schedules.backfill(
            schedule_id_of(request.name), _time(request.start_time), _time(request.end_time)
        )
        return pb.BackfillScheduleResponse(fires=fires)
