"""Declarative schedules: ``*.schedules.yaml`` files of the definitions directory.

Each holds a ``schedules:`` list; each entry is applied at start and, in dev, whenever
its file changes. The rule that keeps what the API did: a schedule that does not exist
is created from its file; one that exists is updated to its file's spec, action and
policies only while it came from a file and no UpdateSchedule changed it since; anything
else is left as it is, and logged. Pause and unpause are not changes of the schedule
(a file never pauses or unpauses one that exists).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

import yaml

from statewrightd import errors
from statewrightd.app.schedules import Schedules
from statewrightd.definitions.files import is_schedules_file
from statewrightd.durations import parse_duration
from statewrightd.engine import schedule_spec as spec
from statewrightd.reasons import Reason

_log = logging.getLogger(__name__)

FILE_ACTOR = "statewright:schedule-file"
_KEYS = frozenset({
    "id", "definition", "version", "input", "cron", "interval", "phase", "time_zone",
    "jitter", "start_time", "end_time", "overlap", "catchup_window", "paused", "note",
    "input_expressions",
})  # fmt: skip


def _invalid(message: str) -> errors.InvalidArgument:
    return errors.InvalidArgument(message, reason=Reason.INVALID_SCHEDULE)


def _seconds(value: Any, key: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    seconds = parse_duration(str(value))
    if seconds is None:
        raise _invalid(f"{key}: {value!r} is not a duration (30s, 5m, 1h)")
    return seconds


def _time(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return spec.iso(spec.parse_iso(str(value)))
    except ValueError:
        raise _invalid(f"{value!r} is not an RFC 3339 time") from None


def entry_document(entry: Any) -> tuple[str, dict[str, Any]]:
    """One ``schedules:`` entry as the id and the document the API would store."""
    if not isinstance(entry, dict) or not entry.get("id") or not entry.get("definition"):
        raise _invalid("each schedule needs an id and a definition")
    unknown = set(entry) - _KEYS
    if unknown:
        raise _invalid(f"unknown keys {sorted(unknown)}")
    cron = entry.get("cron") or []
    overlap = str(entry.get("overlap") or "SKIP").upper()
    if overlap not in spec.OVERLAPS:
        raise _invalid(f"overlap {overlap!r} is not one of {', '.join(spec.OVERLAPS)}")
    catchup = _seconds(entry.get("catchup_window"), "catchup_window")
    document: dict[str, Any] = {
        "spec": {
            "cron": [cron] if isinstance(cron, str) else [str(c) for c in cron],
            "interval": _seconds(entry.get("interval"), "interval"),
            "phase": _seconds(entry.get("phase"), "phase") or 0.0,
            "time_zone": str(entry.get("time_zone") or ""),
            "jitter": _seconds(entry.get("jitter"), "jitter") or 0.0,
            "start_time": _time(entry.get("start_time")),
            "end_time": _time(entry.get("end_time")),
        },
        "action": {
            "definition": str(entry["definition"]),
            "version": int(entry.get("version") or 0),
            "input": dict(entry.get("input") or {}),
            "input_expressions": {
                str(k): str(v) for k, v in (entry.get("input_expressions") or {}).items()
            },
        },
        "policies": {
            "overlap": overlap,
            "catchup_window": spec.DEFAULT_CATCHUP if catchup is None else catchup,
        },
        "state": {"paused": bool(entry.get("paused")), "note": str(entry.get("note") or "")},
    }
    spec.Spec.of(document["spec"])
    spec.input_expressions(document["action"])
    return str(entry["id"]), document


class ScheduleFiles:
    """Applies the schedules files of one directory; remembers what it applied."""

    def __init__(self, schedules: Schedules, directory: Path) -> None:
        self._schedules = schedules
        self._directory = directory
        self._digests: dict[Path, str] = {}

    def paths(self) -> list[Path]:
        try:
            return sorted(p for p in self._directory.iterdir() if is_schedules_file(p))
        except OSError:
            return []

    async def apply(self) -> int:
        """Apply every file whose content changed since it was last applied; how many
        schedules were created or updated."""
        changed = 0
        for path in self.paths():
            try:
                data = path.read_bytes()
            except OSError as exc:
                _log.warning("schedules: cannot read %s: %s", path, exc.strerror)
                continue
            digest = hashlib.sha256(data).hexdigest()
            if self._digests.get(path) == digest:
                continue
            self._digests[path] = digest
            changed += await self._apply_file(path, data)
        return changed

    async def _apply_file(self, path: Path, data: bytes) -> int:
        try:
            loaded = yaml.safe_load(data)
        except yaml.YAMLError as exc:
            _log.error("schedules: %s is not YAML: %s", path, exc)
            return 0
        entries = loaded.get("schedules") if isinstance(loaded, dict) else None
        if not isinstance(entries, list):
            _log.error("schedules: %s has no `schedules:` list", path)
            return 0
        changed = 0
        for entry in entries:
            try:
                schedule_id, document = entry_document(entry)
                changed += await self._apply_one(path, schedule_id, document)
            except errors.StatewrightError as exc:
                _log.error("schedules: %s: %s", path, exc)
        return changed

    async def _apply_one(self, path: Path, schedule_id: str, document: dict[str, Any]) -> int:
        source = f"file:{path.name}"
        try:
            record = await self._schedules.get(schedule_id)
        except errors.NotFound:
            await self._schedules.create(schedule_id, document, actor=FILE_ACTOR, source=source)
            _log.info("schedules: created %s from %s", schedule_id, path)
            return 1
        current = record.document
        if current.get("source") != source or current.get("changed_by_api"):
            _log.info(
                "schedules: %s was created or changed through the API: kept as it is, not "
                "as %s says (delete it to hand it back to the file)",
                schedule_id,
                path,
            )
            return 0
        parts = ("spec", "action", "policies")
        if all(current.get(k) == document[k] for k in parts):
            return 0
        await self._schedules.update(schedule_id, {k: document[k] for k in parts}, 0, by_api=False)
        _log.info("schedules: updated %s from %s", schedule_id, path)
        return 1
