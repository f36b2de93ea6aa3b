"""The in-memory store's search: instances' search values, filters evaluated in Python
(store.filters.matches, which answers what the SQL answers), listings by a search
field's value, counts by status."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from statewrightd.store.codec import to_micros
from statewrightd.store.filters import Filter, matches
from statewrightd.store.memory_state import ROWS, MemoryState
from statewrightd.store.ordering import compare, key_value, sort_key, with_tiebreaker
from statewrightd.store.records import InstanceRecord, ListOrder, OrderKey, SearchValues
from statewrightd.store.repository import Params


class MemorySearch(MemoryState):
    def replace_search(self, items: Sequence[tuple[str, int, SearchValues]]) -> int:
        replaced = 0
        with self._held():
            for workflow_id, revision, values in items:
                instance = self._instances.get(workflow_id)
                if instance is not None and instance.revision == revision:
                    instance.search = tuple(values)
                    replaced += 1
        return replaced

    def count_by_status(self, which: Filter | None = None) -> dict[str, int]:
        counts: dict[str, int] = {}
        with self._held():
            for i in self._instances.values():
                if which is None or matches(which.root, ROWS.instance(i.row), i.search):
                    counts[i.status] = counts.get(i.status, 0) + 1
        return counts

    def _instances_by_keys(
        self, p: Params, order: ListOrder
    ) -> list[tuple[InstanceRecord, tuple[Any, ...]]]:
        which: Filter | None = p.get("filter")
        keys = order.keys
        full = with_tiebreaker(keys)
        descending = [key.descending for key in full]
        after = p["after"]
        position = None if after is None else [*after, p["after_id"]][: len(full)]
        if position is not None:  # times as the rows hold them
            position = [to_micros(v) if isinstance(v, datetime) else v for v in position]
        found: list[tuple[list[Any], InstanceRecord, tuple[Any, ...]]] = []
        with self._held():
            for i in self._instances.values():
                record = ROWS.instance(i.row)
                if not (
                    (p["definition"] is None or record.definition == p["definition"])
                    and (p["status"] is None or record.status == p["status"])
                    and (p["id_prefix"] is None or record.workflow_id.startswith(p["id_prefix"]))
                    and (which is None or matches(which.root, record, i.search))
                ):
                    continue
                searched = [_first(i.search, key) for key in keys if key.value_column]
                if any(value is None for value in searched):
                    continue  # no value of a search key: not in that order
                values = iter(searched)
                row = [key_value(k, record, next(values) if k.value_column else None) for k in full]
                if position is None or compare(row, position, descending) > 0:
                    found.append((row, record, tuple(searched)))
        found.sort(key=lambda f: sort_key(descending)(f[0]))
        return [(record, searched) for _, record, searched in found[: p["limit"]]]

    def _instances_by_value(self, p: Params, order: ListOrder) -> list[tuple[InstanceRecord, Any]]:
        which: Filter | None = p.get("filter")
        name, after = p["order_field"], p["after_value"]
        position = None if after is None else (after, p["after_id"])
        found: list[tuple[Any, str, InstanceRecord]] = []
        with self._held():
            for i in self._instances.values():
                values = [
                    v.text if order.value_column == "text" else v.number
                    for v in i.search
                    if v.field == name
                ]
                if not values or values[0] is None:
                    continue
                key = (values[0], i.row[0])
                if position is not None and not (
                    key < position if order.descending else key > position
                ):
                    continue
                record = ROWS.instance(i.row)
                if (
                    (p["definition"] is None or record.definition == p["definition"])
                    and (p["status"] is None or record.status == p["status"])
                    and (p["id_prefix"] is None or record.workflow_id.startswith(p["id_prefix"]))
                    and (which is None or matches(which.root, record, i.search))
                ):
                    found.append((values[0], record.workflow_id, record))
        found.sort(key=lambda f: (f[0], f[1]), reverse=order.descending)
        return [(record, value) for value, _, record in found[: p["limit"]]]


def _first(search: SearchValues, key: OrderKey) -> Any:
    """An instance's value of the search key ``key`` (None: it has none)."""
    name = key.column.removeprefix("search.")
    for v in search:
        if v.field == name:
            return v.text if key.value_column == "text" else v.number
    return None
