"""The Citus writer's routing and statements, without a cluster: Citus's hash, the shard
map, how a batch becomes node calls, and the shard templates' placeholders."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from statewrightd.domain import Status
from statewrightd.errors import StorageUnavailable
from statewrightd.store import sql_citus
from statewrightd.store.citus import plan_calls
from statewrightd.store.citus_routing import Shard, ShardMap, hash_text
from statewrightd.store.codec import encode_op
from statewrightd.store.records import Create, HistoryRecord, InstanceRecord, Save, SearchValue

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # PostgreSQL's own answers (SELECT hashtext(...)): every tail length, and UTF-8.
        ("", -1477818771),
        ("a", 1075015857),
        ("order-1", -1797687605),
        ("abcdefghijkl", -1586087212),
        ("abcdefghijklm", 405849808),
        ("ünïcödé", -1331701621),
    ],
)
def test_the_hash_is_postgresql_s_hashtext(text: str, expected: int) -> None:
    assert hash_text(text) == expected


def _two_nodes() -> ShardMap:
    # Citus's layout of 4 shards: equal ranges over the 32-bit hashes.
    step = 1 << 30
    return ShardMap(
        Shard(-(1 << 31) + i * step, -(1 << 31) + (i + 1) * step - 1, 1 + i % 2) for i in range(4)
    )


def test_a_shard_map_places_every_hash_and_has_a_route_to_each_node() -> None:
    shards = _two_nodes()
    assert shards.groups == (1, 2)
    for group in shards.groups:
        assert shards.group_of(shards.route(group)) == group
    assert {shards.group_of(f"w-{i}") for i in range(50)} == {1, 2}


def test_a_map_with_a_hole_refuses_rather_than_guesses() -> None:
    holey = ShardMap([Shard(0, 10, 1)])
    with pytest.raises(StorageUnavailable):
        holey.group_of("order-1")  # its hash is negative: no shard holds it


def _rec(wid: str, revision: int = 1) -> InstanceRecord:
    return InstanceRecord(wid, "d", 1, "s", Status.RUNNING, {}, revision, None, T0, T0)


def _history(rec: InstanceRecord) -> HistoryRecord:
    return HistoryRecord(rec.workflow_id, rec.revision, None, [], "s", Status.RUNNING, {}, None, T0)


def test_a_batch_becomes_one_call_per_node_with_an_instance_s_steps_in_waves() -> None:
    shards = _two_nodes()
    ids = [f"w-{i}" for i in range(12)]
    ops: list[Create | Save] = [Create(_rec(w), _history(_rec(w))) for w in ids]
    again = _rec(ids[0], 2)
    ops.append(Save(again, 1, _history(again)))
    encoded = [encode_op(op) for op in ops]
    calls = plan_calls(encoded, range(len(encoded)), shards)
    assert sorted(c.group for c in calls) == [1, 2]
    assert sorted(i for c in calls for i in c.positions) == list(range(len(ops)))
    for call in calls:
        assert {shards.group_of(ids[i % 12]) for i in call.positions} == {call.group}
        assert shards.group_of(call.route) == call.group
    first = next(c for c in calls if 0 in c.positions)
    # The creates, then (a second wave) the save of w-0: its rows locked first.
    assert first.statements[0] == sql_citus.CREATE_ROWS[False, False, False]
    assert first.statements[1:] == [sql_citus.LOCK_ROWS, sql_citus.SAVE_ROWS[False, False, False]]


def test_a_step_with_search_values_writes_them_in_its_own_statement() -> None:
    shards = _two_nodes()
    values = (SearchValue("customer", text="c-1"), SearchValue("amount", number=2.5))
    created = Create(_rec("w-1"), _history(_rec("w-1")), search=values)
    plain = Create(_rec("w-2"), _history(_rec("w-2")))
    encoded = [encode_op(created), encode_op(plain)]
    for call in plan_calls(encoded, range(2), shards):
        (statement,) = call.statements
        rows = json.loads(call.batches[0])
        if 0 in call.positions:
            # The kind with search values: their rows go in with the instance's.
            assert statement == sql_citus.CREATE_ROWS[False, False, True]
            assert "search_new" in statement and "%7$s" in statement
            mine = next(r for r in rows if r["workflow_id"] == "w-1")
            assert mine["s_values"] == [
                {"field": "customer", "text": "c-1", "number": None},
                {"field": "amount", "text": None, "number": 2.5},
            ]
        if 1 in call.positions and 0 not in call.positions:
            assert statement == sql_citus.CREATE_ROWS[False, False, False]
            assert "workflow_search" not in statement and "%7$s" not in statement


_TEMPLATES = {
    name: value
    for name, value in vars(sql_citus).items()
    if name.isupper() and isinstance(value, str) and "%" in value
} | {
    f"{name}{key}": value
    for name in ("CREATE_ROWS", "SAVE_ROWS")
    for key, value in getattr(sql_citus, name).items()
}


@pytest.mark.parametrize("name", sorted(_TEMPLATES))
def test_a_template_names_only_shard_tables_and_its_inputs(name: str) -> None:
    template = _TEMPLATES[name]
    # Every % is a shard table (format's %N$s, N in 1..8); no table is named directly.
    assert re.findall(r"%[^1-8]|%[1-8](?!\$s)", template) == []
    for table in sql_citus.TABLES:
        assert re.search(rf"\b{table}\b", template) is None, table
    assert "%(" not in template
