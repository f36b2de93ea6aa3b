"""Declarative schedules: a definitions directory's ``*.schedules.yaml`` files, applied
to the in-memory store through the same use cases the API calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest

from statewrightd import errors
from statewrightd.app.schedule_files import ScheduleFiles, entry_document
from statewrightd.app.schedules import Schedules
from statewrightd.engine.clock import Clock
from statewrightd.store.memory import MemoryRepository

T = TypeVar("T")

FILE = """
schedules:
  - id: nightly
    definition: report
    cron: "0 2 * * *"
    time_zone: Europe/Berlin
    catchup_window: 1h
    paused: true
    input: {kind: nightly}
"""


async def _read(fn: Callable[[], T]) -> T:
    return fn()


def schedules(repo: MemoryRepository) -> Schedules:
    # Applying files neither starts nor triggers: no registry or workflows are needed.
    return Schedules(
        repo=repo, registry=cast(Any, None), read=_read, clock=Clock(),
        workflows=cast(Any, None), poke=lambda: None,
    )  # fmt: skip


def test_a_schedules_file_creates_updates_and_never_overrides_an_api_change(
    tmp_path: Path,
) -> None:
    repo = MemoryRepository()
    cases = schedules(repo)
    path = tmp_path / "reports.schedules.yaml"
    path.write_text(FILE, encoding="utf-8")
    files = ScheduleFiles(cases, tmp_path)
    assert asyncio.run(files.apply()) == 1
    made = repo.get_schedule("nightly")
    assert made is not None
    doc = made.document
    assert doc["source"] == "file:reports.schedules.yaml" and doc["state"]["paused"] is True
    assert doc["spec"]["cron"] == ["0 2 * * *"] and doc["policies"]["catchup_window"] == 3600.0
    assert asyncio.run(files.apply()) == 0  # unchanged: nothing to do
    # A changed file updates the schedule it made; a pause through the API is kept.
    asyncio.run(cases.pause("nightly", False, "go", "ann"))
    path.write_text(FILE.replace("0 2 * * *", "0 3 * * *"), encoding="utf-8")
    assert asyncio.run(files.apply()) == 1
    updated = repo.get_schedule("nightly")
    assert updated is not None
    assert updated.document["spec"]["cron"] == ["0 3 * * *"]
    assert updated.document["state"]["paused"] is False
    # Once the API changed it, the file no longer does.
    api_spec = {**updated.document["spec"], "cron": ["0 4 * * *"]}
    asyncio.run(cases.update("nightly", {"spec": api_spec}, 0))
    path.write_text(FILE.replace("0 2 * * *", "0 5 * * *"), encoding="utf-8")
    assert asyncio.run(files.apply()) == 0
    kept = repo.get_schedule("nightly")
    assert kept is not None and kept.document["spec"]["cron"] == ["0 4 * * *"]


@pytest.mark.parametrize(
    "entry",
    [{"definition": "x", "cron": "* * * * *"}, {"id": "a", "definition": "x"},
     {"id": "a", "definition": "x", "interval": "soon"},
     {"id": "a", "definition": "x", "interval": "1m", "overlap": "SOMETIMES"},
     {"id": "a", "definition": "x", "interval": "1m", "colour": "red"}],
)  # fmt: skip
def test_entries_that_cannot_fire_are_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(errors.InvalidArgument):
        entry_document(entry)
