"""The statements' status tests by exclusion hold only while the tables allow exactly the
statuses the domain knows."""

from __future__ import annotations

import re
from pathlib import Path

import statewrightd.store
from statewrightd.domain import OPEN_TASK, TaskStatus
from statewrightd.store.sql_builder import task_status_in

MIGRATIONS = Path(statewrightd.store.__file__).parent / "migrations"


def checked_statuses(migration: Path) -> set[str]:
    text = migration.read_text()
    found = re.search(r"status\s+\w+\s+NOT NULL CHECK \(status IN\s*\(([^)]*)\)\)", text)
    assert found is not None, migration
    return {s.strip().strip("'") for s in found.group(1).split(",")}


def test_the_tasks_tables_allow_exactly_the_domains_statuses() -> None:
    for dialect in ("postgres", "sqlite"):
        assert checked_statuses(MIGRATIONS / dialect / "0003_tasks.sql") == set(TaskStatus)


def test_a_status_test_names_every_other_status() -> None:
    assert task_status_in("k.status", OPEN_TASK) == (
        "k.status NOT IN ('COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT')"
    )
    assert task_status_in("status", [TaskStatus.LEASED]) == (
        "status NOT IN ('SCHEDULED', 'BACKOFF', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT')"
    )
