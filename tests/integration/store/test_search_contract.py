"""Search values are written with the save that carries them, in its transaction: a save
whose compare-and-swap fails (or whose batch neighbour fails) leaves none, a save that
changes them replaces them, and the filter then answers from them. On every backend
(on Citus, within the node call of the step's shard group)."""

from __future__ import annotations

import dataclasses

import pytest

from statewrightd.domain import SearchKind
from statewrightd.errors import Conflict, InvalidArgument, StoreError
from statewrightd.store import Repository
from statewrightd.store.filters import Filter, parse_filter
from statewrightd.store.records import SearchValue
from tests.integration.store.test_repository_contract import create_op, save_op

FIELDS = {"customer": SearchKind.KEYWORD, "amount": SearchKind.NUMBER}


def which(text: str) -> Filter:
    found = parse_filter(text, FIELDS)
    assert found is not None
    return found


def ids(repo: Repository, text: str) -> list[str]:
    return [r.workflow_id for r in repo.list(which=which(text), page_size=100).items]


def test_search_values_follow_the_saves_that_succeed(repo: Repository, backend: str) -> None:
    c1 = (SearchValue("customer", text="c-1"), SearchValue("amount", number=10.0))
    first = repo.create(dataclasses.replace(create_op("w-1"), search=c1))
    repo.create(dataclasses.replace(create_op("w-2"), search=(SearchValue("amount", number=5.0),)))
    assert ids(repo, "search.customer = c-1") == ["w-1"]
    assert ids(repo, "search.amount >= 5") == ["w-1", "w-2"]

    # A save that loses its compare-and-swap writes no search value.
    saved = repo.save(
        dataclasses.replace(save_op(first), search=(SearchValue("customer", text="c-2"),))
    )
    assert saved == 2
    stale = dataclasses.replace(save_op(first), search=(SearchValue("customer", text="c-9"),))
    with pytest.raises(Conflict):
        repo.save(stale)
    assert ids(repo, "search.customer = c-9") == []
    # The successful one replaced every value of the instance (amount is gone).
    assert ids(repo, "search.customer = c-2") == ["w-1"]
    assert ids(repo, "search.amount >= 0") == ["w-2"]
    # A save that carries no search values leaves them as they are.
    repo.save(save_op(repo.load("w-1")))
    assert ids(repo, "search.customer = c-2") == ["w-1"]
    # A batch: the failed row writes nothing, its neighbour what it carries.
    current = repo.load("w-2")
    outcomes = repo.apply_batch(
        [
            dataclasses.replace(save_op(current), search=(SearchValue("customer", text="c-3"),)),
            dataclasses.replace(save_op(first), search=(SearchValue("customer", text="c-8"),)),
        ]
    )
    assert not isinstance(outcomes[0], StoreError)
    assert isinstance(outcomes[1], Conflict)
    assert ids(repo, "search.customer = c-3") == ["w-2"]
    assert ids(repo, "search.customer = c-8") == []
    counts = repo.count_by_status(which("search.customer >= c-2"))
    assert counts == {"RUNNING": 2}


SOURCE = """
name: mail-approval
version: 1
context:
  n: {type: int, default: 0}
search:
  n: {type: int, value: "context.n"}
  odd: {type: bool, value: "context.n % 2 == 1"}
states:
  draft: {wait: true}
  next: {wait: true}
transitions:
  - {from: draft, on: go, to: next}
  - {from: next, on: go, to: __finish__}
"""


def test_reprojection_fills_in_what_saves_did_not_write(repo: Repository, backend: str) -> None:
    from statewrightd.app.reproject import reproject
    from statewrightd.definitions import load_definition
    from statewrightd.store.records import DefinitionRecord
    from tests.integration.store.test_repository_contract import T0

    loaded = load_definition(SOURCE)
    repo.put_definition(
        DefinitionRecord("mail-approval", 1, SOURCE, loaded.digest, "mail.yaml", T0)
    )
    for i in range(7):  # saved without search values, as a server before them did
        repo.create(create_op(f"w-{i}", context={"n": i}))
    stale = repo.load("w-3")
    fields = {"n": SearchKind.INT, "odd": SearchKind.BOOL}
    some = parse_filter("search.n >= 0", fields)
    assert repo.list(which=some).items == []
    seen: list[tuple[int, int]] = []
    assert reproject(repo, page_size=3, progress=lambda r, n: seen.append((r, n))) == (7, 7)
    assert seen == [(3, 3), (6, 6), (7, 7)]
    odd = parse_filter("search.odd = true AND search.n > 1", fields)
    assert [r.workflow_id for r in repo.list(which=odd).items] == ["w-3", "w-5"]
    # A save since the read wins: its instance's values are not replaced.
    repo.save(dataclasses.replace(save_op(stale), search=(SearchValue("n", number=99.0),)))
    assert repo.replace_search([("w-3", stale.revision, (SearchValue("n", number=3.0),))]) == 0
    ninety_nine = parse_filter("search.n = 99", fields)
    assert [r.workflow_id for r in repo.list(which=ninety_nine).items] == ["w-3"]
    # Again: the same answer.
    assert reproject(repo, definition="mail-approval") == (7, 7)


@pytest.mark.parametrize("descending", [False, True])
def test_listing_by_a_search_field_pages_each_instance_once_in_order(
    repo: Repository, backend: str, descending: bool
) -> None:
    from statewrightd.store.records import ListOrder

    order = ListOrder("search.amount", descending=descending, value_column="number")
    amounts = [5.0, 1.0, 3.0, 3.0, 9.0, 1.0, 7.0, 3.0]
    for i, amount in enumerate(amounts):
        values = (SearchValue("amount", number=amount), SearchValue("customer", text=f"c-{i % 2}"))
        repo.create(dataclasses.replace(create_op(f"w-{i}"), search=values))
    repo.create(create_op("w-none"))  # no value: not in a listing by it
    expected = sorted(((a, f"w-{i}") for i, a in enumerate(amounts)), reverse=descending)
    pages, token = [], ""
    for _ in range(10):
        page = repo.list(order=order, page_size=3, page_token=token)
        pages.append([r.workflow_id for r in page.items])
        if len(pages) == 1:  # a late instance sorts where its value says
            late = (SearchValue("amount", number=0.5 if descending else 100.0),)
            repo.create(dataclasses.replace(create_op("w-late"), search=late))
        token = page.next_page_token
        if not token:
            break
    assert [w for p in pages for w in p] == [w for _, w in expected] + ["w-late"]
    filtered = repo.list(order=order, which=which("search.customer = c-1"), page_size=100)
    assert [r.workflow_id for r in filtered.items] == [
        w for _, w in expected if int(w[2:]) % 2 == 1
    ]
    with pytest.raises(InvalidArgument):  # a time listing's token is none of this one's
        repo.list(order=order, page_token=repo.list(page_size=1).next_page_token)
