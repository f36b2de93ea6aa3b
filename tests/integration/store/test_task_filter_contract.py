"""ListTasks' filter (AIP-160, store.filters over TASKS) on every backend: each filter lists
the tasks its rule says, with the same answer on PostgreSQL, SQLite, Citus and in memory
(a field with no value matches no comparison, and NOT of one matches it), pages in
schedule order, and a token belongs to its filter."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest

from statewrightd.domain import TaskStatus
from statewrightd.errors import InvalidArgument
from statewrightd.store import Repository
from statewrightd.store.filters import TASKS, Filter, parse_filter
from statewrightd.store.records import Create, TaskChange, TaskRecord
from tests.integration.store.test_tasks_contract import NOW, history, instance, lease, task


def which(text: str) -> Filter:
    found = parse_filter(text, {}, TASKS)
    assert found is not None
    return found


def seed(repo: Repository) -> None:
    for n in range(12):
        rec = dataclasses.replace(instance(f"f-{n:02d}"), definition=_definition(n))
        made = task(rec, ("alpha", "beta")[n % 2])
        made = dataclasses.replace(
            made,
            priority=1 + n % 5,
            concurrency_key=f"key-{n % 3}" if n % 4 else None,
            schedule_time=NOW + timedelta(seconds=n),
        )
        repo.create(Create(rec, history(rec), tasks=TaskChange(schedule=made)))
    lease(repo, "alpha", n=3)  # alpha's three first (by priority), leased at NOW


def _definition(n: int) -> str:
    return "billing" if n % 3 == 0 else "tasked"


def _n(t: TaskRecord) -> int:
    return int(t.workflow_id.removeprefix("f-"))


LATER = (NOW + timedelta(minutes=30)).isoformat().replace("+00:00", "Z")
RULES: list[tuple[str, Callable[[TaskRecord], bool]]] = [
    ("queue = alpha", lambda t: t.queue == "alpha"),
    ("definition = billing", lambda t: _definition(_n(t)) == "billing"),
    (
        "NOT definition = billing AND queue = beta",
        lambda t: _definition(_n(t)) != "billing" and t.queue == "beta",
    ),
    ("status = leased", lambda t: t.status is TaskStatus.LEASED),
    ("queue = beta AND priority <= 2", lambda t: t.queue == "beta" and t.priority <= 2),
    ('concurrency_key = "key-1"', lambda t: t.concurrency_key == "key-1"),
    ("NOT concurrency_key = key-1", lambda t: t.concurrency_key != "key-1"),
    (
        "attempt >= 1 OR workflow = workflows/f-11",
        lambda t: t.attempt >= 1 or t.workflow_id == "f-11",
    ),
    (f"lease_expire_time < {LATER}", lambda t: t.lease_expire_time is not None),
    (f"-lease_expire_time < {LATER}", lambda t: t.lease_expire_time is None),
    (
        f"schedule_time >= {(NOW + timedelta(seconds=6)).isoformat()} AND state = charging",
        lambda t: t.schedule_time >= NOW + timedelta(seconds=6),
    ),
]


def test_each_filter_lists_the_tasks_its_rule_says(repo: Repository) -> None:
    seed(repo)
    everything = repo.list_tasks(page_size=100).items
    assert len(everything) == 12
    for text, rule in RULES:
        expected = [t.workflow_id for t in everything if rule(t)]
        assert expected, text  # every rule matches some, and not all
        assert len(expected) < 12, text
        pages: list[str] = []
        token = ""
        for _ in range(20):
            page = repo.list_tasks(which=which(text), page_size=2, page_token=token)
            pages += [t.workflow_id for t in page.items]
            token = page.next_page_token
            if not token:
                break
        assert pages == expected, text


def test_a_token_belongs_to_its_filter(repo: Repository) -> None:
    seed(repo)
    token = repo.list_tasks(which=which("queue = alpha"), page_size=2).next_page_token
    assert token
    for other in (None, which("queue = beta")):
        with pytest.raises(InvalidArgument) as refused:
            repo.list_tasks(which=other, page_size=2, page_token=token)
        assert refused.value.reason == "INVALID_PAGE_TOKEN"


def test_a_bad_task_filter_names_its_position_and_problem() -> None:
    for text, position, problem in (
        ("version = 1", 0, "unknown field version, did you mean revision"),
        (
            "status = RUNNING",
            9,
            "status is one of BACKOFF, CANCELLED, COMPLETED, FAILED, "
            "LEASED, SCHEDULED, TIMED_OUT, not 'RUNNING'",
        ),
        ("queue = a AND", 13, "the filter ends too early"),
        ("priorty > 2", 0, "unknown field priorty, did you mean priority"),
        ("search.amount > 2", 0, "unknown field search.amount"),
    ):
        with pytest.raises(InvalidArgument) as refused:
            which(text)
        assert refused.value.reason == "INVALID_FILTER"
        assert refused.value.metadata["position"] == str(position), text
        assert refused.value.metadata["problem"] == problem, text
