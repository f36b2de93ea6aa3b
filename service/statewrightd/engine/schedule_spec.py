"""When a schedule fires, and what a fire does to its record: pure, on times given.

A schedule's nominal times are the union of its cron expressions (read in its IANA time
zone by cronsim, which follows Debian cron across daylight-saving changes) and its
interval (``phase`` past each multiple of it since the epoch), within start and end
time. The daylight-saving rule: a local time that does not exist (02:30 on a
spring-forward day) fires once, at the first valid instant after it; a local time that
occurs twice (01:30 on a fall-back day) fires once, at its first occurrence.

A fire's due time is its nominal time plus its jitter, which derives from a hash of the
schedule id and the nominal time: every replica and every retry computes the same one.
Each fire starts the instance ``<schedule id>-<nominal time, RFC 3339 UTC>``; that the
id is derived is what makes a fire exactly once (a second start of it finds the first).

The stored document (a JSON map) holds the spec, the action, the policies, the state,
the cursor (the last nominal time handled), the buffered fire, pending backfills, the
counts and the recent actions; ``plan`` and ``record`` are the only writers of its
firing part, so a scheduler and a test drive the same rules.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from statewrightd import errors
from statewrightd.definitions.cel import CelCompileError, CelEvaluationError, ScheduleExpression
from statewrightd.definitions.values import JSONValue
from statewrightd.reasons import Reason

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
RECENT = 10  # recent actions kept
NEXT_SHOWN = 10  # next fire times shown
DEFAULT_CATCHUP = 60.0
MAX_CATCHUP = 365 * 86400.0
MIN_INTERVAL = 1.0
# How many nominal times one round walks past (misses) before it stops for the next round.
MISS_WALK = 10_000
# A buffered fire is looked at again this often while the instance it waits for is open.
BUFFER_RECHECK = timedelta(seconds=1)
# Backfill fires are paced: one per schedule this often.
BACKFILL_PACE = timedelta(milliseconds=100)

OVERLAPS = ("SKIP", "BUFFER_ONE", "ALLOW_ALL", "CANCEL_OTHER")
# Cron aliases, as Debian cron reads them (cronsim takes the five fields).
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

STARTED, SKIPPED, MISSED, BUFFERED, FAILED = "STARTED", "SKIPPED", "MISSED", "BUFFERED", "FAILED"


def _invalid(message: str, field_name: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(
        message, reason=Reason.INVALID_SCHEDULE, metadata={"field": field_name}
    )


def iso(t: datetime) -> str:
    """RFC 3339 in UTC with a Z, to the microsecond when there is one."""
    text = t.astimezone(UTC).isoformat()
    return text.replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def workflow_id_for(schedule_id: str, nominal: datetime) -> str:
    """The instance a fire starts: the schedule id and the nominal time in RFC 3339 UTC
    (seconds, and milliseconds only when the time has them)."""
    t = nominal.astimezone(UTC)
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if t.microsecond:
        text += f".{t.microsecond // 1000:03d}"
    return f"{schedule_id}-{text}Z"


@dataclass(frozen=True, slots=True)
class Spec:
    cron: tuple[str, ...] = ()
    interval: float | None = None  # seconds
    phase: float = 0.0
    time_zone: str = ""
    jitter: float = 0.0
    start_time: datetime | None = None
    end_time: datetime | None = None
    _zone: ZoneInfo = field(default=ZoneInfo("UTC"), compare=False, repr=False)

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Spec:
        """The spec of a stored (or requested) document's ``spec`` map; raises
        InvalidArgument (INVALID_SCHEDULE) on what cannot fire."""
        crons = tuple(str(c).strip() for c in doc.get("cron", ()))
        interval = doc.get("interval")
        phase = float(doc.get("phase") or 0.0)
        zone_name = str(doc.get("time_zone") or "")
        try:
            zone = ZoneInfo(zone_name or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            raise _invalid(f"unknown time zone {zone_name!r}", "spec.time_zone") from None
        start, end = doc.get("start_time"), doc.get("end_time")
        spec = cls(
            cron=crons,
            interval=None if not interval else float(interval),
            phase=phase,
            time_zone=zone_name,
            jitter=float(doc.get("jitter") or 0.0),
            start_time=None if not start else parse_iso(start),
            end_time=None if not end else parse_iso(end),
            _zone=zone,
        )
        spec._check()
        return spec

    def _check(self) -> None:
        if not self.cron and self.interval is None:
            raise _invalid("a schedule needs a cron expression or an interval", "spec")
        for expression in self.cron:
            try:
                CronSim(ALIASES.get(expression, expression), datetime(2000, 1, 1))
            except CronSimError as exc:
                raise _invalid(
                    f"cron expression {expression!r}: {exc}", "spec.cron_expressions"
                ) from None
        if self.interval is not None and self.interval < MIN_INTERVAL:
            raise _invalid("the interval is at least 1 second", "spec.interval")
        if self.interval is not None and not 0 <= self.phase < self.interval:
            raise _invalid("the phase is at least 0 and less than the interval", "spec.phase")
        if not 0 <= self.jitter <= 86400:
            raise _invalid("the jitter is at least 0 and at most a day", "spec.jitter")
        if self.start_time and self.end_time and self.end_time < self.start_time:
            raise _invalid("the end time is before the start time", "spec.end_time")

    def as_doc(self) -> dict[str, Any]:
        return {
            "cron": list(self.cron),
            "interval": self.interval,
            "phase": self.phase,
            "time_zone": self.time_zone,
            "jitter": self.jitter,
            "start_time": None if self.start_time is None else iso(self.start_time),
            "end_time": None if self.end_time is None else iso(self.end_time),
        }

    # -- nominal times ---------------------------------------------------------------

    def next_after(self, after: datetime) -> datetime | None:
        """The first nominal time strictly after ``after`` (None: the schedule has ended)."""
        if self.start_time is not None and after < self.start_time:
            after = self.start_time - timedelta(microseconds=1)
        found = [t for t in (self._cron_after(c, after) for c in self.cron) if t is not None]
        if self.interval is not None:
            found.append(self._interval_after(after))
        if not found:
            return None
        first = min(found)
        if self.end_time is not None and first > self.end_time:
            return None
        return first

    def times(self, after: datetime, limit: int) -> Iterator[datetime]:
        """Up to ``limit`` nominal times after ``after``, in order."""
        t: datetime | None = after
        for _ in range(limit):
            assert t is not None
            t = self.next_after(t)
            if t is None:
                return
            yield t

    def _cron_after(self, expression: str, after: datetime) -> datetime | None:
        local = after.astimezone(self._zone)
        try:
            found: datetime = next(iter(CronSim(ALIASES.get(expression, expression), local)))
        except StopIteration:
            return None
        return found.astimezone(UTC)

    def _interval_after(self, after: datetime) -> datetime:
        assert self.interval is not None
        step = timedelta(seconds=self.interval)
        since = after - EPOCH - timedelta(seconds=self.phase)
        k = since // step + 1
        return EPOCH + timedelta(seconds=self.phase) + k * step

    def due(self, schedule_id: str, nominal: datetime) -> datetime:
        """When the fire of ``nominal`` is due: the nominal time plus its jitter."""
        return nominal + timedelta(seconds=jitter_of(schedule_id, nominal, self.jitter))


def jitter_of(schedule_id: str, nominal: datetime, bound: float) -> float:
    """A delay in [0, bound) seconds, the same for every replica and retry of a fire."""
    if bound <= 0:
        return 0.0
    digest = hashlib.sha256(f"{schedule_id}|{iso(nominal)}".encode()).digest()
    fraction = int.from_bytes(digest[:8], "big") / 2**64
    return round(fraction * bound, 3)


def input_expressions(doc: dict[str, Any]) -> dict[str, ScheduleExpression]:
    """The action's input expressions, compiled; INVALID_SCHEDULE names the first that is
    not one."""
    compiled = {}
    for key, source in (doc.get("input_expressions") or {}).items():
        try:
            compiled[key] = ScheduleExpression(source)
        except CelCompileError as exc:
            raise _invalid(f"input expression {key!r}: {exc}", "action.input_expressions") from None
    return compiled


def evaluate_inputs(
    schedule_id: str, doc: dict[str, Any], candidate: Candidate
) -> dict[str, JSONValue]:
    """The input values of a fire's expressions; a failed one raises INVALID_SCHEDULE (the
    fire is recorded FAILED with it)."""
    action = doc["action"]
    due = Spec.of(doc["spec"]).due(schedule_id, candidate.nominal)
    fire_time = due if candidate.kind in ("regular", "buffered", "backfill") else candidate.nominal
    values = {}
    for key, expression in input_expressions(action).items():
        try:
            values[key] = expression.evaluate(schedule_id, fire_time, candidate.nominal)
        except CelEvaluationError as exc:
            raise _invalid(f"input expression {key!r}: {exc}", "action.input_expressions") from None
    return values


# -- the firing part of the document ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    """A fire to act on now: its kind (``regular``, ``buffered``, ``backfill``, or
    ``trigger``), its nominal time and the instance it starts."""

    kind: str
    nominal: datetime
    workflow_id: str


@dataclass(frozen=True, slots=True)
class Plan:
    document: dict[str, Any]  # with the misses walked past recorded
    candidate: Candidate | None


def overlap(doc: dict[str, Any]) -> str:
    return str(doc.get("policies", {}).get("overlap") or "SKIP")


def catchup(doc: dict[str, Any]) -> float:
    value = doc.get("policies", {}).get("catchup_window")
    return DEFAULT_CATCHUP if value is None else float(value)


def plan(schedule_id: str, doc: dict[str, Any], now: datetime, *, last_open: bool) -> Plan:
    """What is due at ``now``: fires older than the catch-up window are recorded as
    missed (oldest first); then the oldest fire due, if any: a buffered fire once the
    instance it waited for has ended, a regular one, a backfill's. Paused: only a
    backfill's."""
    doc = _copy(doc)
    spec = Spec.of(doc["spec"])
    if doc.get("state", {}).get("paused"):
        return Plan(doc, _backfill(schedule_id, doc, spec))
    buffered = doc.get("buffered")
    if buffered and not last_open:
        nominal = parse_iso(buffered)
        return Plan(doc, Candidate("buffered", nominal, workflow_id_for(schedule_id, nominal)))
    window = timedelta(seconds=catchup(doc))
    cursor = parse_iso(doc["cursor"])
    for _ in range(MISS_WALK):
        regular = spec.next_after(cursor)
        if regular is None or spec.due(schedule_id, regular) > now:
            break
        if now - regular <= window:
            return Plan(doc, Candidate("regular", regular, workflow_id_for(schedule_id, regular)))
        missed = Candidate("regular", regular, "")
        doc = record(schedule_id, doc, missed, MISSED, now, reason=Reason.SCHEDULE_CATCHUP_PASSED)
        cursor = regular
    return Plan(doc, _backfill(schedule_id, doc, spec))


