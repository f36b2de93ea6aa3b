"""Classification of read-back evidence after a lost COMMIT."""

from __future__ import annotations

from datetime import UTC, datetime

from statewrightd.domain import Status
from statewrightd.errors import Conflict, RecordExists
from statewrightd.store.outcomes import HistoryWitness, Verdict, answer, classify
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save

T = datetime(2026, 1, 1, tzinfo=UTC)


def _save(expected: int) -> Save:
    rec = InstanceRecord("w", "d", 1, "s", Status.RUNNING, {}, expected + 1, None, T, T)
    history = HistoryRecord("w", expected + 1, "e", [], "s", Status.RUNNING, {}, None, T)
    return Save(rec, expected, history)


def test_our_history_row_means_committed() -> None:
    assert classify(_save(1), 5, HistoryWitness("e", "s", "RUNNING", T)) is Verdict.COMMITTED


def test_someone_elses_history_row_means_we_lost() -> None:
    assert classify(_save(1), 2, HistoryWitness("other", "s", "RUNNING", T)) is Verdict.LOST_RACE


def test_pre_state_without_witness_means_not_committed() -> None:
    assert classify(_save(1), 1, None) is Verdict.NOT_COMMITTED


def test_anything_else_is_unknown() -> None:
    assert classify(_save(1), 3, None) is Verdict.UNKNOWN
    assert classify(_save(1), None, None) is Verdict.UNKNOWN


def test_create_without_row_is_not_committed() -> None:
    rec = InstanceRecord("w", "d", 1, "s", Status.RUNNING, {}, 1, None, T, T)
    op = Create(rec, HistoryRecord("w", 1, None, [], "s", Status.RUNNING, {}, None, T))
    assert classify(op, None, None) is Verdict.NOT_COMMITTED
    assert classify(op, 1, None) is Verdict.UNKNOWN


def test_a_create_that_lost_to_another_start_is_answered_as_an_existing_id() -> None:
    """A start whose COMMIT was lost, and whose id another start then took, is answered as a
    start that met the row: exists (the start's own if-exists rules apply), not a conflict
    of revisions that would retry it as a step of an instance it never stepped."""
    rec = InstanceRecord("w", "d", 1, "s", Status.RUNNING, {}, 1, None, T, T)
    op = Create(rec, HistoryRecord("w", 1, None, [], "s", Status.RUNNING, {}, None, T))
    verdict = classify(op, 1, HistoryWitness("other", "s", "RUNNING", T))
    assert verdict is Verdict.LOST_RACE
    assert isinstance(answer(op, verdict, 1), RecordExists)
    assert isinstance(answer(_save(1), Verdict.LOST_RACE, 2), Conflict)
