"""Schedule fire times and the rules a fire follows, on times given (no clock, no store)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from statewrightd import errors
from statewrightd.engine import schedule_spec as s


def utc(year: int, month: int, day: int, *time: int) -> datetime:
    hour, minute, second = (*time, 0, 0, 0)[:3]
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def doc(spec: dict[str, Any], cursor: datetime, **policies: Any) -> dict[str, Any]:
    return {
        "spec": spec,
        "policies": policies,
        "state": {"paused": False},
        "cursor": s.iso(cursor),
    }


@pytest.mark.parametrize(
    ("zone", "spring", "autumn", "winter", "summer"),
    [
        # Berlin: 02:00 -> 03:00 on 29 March 2026, 03:00 -> 02:00 on 25 October 2026.
        ("Europe/Berlin", (2026, 3, 29), (2026, 10, 25), 1, 2),
        # New York: 02:00 -> 03:00 on 8 March 2026, 02:00 -> 01:00 on 1 November 2026.
        ("America/New_York", (2026, 3, 8), (2026, 11, 1), -5, -4),
    ],
)
def test_daylight_saving_fires_once_each_day(
    zone: str, spring: tuple[int, int, int], autumn: tuple[int, int, int], winter: int, summer: int
) -> None:
    # 02:30 does not exist on the spring-forward day: it fires once, at 03:00 local time
    # (the first valid instant after it).
    spec = s.Spec.of({"cron": ["30 2 * * *"], "time_zone": zone})
    day_before = datetime(*spring, tzinfo=UTC) - timedelta(days=1)
    fires = list(spec.times(day_before, 3))
    assert fires[1] == datetime(*spring, 3, 0, tzinfo=UTC) - timedelta(hours=summer)
    assert len({f.date() for f in fires}) == 3
    # 01:30 occurs twice on the fall-back day: it fires once, at its first occurrence
    # (still on summer time).
    spec = s.Spec.of({"cron": ["30 1 * * *"], "time_zone": zone})
    day_before = datetime(*autumn, tzinfo=UTC) - timedelta(days=1)
    fires = list(spec.times(day_before, 3))
    on_the_day = [
        f for f in fires if (f + timedelta(hours=summer)).date() == datetime(*autumn).date()
    ]
    assert on_the_day == [datetime(*autumn, 1, 30, tzinfo=UTC) - timedelta(hours=summer)]
    # The day the clocks go back is 25 hours long: one fire on it, and none twice.
    gaps = sorted([fires[1] - fires[0], fires[2] - fires[1]])
    assert gaps == [timedelta(hours=24), timedelta(hours=24 + summer - winter)]


def test_aliases_seconds_and_interval_with_phase() -> None:
    t = utc(2026, 1, 1, 10, 0, 0)
    assert list(s.Spec.of({"cron": ["@hourly"]}).times(t, 2)) == [
        utc(2026, 1, 1, 11),
        utc(2026, 1, 1, 12),
    ]
    every_2s = s.Spec.of({"cron": ["*/2 * * * * *"]})
    assert list(every_2s.times(t, 2)) == [t + timedelta(seconds=2), t + timedelta(seconds=4)]
    quarter_past = s.Spec.of({"interval": 3600, "phase": 900})
    assert list(quarter_past.times(t, 2)) == [utc(2026, 1, 1, 10, 15), utc(2026, 1, 1, 11, 15)]
    both = s.Spec.of({"cron": ["0 * * * *"], "interval": 1800, "phase": 0})
    assert list(both.times(t, 3)) == [
        utc(2026, 1, 1, 10, 30),
        utc(2026, 1, 1, 11),
        utc(2026, 1, 1, 11, 30),
    ]


def test_start_and_end_time_bound_the_fires() -> None:
    spec = s.Spec.of(
        {"interval": 60, "start_time": "2026-01-01T10:05:00Z", "end_time": "2026-01-01T10:07:00Z"}
    )
    assert list(spec.times(utc(2026, 1, 1), 10)) == [
        utc(2026, 1, 1, 10, 5), utc(2026, 1, 1, 10, 6), utc(2026, 1, 1, 10, 7)
    ]  # fmt: skip


@pytest.mark.parametrize(
    "spec",
    [{}, {"cron": ["61 * * * *"]}, {"interval": 0.5}, {"interval": 60, "phase": 60},
     {"cron": ["* * * * *"], "time_zone": "Mars/Olympus"}],
)  # fmt: skip
def test_invalid_specs_are_refused(spec: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidArgument):
        s.Spec.of(spec)


def test_jitter_is_bounded_and_the_same_for_every_replica() -> None:
    nominal = utc(2026, 1, 1, 12)
    values = {s.jitter_of("nightly", nominal + timedelta(minutes=m), 30.0) for m in range(50)}
    assert all(0 <= v < 30 for v in values) and len(values) > 10
    assert s.jitter_of("nightly", nominal, 30.0) == s.jitter_of("nightly", nominal, 30.0)
    assert s.jitter_of("nightly", nominal, 0.0) == 0.0
    spec = s.Spec.of({"interval": 60, "jitter": 30})
    assert spec.due("nightly", nominal) == nominal + timedelta(
        seconds=s.jitter_of("nightly", nominal, 30)
    )


def test_workflow_ids_derive_from_the_nominal_time() -> None:
    assert s.workflow_id_for("sync", utc(2026, 1, 2, 3, 4, 5)) == "sync-2026-01-02T03:04:05Z"
    with_ms = utc(2026, 1, 2, 3, 4, 5) + timedelta(milliseconds=250)
    assert s.workflow_id_for("sync", with_ms) == "sync-2026-01-02T03:04:05.250Z"


def test_a_fire_is_never_early() -> None:
    d = doc({"interval": 60}, utc(2026, 1, 1, 10))
    assert s.plan("x", d, utc(2026, 1, 1, 10, 0, 59), last_open=False).candidate is None
    due = s.plan("x", d, utc(2026, 1, 1, 10, 1), last_open=False).candidate
    assert due is not None and due.nominal == utc(2026, 1, 1, 10, 1)


def test_catch_up_runs_young_fires_oldest_first_and_records_older_ones_missed() -> None:
    d = doc({"interval": 1}, utc(2026, 1, 1, 10), catchup_window=3)
    now = utc(2026, 1, 1, 10, 0, 10)  # ten fires came due while nothing ran
    started = []
    for _ in range(20):
        p = s.plan("x", d, now, last_open=False)
        if p.candidate is None:
            d = p.document
            break
        started.append(p.candidate.nominal.second)
        d = s.record("x", p.document, p.candidate, s.STARTED, now)
    assert started == [7, 8, 9, 10]
    assert d["counts"] == {"fires": 4, "skips": 0, "misses": 6}
    assert [a["outcome"] for a in d["recent"]][:5] == ["STARTED"] * 4 + ["MISSED"]


def test_overlap_policies() -> None:
    cand = s.Candidate("regular", utc(2026, 1, 1), "x-1")
    for policy, expected in [
        ("SKIP", s.SKIPPED), ("BUFFER_ONE", s.BUFFERED), ("ALLOW_ALL", s.STARTED),
        ("CANCEL_OTHER", "cancel"),
    ]:  # fmt: skip
        d = doc({"interval": 1}, utc(2026, 1, 1), overlap=policy)
        assert s.decide(d, cand, exists=False, last_open=True) == expected
        assert s.decide(d, cand, exists=False, last_open=False) == s.STARTED
        assert s.decide(d, cand, exists=True, last_open=True) == s.STARTED
    d = doc({"interval": 1}, utc(2026, 1, 1), overlap="BUFFER_ONE")
    d = s.record("x", d, cand, s.BUFFERED, utc(2026, 1, 1))
    later = s.Candidate("regular", utc(2026, 1, 1, 0, 0, 1), "x-2")
    assert s.decide(d, later, exists=False, last_open=True) == s.SKIPPED  # one is buffered
    # While the blocker is open the buffered fire waits; once it ends, it starts.
    waiting = s.plan("x", d, utc(2026, 1, 1) + timedelta(milliseconds=500), last_open=True)
    assert waiting.candidate is None
    freed = s.plan("x", d, utc(2026, 1, 1, 0, 0, 5), last_open=False).candidate
    assert (
        freed is not None
        and freed.kind == "buffered"
        and freed.workflow_id == "x-2026-01-01T00:00:00Z"
    )


def test_backfill_walks_its_range_once() -> None:
    d = doc({"interval": 60}, utc(2026, 1, 2))
    d["backfills"] = [{"cursor": s.iso(utc(2026, 1, 1, 0, 0) - timedelta(microseconds=1)),
                       "end": s.iso(utc(2026, 1, 1, 0, 9))}]  # fmt: skip
    now, ids = utc(2026, 1, 2), []
    for _ in range(20):
        p = s.plan("b", d, now, last_open=True)
        if p.candidate is None:
            break
        assert s.decide(p.document, p.candidate, exists=False, last_open=True) == s.STARTED
        ids.append(p.candidate.workflow_id)
        d = s.record("b", p.document, p.candidate, s.STARTED, now)
    assert len(ids) == len(set(ids)) == 10 and ids[0] == "b-2026-01-01T00:00:00Z"
    assert d["backfills"] == []


def test_paused_plans_nothing_and_shows_no_next_fire() -> None:
    d = doc({"interval": 1}, utc(2026, 1, 1))
    d["state"] = {"paused": True}
    assert s.plan("x", d, utc(2026, 1, 2), last_open=False).candidate is None
    assert s.next_look("x", d, utc(2026, 1, 2)) is None
    assert s.next_fire_times(d, utc(2026, 1, 2)) == []
    # A backfill still runs while paused: it was asked for.
    d["backfills"] = [
        {"cursor": s.iso(utc(2025, 12, 31, 23, 59, 59)), "end": s.iso(utc(2026, 1, 1))}
    ]
    p = s.plan("x", d, utc(2026, 1, 2), last_open=True)
    assert p.candidate is not None and p.candidate.kind == "backfill"
    assert s.next_look("x", d, utc(2026, 1, 2)) == utc(2026, 1, 2) + s.BACKFILL_PACE


def test_input_expressions_read_the_fire_and_are_checked_before_they_are_kept() -> None:
    d = doc({"interval": 60, "jitter": 30}, utc(2026, 1, 1))
    d["action"] = {
        "definition": "report",
        "input_expressions": {
            "label": "schedule.id + ' at ' + string(schedule.nominal_time)",
            "due": "schedule.fire_time",
            "late": "schedule.fire_time - schedule.nominal_time",
        },
    }
    nominal = utc(2026, 1, 1, 0, 1)
    cand = s.Candidate("regular", nominal, s.workflow_id_for("nightly", nominal))
    values = s.evaluate_inputs("nightly", d, cand)
    jitter = s.jitter_of("nightly", nominal, 30)
    assert values["label"] == "nightly at 2026-01-01T00:01:00Z"
    assert values["due"] == s.iso(nominal + timedelta(seconds=jitter))
    assert values["late"] == pytest.approx(jitter)
    with pytest.raises(errors.InvalidArgument):
        s.input_expressions({"input_expressions": {"x": "context.topic"}})
    with pytest.raises(errors.InvalidArgument):
        s.input_expressions({"input_expressions": {"x": "schedule.id +"}})


def test_a_fire_recorded_after_a_pause_lands_on_top_of_the_pause() -> None:
    from statewrightd.engine.schedules import record_fire
    from statewrightd.store.memory import MemoryRepository

    repo = MemoryRepository()
    now = utc(2026, 1, 1, 0, 0, 5)
    d = doc({"interval": 1}, utc(2026, 1, 1))
    read = repo.insert_schedule("x", d, now, now)
    fired = s.plan("x", read.document, now, last_open=False)
    assert fired.candidate is not None
    after = s.record("x", fired.document, fired.candidate, s.STARTED, now)
    # A pause lands between the claim's read and the fire's record.
    paused = {**read.document, "state": {"paused": True, "note": "stop"}}
    assert repo.put_schedule("x", read.version, paused, None, now) is not None
    written = record_fire(repo, read, after, s.next_look("x", after, now), now)
    assert written is not None and written.next_fire_time is None
    assert written.document["state"]["paused"] is True
    assert (
        written.document["counts"]["fires"] == 1 and written.document["cursor"] == after["cursor"]
    )
    # A fire recorded meanwhile by another replica stands: this record is dropped.
    stale = record_fire(repo, read, after, None, now)
    assert stale is None