def _backfill(schedule_id: str, doc: dict[str, Any], spec: Spec) -> Candidate | None:
    """The next fire of the oldest pending backfill (a paused schedule runs these too:
    a backfill is asked for explicitly)."""
    for backfill in doc.get("backfills", ()):
        filled = spec.next_after(parse_iso(backfill["cursor"]))
        if filled is not None and filled <= parse_iso(backfill["end"]):
            return Candidate("backfill", filled, workflow_id_for(schedule_id, filled))
    return None


def decide(doc: dict[str, Any], candidate: Candidate, *, exists: bool, last_open: bool) -> str:
    """What to do with a due fire: STARTED (start it; also when its instance exists
    already), SKIPPED, BUFFERED, or ``cancel`` (cancel the open instance, then start)."""
    if exists or not last_open or candidate.kind in ("backfill", "buffered", "forced"):
        return STARTED
    policy = overlap(doc)
    if policy == "ALLOW_ALL":
        return STARTED
    if policy == "CANCEL_OTHER":
        return "cancel"
    if policy == "BUFFER_ONE" and not doc.get("buffered"):
        return BUFFERED
    return SKIPPED


def record(
    schedule_id: str,
    doc: dict[str, Any],
    candidate: Candidate,
    outcome: str,
    now: datetime,
    *,
    reason: str = "",
) -> dict[str, Any]:
    """The document after ``candidate`` came to ``outcome`` at ``now``."""
    doc = _copy(doc)
    nominal = iso(candidate.nominal)
    if candidate.kind == "regular":
        doc["cursor"] = nominal
    elif candidate.kind == "buffered":
        doc["buffered"] = None
    elif candidate.kind == "backfill":
        backfills = doc.get("backfills", [])
        if backfills:
            backfills[0]["cursor"] = nominal
            spec = Spec.of(doc["spec"])
            following = spec.next_after(candidate.nominal)
            if following is None or following > parse_iso(backfills[0]["end"]):
                backfills.pop(0)
    if outcome == BUFFERED:
        doc["buffered"] = nominal
    counts = doc.setdefault("counts", {"fires": 0, "skips": 0, "misses": 0})
    key = {STARTED: "fires", SKIPPED: "skips", MISSED: "misses"}.get(outcome)
    if key is not None:
        counts[key] = int(counts.get(key, 0)) + 1
    if outcome == STARTED:
        doc["last_workflow_id"] = candidate.workflow_id
    action = {
        "nominal": nominal,
        "actual": iso(now),
        "workflow_id": candidate.workflow_id,
        "outcome": outcome,
        "reason": str(reason),
    }
    doc["recent"] = [action, *doc.get("recent", [])][:RECENT]
    return doc


def next_look(schedule_id: str, doc: dict[str, Any], now: datetime) -> datetime | None:
    """When a replica should next look at the schedule (the row's next_fire_time)."""
    if doc.get("backfills"):
        return now + BACKFILL_PACE
    if doc.get("state", {}).get("paused"):
        return None
    if doc.get("buffered"):
        return now + BUFFER_RECHECK
    spec = Spec.of(doc["spec"])
    nominal = spec.next_after(parse_iso(doc["cursor"]))
    return None if nominal is None else spec.due(schedule_id, nominal)


def next_fire_times(doc: dict[str, Any], now: datetime, limit: int = NEXT_SHOWN) -> list[datetime]:
    """The next nominal times after the cursor and ``now`` (none while paused)."""
    if doc.get("state", {}).get("paused"):
        return []
    start = max(parse_iso(doc["cursor"]), now)
    return list(Spec.of(doc["spec"]).times(start, limit))


def _copy(doc: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)
    out["recent"] = list(doc.get("recent", []))
    out["backfills"] = [dict(b) for b in doc.get("backfills", [])]
    out["counts"] = dict(doc.get("counts", {"fires": 0, "skips": 0, "misses": 0}))
    return out
