"""Instance listings in an order of several keys (AIP-132's ``update_time desc,
search.amount``), read page by page past the last row's values (keyset pagination).

A key is an instance column (create_time, update_time, definition, state, status, or name:
the workflow id) or a search field; ties of the keys are broken by the workflow id in the
last key's direction, so the order is total and a page token (its last row's values and
id) resumes it exactly: an instance started while the listing is read never shifts a later
page. An instance without a value of a search key is not listed in that order (as a
listing by one search field lists only the instances with a value).

The statement is built here from the keys alone (names from a whitelist, a search field's
name and every value as a parameter), for SQLite and PostgreSQL alike; keys of one
direction are compared as one row value, which an index on those columns serves.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Final

from statewrightd.store import rows
from statewrightd.store.codec import to_micros
from statewrightd.store.records import InstanceRecord, ListOrder, OrderKey

Params = dict[str, Any]

# The instance columns a key may name, and "name" (the workflow id, the tiebreaker).
TIME_KEYS: Final = ("create_time", "update_time")
TEXT_KEYS: Final = ("definition", "state", "status", "name")
_SQL_OF: Final = {"name": "workflow_id"}
INSTANCE_COLUMNS: Final = rows.listed(rows.INSTANCE)


def listing_conditions(
    d: Callable[[str], str], given: frozenset[str], condition: str = ""
) -> list[str]:
    """An instance listing's filters: of definition, status and id_prefix when ``given``
    names them, and ``condition``, a list filter's (store.filters: values as parameters)."""
    where = [f"definition = {d('definition')}"] * ("definition" in given)
    where += [f"status = {d('status')}"] * ("status" in given)
    # substr, not LIKE: '_' is a LIKE wildcard and SQLite's LIKE ignores case.
    prefix = f"substr(workflow_id, 1, {d('prefix_length')}) = {d('id_prefix')}"
    where += [prefix] * ("id_prefix" in given)
    return where + [condition] * bool(condition)


def sql_expression(key: OrderKey, at: int) -> str:
    """The SQL of the ``at``-th key: a column, or its search join's value."""
    if key.value_column:
        assert key.value_column in ("text", "number")  # never text of a request
        return f"s{at}.{key.value_column}"
    assert key.column in TIME_KEYS or key.column in TEXT_KEYS  # a whitelisted name only
    return _SQL_OF.get(key.column, key.column)


def with_tiebreaker(keys: Sequence[OrderKey]) -> tuple[OrderKey, ...]:
    """The keys, then the workflow id in the last key's direction unless a key is it."""
    if any(key.column == "name" for key in keys):
        return tuple(keys)
    return (*keys, OrderKey("name", keys[-1].descending))


def listing(
    named: Callable[[str], str],
    keys: Sequence[OrderKey],
    conditions: Sequence[str],
    after: bool,
) -> str:
    """A page of instances in the order of ``keys`` (then the id), past the position
    ``k0``, ``k1``... (one parameter per key; ``after_id`` for the id) when ``after``;
    ``conditions`` are the listing's other filters, already in SQL. Each search key is a
    join with its field's rows (field ``kf<n>``), whose value is selected after the
    instance's columns."""
    full = with_tiebreaker(keys)
    exprs = [sql_expression(key, i) for i, key in enumerate(full)]
    places = [named(f"k{i}") for i in range(len(keys))] + [named("after_id")] * (
        len(full) > len(keys)
    )
    joins, where = [], list(conditions)
    for i, key in enumerate(keys):
        if key.value_column:
            # USING merges the workflow_id columns: an unqualified one names it anywhere.
            joins.append(f" JOIN workflow_search s{i} USING (workflow_id)")
            where.append(f"s{i}.field = {named(f'kf{i}')} AND {exprs[i]} IS NOT NULL")
    if after:
        where.append(_past(exprs, places, [key.descending for key in full]))
    values = "".join(f", {exprs[i]}" for i, key in enumerate(keys) if key.value_column)
    filtered = f" WHERE {' AND '.join(where)}" if where else ""
    by = ", ".join(f"{e}{' DESC' * key.descending}" for e, key in zip(exprs, full, strict=True))
    return (
        f"SELECT {INSTANCE_COLUMNS}{values} FROM workflow_instances{''.join(joins)}{filtered}"
        f" ORDER BY {by} LIMIT {named('limit')}"
    )


def statement(
    named: Callable[[str], str], order: ListOrder, condition: str, params: Params
) -> tuple[str, Params]:
    """The statement of a page of instances in ``order`` (by its keys) and its parameters,
    from a listing's (definition, status, id_prefix, after, after_id, limit) and its
    filter's ``condition`` (already in SQL, its values in ``params``)."""
    given = frozenset(n for n in ("definition", "status", "id_prefix") if params[n] is not None)
    keys, params = order.keys, dict(params)
    after = params.pop("after")
    conditions = listing_conditions(named, given, condition)
    for i, key in enumerate(keys):
        if after is not None:
            params[f"k{i}"] = after[i]
        if key.value_column:
            params[f"kf{i}"] = key.column.removeprefix("search.")
    return listing(named, keys, conditions, after is not None), params


def _past(exprs: list[str], places: list[str], descending: list[bool]) -> str:
    """Rows past the position in the order: lexicographic over runs of keys of one
    direction, each run compared as one row value ((a, b) > (x, y)), which is what an
    index on those columns answers with a range."""
    runs: list[tuple[list[str], list[str], bool]] = []
    for expr, place, desc in zip(exprs, places, descending, strict=True):
        if runs and runs[-1][2] == desc:
            runs[-1][0].append(expr)
            runs[-1][1].append(place)
        else:
            runs.append(([expr], [place], desc))

    def row(values: list[str]) -> str:
        return f"({', '.join(values)})"

    def past(at: int) -> str:
        left, right, desc = runs[at]
        beyond = f"{row(left)} {'<' if desc else '>'} {row(right)}"
        if at == len(runs) - 1:
            return beyond
        return f"({beyond} OR ({row(left)} = {row(right)} AND {past(at + 1)}))"

    if len(runs) == 1:
        return past(0)
    # The first key's bound, implied by the rest, is a range the first key's index reads.
    first = f"{exprs[0]} {'<=' if descending[0] else '>='} {places[0]}"
    return f"{first} AND {past(0)}"


# -- values, and the order in Python (the in-memory store) --------------------------------


def key_value(key: OrderKey, record: InstanceRecord, searched: Any = None) -> Any:
    """The value of ``key`` for ``record`` as a page token holds it (a time in
    microseconds); ``searched`` is its search field's value for a search key."""
    if key.value_column:
        return searched
    if key.column == "name":
        return record.workflow_id
    value = getattr(record, key.column)
    return to_micros(value) if isinstance(value, datetime) else str(value)


def compare(a: Sequence[Any], b: Sequence[Any], descending: Sequence[bool]) -> int:
    """-1, 0 or 1: whether values ``a`` come before, with or after ``b`` in the order."""
    for x, y, desc in zip(a, b, descending, strict=True):
        if x != y:
            return (-1 if x < y else 1) * (-1 if desc else 1)
    return 0


def sort_key(descending: Sequence[bool]) -> Callable[[Sequence[Any]], Any]:
    """A sort key over rows of values in the order (for ``sorted``)."""
    return functools.cmp_to_key(functools.partial(_cmp, descending=descending))


def _cmp(a: Sequence[Any], b: Sequence[Any], descending: Sequence[bool]) -> int:
    return compare(a, b, descending)
