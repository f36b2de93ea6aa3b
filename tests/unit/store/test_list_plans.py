"""Every order of ListWorkflows reads an index in its order on SQLite: no listing sorts the
whole table to find one page (PostgreSQL has the same indexes, from the same migrations)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from statewrightd.store.ordering import listing
from statewrightd.store.records import OrderKey
from statewrightd.store.schema import migrate
from statewrightd.store.sql_builder import SQLITE, _list_instances

ORDERS = ("create_time desc", "create_time", "update_time desc", "update_time")
PARAMS = {
    "after_time": 0,
    "after_id": "",
    "definition": "mail",
    "status": "RUNNING",
    "id_prefix": "order-",
    "prefix_length": 6,
    "limit": 26,
}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("given", [(), ("after_time",), ("after_time", "id_prefix")])
def test_each_order_reads_an_index_and_sorts_nothing(
    tmp_path: Path, order: str, given: tuple[str, ...]
) -> None:
    migrate(f"sqlite:///{tmp_path / 'plans.db'}")
    with sqlite3.connect(tmp_path / "plans.db") as conn:
        sql = _list_instances(SQLITE, order, frozenset(given))
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", PARAMS)]
    assert not any("TEMP B-TREE" in step for step in plan), plan
    assert any("USING INDEX" in step for step in plan), plan


# Orders of several keys whose keys run one way, over an index's columns: the keyset
# position is one row value, which the index answers as a range, in its order.
KEYED = ("status, create_time", "definition desc, create_time desc")


@pytest.mark.parametrize("spelled", KEYED)
@pytest.mark.parametrize("after", [False, True])
def test_an_order_of_several_keys_of_one_direction_reads_an_index_in_order(
    tmp_path: Path, spelled: str, after: bool
) -> None:
    keys = [OrderKey(k.split(" ")[0], k.endswith(" desc")) for k in spelled.split(", ")]
    sql = listing(SQLITE, keys, [], after)
    params = {"k0": "RUNNING", "k1": 0, "after_id": "", "limit": 26}
    migrate(f"sqlite:///{tmp_path / 'plans.db'}")
    with sqlite3.connect(tmp_path / "plans.db") as conn:
        plan = [row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
    assert not any("TEMP B-TREE" in step for step in plan), plan
    assert any("USING INDEX" in step or "USING COVERING INDEX" in step for step in plan), plan
