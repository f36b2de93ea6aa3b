"""Which ended instances make the child runner look again soon: only those a parent
waits for, and parents that leave live children behind. Any other end costs no round."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from statewrightd.definitions.model import CHILD_QUEUE
from statewrightd.engine.children import EndsWatched
from statewrightd.store.records import ChildLink
from tests.support.store_records import task_record

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

CHILD_TASK = task_record(
    "parent-1",
    "4",
    NOW,
    leased="t",
    state="shipping",
    queue=CHILD_QUEUE,
    input={"workflow_id": "child-1", "definition": "shipment"},
    max_attempts=1,
    lease_expire_time=NOW + timedelta(seconds=10),
    start_to_close=10.0,
)


def test_nothing_read_watches_nothing() -> None:
    watched = EndsWatched()
    assert "order-7" not in watched


def test_a_child_its_parent_waits_for_and_that_parent_are_watched() -> None:
    watched = EndsWatched.read([CHILD_TASK], {})
    assert "child-1" in watched
    assert "parent-1" in watched
    assert "order-7" not in watched


def test_a_parent_with_a_live_child_is_watched() -> None:
    link = ChildLink("child-2", "parent-2", "9", "fanning", NOW)
    watched = EndsWatched.read([], {"child-2": link})
    assert "parent-2" in watched
    # The child's own end matters only while its parent waits (its task is leased).
    assert "child-2" not in watched


def test_a_child_started_after_the_read_is_watched_with_its_parent() -> None:
    watched = EndsWatched.read([], {})
    later = replace(CHILD_TASK, workflow_id="parent-3", input={"workflow_id": "child-3"})
    watched.started(later)
    assert "child-3" in watched
    assert "parent-3" in watched
    assert "child-1" not in watched
