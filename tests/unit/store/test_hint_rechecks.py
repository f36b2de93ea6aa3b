"""How often the watched instances are looked at follows from how the store sends step hints."""

from __future__ import annotations

from statewrightd.app.wiring import (
    WATCH_RECHECK_SECONDS,
    WATCH_RECHECK_UNHINTED_SECONDS,
    watch_recheck_seconds,
)
from statewrightd.store.citus import CitusRepository
from statewrightd.store.postgres import PostgresRepository


def test_watchers_look_more_often_where_a_hint_can_be_lost_after_its_commit() -> None:
    # The fault suite's bound on a watched step's delay is 20 s: a lost hint must be found
    # well within it on Citus, where a replica dying between commit and NOTIFY loses one.
    assert watch_recheck_seconds(CitusRepository) == WATCH_RECHECK_UNHINTED_SECONDS <= 10.0
    assert watch_recheck_seconds(PostgresRepository) == WATCH_RECHECK_SECONDS
