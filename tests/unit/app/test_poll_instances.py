"""A poll's read of its leases' instances is a speed-up: when it fails, the leases stand."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import pytest

from statewrightd import errors
from statewrightd.app.tasks import _instances
from statewrightd.engine.loading import Found
from statewrightd.store.records import InstanceRecord, TaskRecord
from tests.support.store_records import task_record

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def test_a_failed_read_of_the_leases_instances_loses_only_the_speed_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tasks = [task_record("w", "1", NOW, leased="t")]

    def down(_: Sequence[TaskRecord], __: Mapping[str, InstanceRecord]) -> dict[str, Found]:
        raise errors.StorageUnavailable("the database went away after the lease")

    def broken(_: Sequence[TaskRecord], __: Mapping[str, InstanceRecord]) -> dict[str, Found]:
        raise ZeroDivisionError

    with caplog.at_level(logging.DEBUG, logger="statewrightd.app.tasks"):
        assert _instances(down, tasks, {}) == {}
        assert _instances(broken, tasks, {}) == {}
    logged = [(r.levelno, r.exc_info is not None) for r in caplog.records]
    assert logged == [(logging.DEBUG, False), (logging.ERROR, True)], "a bug is shown whole"
    assert _instances(None, tasks, {}) == {} and _instances(down, [], {}) == {}
