"""The claim rules of flow control as pure functions (store/flow.py), and queues files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from statewrightd.app.queues import checked_config, read_queue_files
from statewrightd.errors import InvalidArgument
from statewrightd.store.flow import (
    AGING,
    KeyState,
    QueueConfig,
    QueueState,
    blocked_keys,
    plan_claim,
    ranked,
    refilled,
)
from statewrightd.store.records import TaskRecord
from tests.support.store_records import task_record

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def task(n: int, *, key: str | None = None, priority: int = 3, age: float = 0.0) -> TaskRecord:
    return task_record(
        f"w{n:03}",
        "1",
        NOW,
        state="s",
        queue="q",
        available_time=NOW - timedelta(seconds=age),
        priority=priority,
        concurrency_key=key,
    )


def state(config: QueueConfig, **kw: object) -> QueueState:
    values: dict[str, object] = {
        "tokens": float(config.bucket),
        "refill_time": NOW,
        "leased": 0,
        "leased_by_key": {},
        "keys": {},
    }
    values.update(kw)
    return QueueState(config, **values)  # type: ignore[arg-type]


def ids(tasks: list[TaskRecord]) -> list[str]:
    return [t.workflow_id for t in tasks]


def test_the_order_is_priority_then_turns_between_keys_then_age() -> None:
    tasks = [task(1, key="a", age=9), task(2, key="a", age=8), task(3, key="b", age=1)]
    tasks += [task(4, key="b", priority=1)]
    # b's priority 1 first (b's first turn); then a's first; then the second turns, by age.
    assert ids(ranked(tasks, {}, NOW)) == ["w004", "w001", "w002", "w003"]
    # A key served a moment ago waits for the keys served before it.
    keys = {
        "a": KeyState("a", last_lease_time=NOW),
        "b": KeyState("b", last_lease_time=NOW - timedelta(1)),
    }
    assert ids(ranked(tasks[:3], keys, NOW)) == ["w003", "w001", "w002"]


def test_a_waiting_task_climbs_one_priority_every_aging_period() -> None:
    old = task(1, priority=5, age=4 * AGING - 0.001)
    new = task(2, priority=1)
    assert ids(ranked([new, old], {}, NOW)) == ["w002", "w001"]
    older = task(3, priority=5, age=4 * AGING)
    assert ids(ranked([new, older], {}, NOW)) == ["w003", "w002"], "bounded: 4 x AGING"


def test_max_leased_counts_what_is_already_leased() -> None:
    config = QueueConfig("q", max_leased=3)
    claim = plan_claim(state(config, leased=2), [task(i) for i in range(5)], 10, NOW)
    assert ids(claim.chosen) == ["w000"]
    assert plan_claim(state(config, leased=3), [task(1)], 10, NOW).chosen == []


def test_key_limits_closed_keys_and_key_buckets() -> None:
    config = QueueConfig("q", key_max_leased=1, key_rate=1.0)
    keys = {
        "shut": KeyState("shut", closed_until=NOW + timedelta(seconds=1)),
        "dry": KeyState("dry", tokens=0.5, refill_time=NOW),
        "open": KeyState("open", closed_until=NOW),
    }
    st = state(config, leased_by_key={"full": 1}, keys=keys)
    assert blocked_keys(st, NOW) == ["dry", "full", "shut"]
    ready = [task(i, key=k) for i, k in enumerate(["shut", "dry", "full", "open", "open", "new"])]
    claim = plan_claim(st, ready, 10, NOW)
    assert ids(claim.chosen) == ["w003", "w005"]
    served = {k.key: k for k in claim.keys}
    assert served["open"].tokens == 0.0 and served["open"].last_lease_time == NOW
    assert served["open"].closed_until == NOW


def test_a_bucket_refills_at_its_rate_up_to_its_size() -> None:
    assert refilled(0.0, NOW, 2.0, 3, NOW + timedelta(seconds=1)) == 2.0
    assert refilled(0.0, NOW, 2.0, 3, NOW + timedelta(seconds=10)) == 3.0
    assert refilled(None, None, 2.0, 3, NOW) == 3.0
    config = QueueConfig("q", rate=2.0)
    claim = plan_claim(state(config, tokens=1.5), [task(i) for i in range(5)], 10, NOW)
    assert len(claim.chosen) == 1 and claim.tokens == 0.5


def test_configs_are_checked() -> None:
    assert checked_config("q", {"rate": 2, "burst": 4}, "config").bucket == 4
    assert QueueConfig("q", rate=2.5).bucket == 3
    for values in ({"rate": -1}, {"max_leased": 1.5}, {"rate": float("inf")}, {"speed": 1}):
        with pytest.raises(InvalidArgument):
            checked_config("q", values, "config")
    with pytest.raises(InvalidArgument):
        checked_config("Bad Name", {}, "config")


def test_queues_files_are_read_and_checked(tmp_path: Path) -> None:
    (tmp_path / "queues.yaml").write_text("queues:\n  pay: {max_leased: 5, rate: 20}\n")
    (tmp_path / "more.queues.yml").write_text("queues: {mail: {key_max_leased: 1}}\n")
    (tmp_path / "flow.yaml").write_text("name: flow\n")  # a definition: not read here
    configs = read_queue_files(tmp_path)
    assert [(c.queue, c.max_leased, c.rate, c.key_max_leased) for c in configs] == [
        ("mail", 0, 0.0, 1),
        ("pay", 5, 20.0, 0),
    ]
    (tmp_path / "again.queues.json").write_text('{"queues": {"pay": {"rate": 1}}}')
    with pytest.raises(InvalidArgument, match="also set in"):
        read_queue_files(tmp_path)
    (tmp_path / "again.queues.json").write_text('{"queues": {"pay2": {"rate": "fast"}}}')
    with pytest.raises(InvalidArgument, match=r"pay2\.rate"):
        read_queue_files(tmp_path)
