"""Listings in an order of several keys (AIP-132), on every backend: each order pages every
instance once, in the order a plain sort of the rows gives (ties by workflow id in the last
key's direction), while an instance is created between pages; an instance without a value
of a search key is not in that order; a token resumes only its own order and filter."""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import timedelta
from typing import Any

import pytest

from statewrightd.domain import SearchKind
from statewrightd.errors import InvalidArgument
from statewrightd.store import Repository
from statewrightd.store.filters import parse_filter
from statewrightd.store.records import InstanceRecord, ListOrder, OrderKey, SearchValue
from tests.integration.store.test_repository_contract import T0, create_op

ORDERS = [
    "update_time desc, search.amount",
    "definition, create_time desc",
    "status, state desc, search.customer",
    "state, name desc",
    "definition desc, update_time desc",
    "status",
]


def order_of(spelled: str) -> ListOrder:
    keys = []
    for part in spelled.split(", "):
        column, _, desc = part.partition(" ")
        column_of = {"search.amount": "number", "search.customer": "text"}
        keys.append(OrderKey(column, bool(desc), column_of.get(column, "")))  # type: ignore[arg-type]
    first = keys[0]
    return ListOrder(first.column, first.descending, first.value_column, tuple(keys[1:]))


def make(repo: Repository, i: int) -> tuple[InstanceRecord, dict[str, Any]]:
    values: list[SearchValue] = [SearchValue("customer", text=f"c-{i % 3}")]
    if i % 7 != 6:  # some have no amount: not listed in an order by it
        values.append(SearchValue("amount", number=float(i % 4)))
    op = create_op(
        f"w-{i:02d}",
        state=("draft", "review", "done")[i % 3],
        status=("RUNNING", "WAITING")[i % 2],
        definition=("mail", "order")[i // 10 % 2],
    )
    record = dataclasses.replace(
        op.record,
        create_time=T0 + timedelta(seconds=i % 5),
        update_time=T0 + timedelta(seconds=i % 3),
    )
    repo.create(dataclasses.replace(op, record=record, search=tuple(values)))
    search = {v.field: v.text if v.text is not None else v.number for v in values}
    return record, search


def expected(rows: list[tuple[InstanceRecord, dict[str, Any]]], order: ListOrder) -> list[str]:
    """A plain sort, key by key from the last (Python's sort is stable)."""
    keys = order.keys
    wanted = [r for r in rows if all(k.column[7:] in r[1] for k in keys if k.value_column)]

    def value(row: tuple[InstanceRecord, dict[str, Any]], key: OrderKey) -> Any:
        if key.value_column:
            return row[1][key.column[7:]]
        return row[0].workflow_id if key.column == "name" else getattr(row[0], key.column)

    ordered = sorted(wanted, key=lambda r: r[0].workflow_id, reverse=keys[-1].descending)
    for key in reversed(keys):
        ordered.sort(key=lambda r, key=key: value(r, key), reverse=key.descending)  # type: ignore[misc]
    return [r[0].workflow_id for r in ordered]


def test_each_order_pages_every_instance_once_in_its_order(repo: Repository, backend: str) -> None:
    rows = [make(repo, i) for i in range(20)]
    for late, spelled in enumerate(ORDERS, start=20):
        order = order_of(spelled)
        pages: list[str] = []
        token = ""
        for n in range(20):
            page = repo.list(order=order, page_size=3, page_token=token)
            pages.extend(r.workflow_id for r in page.items)
            if n == 0:  # a late instance: listed if it sorts after the first page, once
                rows.append(make(repo, late))
                full = expected(rows, order)
                want = pages + full[full.index(pages[-1]) + 1 :]
            token = page.next_page_token
            if not token:
                break
        assert pages == want, spelled


def test_a_filter_and_an_order_of_several_keys(repo: Repository, backend: str) -> None:
    rows = [make(repo, i) for i in range(20)]
    order = order_of("definition desc, update_time desc")
    which = parse_filter("state != done", {"amount": SearchKind.NUMBER})
    listed = repo.list(order=order, which=which, page_size=100).items
    kept = [r for r in rows if r[0].state != "done"]
    assert [r.workflow_id for r in listed] == expected(kept, order)


def test_a_token_resumes_only_its_own_order(repo: Repository) -> None:
    for i in range(5):
        make(repo, i)
    order = order_of("state, name desc")
    token = repo.list(order=order, page_size=2).next_page_token
    for other in (order_of("state desc, name desc"), ListOrder(), order_of("status")):
        with pytest.raises(InvalidArgument) as refused:
            repo.list(order=other, page_size=2, page_token=token)
        assert refused.value.reason == "INVALID_PAGE_TOKEN"
    raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    for values in ([1, 2], [1], [True, "x"], "x"):  # a tampered position is refused
        forged = base64.urlsafe_b64encode(json.dumps([raw[0], values, *raw[2:]]).encode())
        with pytest.raises(InvalidArgument):
            repo.list(order=order, page_size=2, page_token=forged.decode())
