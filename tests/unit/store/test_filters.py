"""List filters: the grammar, its SQL on SQLite and PostgreSQL (values only ever as
parameters), what the SQL answers on a real SQLite table compared with the in-memory
store's evaluation, and the errors of bad filters."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from statewrightd.domain import SearchKind, Status
from statewrightd.errors import InvalidArgument
from statewrightd.store.codec import to_micros
from statewrightd.store.filters import Filter, SqlFilter, matches, parse_filter
from statewrightd.store.records import InstanceRecord, SearchValue
from statewrightd.store.schema import migrate
from statewrightd.store.sql_builder import POSTGRES, SQLITE, _list_instances

FIELDS = {
    "customer": SearchKind.KEYWORD,
    "note": SearchKind.TEXT,
    "n": SearchKind.INT,
    "amount": SearchKind.NUMBER,
    "vip": SearchKind.BOOL,
    "due": SearchKind.TIMESTAMP,
    "tags": SearchKind.KEYWORD_LIST,
}


def parsed(text: str) -> Filter:
    found = parse_filter(text, FIELDS)
    assert found is not None
    return found


def sql_of(text: str, dialect: Any = SQLITE) -> tuple[str, dict[str, Any]]:
    compiled = SqlFilter(dialect.named)
    return compiled.condition(parsed(text).root), compiled.params


def test_a_blank_filter_is_none() -> None:
    assert parse_filter("  ", FIELDS) is None


@pytest.mark.parametrize(
    ("text", "sql", "params"),
    [
        ("state = review", "state = :f0", {"f0": "review"}),
        ("definition != order", "definition <> :f0", {"f0": "order"}),
        ("version >= 2", "version >= :f0", {"f0": 2}),
        ("status = waiting", "status = :f0", {"f0": "WAITING"}),
        (
            "create_time < 2026-01-02T03:04:05Z",
            "create_time < :f0",
            {"f0": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)},
        ),
        (
            "update_time > 2026-01-02T05:04:05+02:00",
            "update_time > :f0",
            {"f0": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)},
        ),
    ],
)
def test_columns_compile_to_a_comparison_with_a_parameter(
    text: str, sql: str, params: dict[str, Any]
) -> None:
    assert sql_of(text) == (sql, params)


SEARCH = "workflow_id IN (SELECT workflow_id FROM workflow_search WHERE field = :f0 AND {})"


@pytest.mark.parametrize(
    ("text", "test", "value"),
    [
        ('search.customer = "c-42"', "text = :f1", "c-42"),
        ("search.customer < m", "text < :f1", "m"),
        ("search.customer:c-42", "text = :f1", "c-42"),
        ('search.note:"Ada 50%_off"', "text LIKE :f1 ESCAPE '\\'", "%ada 50\\%\\_off%"),
        ("search.note = Hello", "text = :f1", "hello"),
        ("search.n <= 3", "number <= :f1", 3.0),
        ("search.amount > -2.5", "number > :f1", -2.5),
        ("search.amount != 1e3", "number <> :f1", 1000.0),
        ("search.vip = true", "number = :f1", 1.0),
        ("search.vip = false", "number = :f1", 0.0),
        ("search.due >= 1970-01-01T00:01:00Z", "number >= :f1", 60.0),
        ("search.tags:urgent", "text = :f1", "urgent"),
    ],
)
def test_each_search_kind_reads_its_column_by_field(text: str, test: str, value: object) -> None:
    sql, params = sql_of(text)
    assert sql == SEARCH.format(test)
    field = re.match(r"search\.(\w+)", text)
    assert field is not None
    assert params == {"f0": field.group(1), "f1": value}


def test_and_or_not_and_parentheses_keep_their_precedence() -> None:
    sql, params = sql_of("state = a OR state = b AND NOT (version = 1 OR -version = 2)")
    assert sql == (
        "(state = :f0 OR (state = :f1 AND NOT ((version = :f2 OR NOT (version = :f3)))))"
    )
    assert params == {"f0": "a", "f1": "b", "f2": 1, "f3": 2}


def test_postgres_placeholders() -> None:
    sql, params = sql_of('search.customer = "x" AND version = 1', POSTGRES)
    assert "%(f0)s" in sql and "%(f2)s" in sql and ":f" not in sql
    assert params == {"f0": "customer", "f1": "x", "f2": 1}


@pytest.mark.parametrize(
    "value",
    [
        "x'; DROP TABLE workflow_instances; --",
        'a\\" OR 1=1 --',
        "' OR ''='",
        "%(f0)s",
        ":f0",
        "?",
    ],
)
@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES])
def test_values_never_reach_the_statement(value: str, dialect: Any) -> None:
    quoted = '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    for text in (f"state = {quoted}", f"search.customer = {quoted}", f"search.note:{quoted}"):
        sql, params = sql_of(text, dialect)
        # The statement is the one a harmless value gives: the value is only a parameter.
        assert sql == sql_of(text.replace(quoted, '"v"'), dialect)[0]
        if "note" not in text:  # (a contains pattern holds it escaped for LIKE)
            assert value in params.values(), params


@pytest.mark.parametrize(
    ("text", "position", "problem"),
    [
        ("search.custmer = c", 0, "unknown field search.custmer, did you mean search.customer"),
        ("stat = RUNNING", 0, "unknown field stat, did you mean state"),
        ("status = NOPE", 9, "status is one of CANCELLED, COMPLETED, FAILED, RUNNING, WAITING"),
        ("search.amount = ten", 16, "search.amount wants a number, not 'ten'"),
        ("search.n = 1.5", 11, "search.n wants an integer, not '1.5'"),
        ("search.vip = yes", 13, "search.vip wants true or false, not 'yes'"),
        ("paused = yes", 9, "paused wants true or false, not 'yes'"),
        ("paused > true", 7, "paused cannot be compared with >"),
        ("create_time > yesterday", 14, "create_time wants an RFC 3339 time"),
        ("create_time > 2026-01-01T00:00:00", 14, "create_time wants an RFC 3339 time"),
        ("search.tags < a", 12, "search.tags cannot be compared with <"),
        ("state = a AND", 13, "the filter ends too early"),
        ("(state = a", 10, "the filter ends too early"),
        ("state = a b", 10, "unexpected 'b'"),
        ('state = "a', 8, "unexpected character '\"'"),
        ("state == a", 7, "unexpected '='"),
        ('state = "a\x00"', 10, "a filter cannot hold the NUL character"),
    ],
)
def test_bad_filters_name_position_and_problem(text: str, position: int, problem: str) -> None:
    with pytest.raises(InvalidArgument) as caught:
        parse_filter(text, FIELDS)
    error = caught.value
    assert error.reason == "INVALID_FILTER"
    assert error.metadata["position"] == str(position)
    assert str(error.metadata["problem"]).startswith(problem)


def test_too_long_or_too_many_terms_is_refused() -> None:
    with pytest.raises(InvalidArgument):
        parse_filter("state = a" + " OR state = a" * 200, FIELDS)
    with pytest.raises(InvalidArgument):
        parse_filter("x" * 3000, FIELDS)


# -- the SQL answers what the in-memory store answers -----------------------------------

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def _instance(i: int) -> tuple[InstanceRecord, tuple[SearchValue, ...]]:
    record = InstanceRecord(
        workflow_id=f"w-{i:03d}",
        definition="order" if i % 2 else "ticket",
        version=1 + i % 3,
        state=("review", "done")[i % 2],
        status=(Status.WAITING, Status.COMPLETED, Status.RUNNING)[i % 3],
        context={},
        revision=1,
        error=None,
        create_time=NOW.replace(day=1 + i % 28),
        update_time=NOW.replace(day=1 + i % 28, hour=13),
    )
    values = [SearchValue("customer", text=f"c-{i % 4}")] if i % 5 else []
    values += [SearchValue("note", text=f"order {i} for ada" if i % 7 == 0 else "plain")]
    values += [SearchValue("n", number=float(i % 6)), SearchValue("amount", number=i * 2.5)]
    values += [SearchValue("vip", number=float(i % 2))]
    values += [SearchValue("due", number=NOW.timestamp() + i * 3600)]
    values += [SearchValue("tags", text=t) for t in (["a", "b"] if i % 3 == 0 else ["c"])]
    return record, tuple(values)


FILTERS = [
    'search.customer = "c-1"',
    "search.customer != c-1",
    "NOT search.customer = c-1",
    "search.customer >= c-2",
    "search.note:ada",
    "search.note:ADA OR search.n = 5",
    "search.n < 2 AND search.vip = true",
    "search.amount >= 50 AND search.amount <= 100",
    "search.due > 2026-03-02T00:00:00Z",
    "search.tags:a AND NOT search.tags:c",
    "(definition = order OR version = 2) AND status != COMPLETED",
    "state = done AND create_time >= 2026-03-10T00:00:00Z",
    "update_time < 2026-03-05T13:00:00Z",
    "-status = WAITING",
]


@pytest.mark.parametrize("text", FILTERS)
def test_sqlite_answers_what_memory_answers(tmp_path: Path, text: str) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"
    migrate(url)
    instances = [_instance(i) for i in range(60)]
    with sqlite3.connect(tmp_path / "f.db") as conn:
        for r, values in instances:
            conn.execute(
                "INSERT INTO workflow_instances (workflow_id, definition, version, state,"
                " status, context, revision, create_time, update_time)"
                " VALUES (?, ?, ?, ?, ?, '{}', 1, ?, ?)",
                (
                    r.workflow_id,
                    r.definition,
                    r.version,
                    r.state,
                    str(r.status),
                    to_micros(r.create_time),
                    to_micros(r.update_time),
                ),
            )
            conn.executemany(
                "INSERT INTO workflow_search VALUES (?, ?, ?, ?)",
                [(r.workflow_id, v.field, v.text, v.number) for v in values],
            )
        which = parsed(text)
        compiled = SqlFilter(SQLITE.named)
        condition = compiled.condition(which.root)
        sql = _list_instances(SQLITE, "create_time", frozenset(), condition)
        params = {
            k: to_micros(v) if isinstance(v, datetime) else v for k, v in compiled.params.items()
        }
        found = {row[0] for row in conn.execute(sql, {**params, "limit": 1000})}
        plan = " ".join(
            row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", {**params, "limit": 1000})
        )
    expected = {r.workflow_id for r, values in instances if matches(which.root, r, values)}
    assert found == expected
    assert 0 < len(expected) < len(instances), "a filter that cannot tell instances apart"
    if "search." in text and re.search(r"search\.\w+ ?[=<>]", text):
        assert "workflow_search_" in plan, plan  # the search table is read by its index


def test_an_and_of_one_fields_comparisons_is_one_range_of_its_index() -> None:
    sql, params = sql_of("search.amount >= 5 AND state = a AND search.amount < 9")
    assert sql == (
        "(workflow_id IN (SELECT workflow_id FROM workflow_search WHERE field = :f0"
        " AND number >= :f1 AND number < :f2) AND state = :f3)"
    )
    assert params == {"f0": "amount", "f1": 5.0, "f2": 9.0, "f3": "a"}
    # A keyword list's elements are separate rows: each comparison is a set of its own.
    sql, _ = sql_of("search.tags:a AND search.tags:b")
    assert sql.count("SELECT workflow_id") == 2


def test_a_task_filter_compiles_over_the_task_columns() -> None:
    from statewrightd.store.filters import TASKS

    which = parse_filter(
        "workflow = workflows/w-1 AND NOT concurrency_key = k AND status = leased", {}, TASKS
    )
    assert which is not None
    compiled = SqlFilter(SQLITE.named, TASKS)
    assert compiled.condition(which.root) == (
        "(workflow_id = :f0 AND NOT ((concurrency_key IS NOT NULL AND concurrency_key = :f1))"
        " AND status = :f2)"
    )
    assert compiled.params == {"f0": "w-1", "f1": "k", "f2": "LEASED"}
    of_definition = parse_filter("definition != mail", {}, TASKS)
    assert of_definition is not None
    assert SqlFilter(SQLITE.named, TASKS).condition(of_definition.root) == (
        "workflow_id IN (SELECT workflow_id FROM workflow_instances WHERE definition <> :f0)"
    )
    for text in ("search.n = 1", "version = 1"):
        with pytest.raises(InvalidArgument):  # an instance's fields are none of a task's
            parse_filter(text, {}, TASKS)
