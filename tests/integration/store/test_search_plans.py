"""A selective search filter is answered through indexes on PostgreSQL: the plan of a
ListWorkflows page and of a count never scans the instance table sequentially.

The rows are made by SQL (STATEWRIGHT_SEARCH_PLAN_ROWS, default 20,000: enough for the
planner to prefer its indexes; the acceptance run uses 100,000) and the tables analysed,
so the plans are the ones the planner chooses at that size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg

from statewrightd.domain import SearchKind
from statewrightd.store.filters import SqlFilter, parse_filter
from statewrightd.store.ordering import listing
from statewrightd.store.records import OrderKey
from statewrightd.store.sql_builder import POSTGRES, _list_instances

ROWS = int(os.environ.get("STATEWRIGHT_SEARCH_PLAN_ROWS", "20000"))
FIELDS = {"customer": SearchKind.KEYWORD, "amount": SearchKind.NUMBER}
SEED = """
INSERT INTO workflow_instances (workflow_id, definition, version, state, status, context,
                                revision, create_time, update_time)
SELECT 'w-' || i, 'order', 1, 'review', 'WAITING', '{}', 1,
       now() - i * interval '1 second', now() - i * interval '1 second'
  FROM generate_series(1, %(rows)s) AS i;
"""
SEED_SEARCH = """
INSERT INTO workflow_search (workflow_id, field, text, number)
SELECT 'w-' || i, 'customer', 'c-' || (i %% (%(rows)s / 10)), NULL
  FROM generate_series(1, %(rows)s) AS i
UNION ALL
SELECT 'w-' || i, 'amount', NULL, i FROM generate_series(1, %(rows)s) AS i;
"""


FILTERS = [
    'search.customer = "c-42"',
    'search.customer = "c-42" AND status = WAITING',
    f"search.amount > {ROWS - 10}",
    "search.amount >= 500 AND search.amount < 600",
    'search.customer = "c-7" OR search.customer = "c-8"',
    'NOT state = done AND (search.customer = "c-7" OR search.amount < 3)',
]
ORDERS = ["create_time", "create_time desc", "update_time desc"]


def seed(conn: psycopg.Connection[Any]) -> None:
    """ROWS instances with their search rows, the tables analysed."""
    conn.execute(SEED, {"rows": ROWS})
    conn.execute(SEED_SEARCH, {"rows": ROWS})
    conn.execute("ANALYZE workflow_instances")
    conn.execute("ANALYZE workflow_search")


def compiled_filters() -> Iterator[tuple[str, SqlFilter, str]]:
    """Each of FILTERS, its compiled filter (with its parameters) and its condition."""
    for text in FILTERS:
        which = parse_filter(text, FIELDS)
        assert which is not None
        compiled = SqlFilter(POSTGRES.named)
        yield text, compiled, compiled.condition(which.root)


def test_a_selective_search_filter_reads_no_instance_sequentially(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        seed(conn)
        for text, compiled, condition in compiled_filters():
            count = (
                f"SELECT status, count(*) FROM workflow_instances WHERE {condition} GROUP BY status"
            )
            plans = [conn.execute(f"EXPLAIN {count}", compiled.params).fetchall()]
            for order in ORDERS:
                sql = _list_instances(POSTGRES, order, frozenset(), condition)
                params = {**compiled.params, "limit": 101}
                assert conn.execute(sql, params).fetchall(), text  # it matches some
                plans.append(conn.execute(f"EXPLAIN {sql}", params).fetchall())
            for plan in plans:
                shown = "\n".join(row[0] for row in plan)
                assert "Seq Scan on workflow_instances" not in shown, (text, shown)
                assert "Seq Scan on workflow_search" not in shown, (text, shown)


def test_a_two_key_order_reads_an_index_in_order_on_postgres(postgres_url: str) -> None:
    """`status, create_time` (and a filter): the instances' index on (status, create_time,
    workflow_id) is read in order, past the page token's row value, and nothing is sorted."""
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(SEED, {"rows": ROWS})
        conn.execute("ANALYZE workflow_instances")
        keys = [OrderKey("status"), OrderKey("create_time")]
        which = parse_filter("state = review", FIELDS)
        assert which is not None
        compiled = SqlFilter(POSTGRES.named)
        condition = compiled.condition(which.root)
        for after in (False, True):
            sql = listing(POSTGRES, keys, [condition], after)
            params = {**compiled.params, "limit": 51, "k0": "WAITING", "after_id": "w-9"}
            params["k1"] = datetime(2000, 1, 1, tzinfo=UTC)
            assert conn.execute(sql, params).fetchall()
            shown = "\n".join(row[0] for row in conn.execute(f"EXPLAIN {sql}", params))
            assert "workflow_instances_status_created" in shown, shown
            assert "Sort" not in shown, shown
