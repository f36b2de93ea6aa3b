"""Search fields and list filters over real gRPC on PostgreSQL, SQLite and Citus: ListWorkflows
`filter` with known answers, a filtered listing paged while instances start, CountWorkflows,
and a bad filter's ErrorInfo.

The number of instances is STATEWRIGHT_SEARCH_E2E_INSTANCES (default 120: the CI budget);
the answers are computed from the inputs, so any count checks the same rules.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import grpc
import pytest
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.e2e.conftest import WITH_CITUS
from tests.support.api import Client, expect_error
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

COUNT = int(os.environ.get("STATEWRIGHT_SEARCH_E2E_INSTANCES", "120"))

ORDER = """
name: search-order
version: 1
context:
  customer: {type: string, default: ""}
  total: {type: number, default: 0}
  tags: {type: list, default: []}
  note: {type: string, default: ""}
search:
  customer: {type: keyword, value: "context.customer"}
  amount: {type: number, value: "context.total"}
  tags: {type: keyword_list, value: "context.tags"}
  note: {type: text, value: "context.note"}
  approved: {type: bool, value: "workflow.state == 'done'"}
states:
  review: {wait: true}
  done: {wait: true}
transitions:
  - {from: review, on: approve, to: done}
  - {from: done, on: close, to: __finish__}
"""
TICKET = """
name: search-ticket
version: 1
context:
  customer: {type: string, default: ""}
  priority: {type: int, default: 3}
search:
  customer: {type: keyword, value: "context.customer"}
  priority: {type: int, value: "context.priority"}
states:
  open: {wait: true}
transitions:
  - {from: open, on: close, to: __finish__}
"""


@pytest.fixture(scope="module", params=WITH_CITUS)
def module_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def search_server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("search")
    definitions = definitions_dir(
        Path(root) / "definitions",
        examples=False,
        test_definitions=False,
        extra={"order.yaml": ORDER, "ticket.yaml": TICKET},
    )
    with running_server(module_database_url, definitions, cwd=root) as server:
        yield server
    assert "Traceback" not in server.log(), server.log()


@pytest.fixture(scope="module")
def seeded(search_server: ServerProcess) -> dict[str, dict[str, object]]:
    """Instances of both definitions, with what each was started with."""
    made: dict[str, dict[str, object]] = {}
    with Client(search_server.target) as client:
        for i in range(COUNT):
            if i % 3 == 2:
                given: dict[str, object] = {"customer": f"c-{i % 5}", "priority": i % 4}
                wid = client.start("search-ticket", input=given).workflow.workflow_id
                made[wid] = {"definition": "search-ticket", **given}
                continue
            tags = ["urgent"] if i % 4 == 0 else (["bulk", "slow"] if i % 4 == 1 else [])
            given = {
                "customer": f"c-{i % 5}",
                "total": float(i * 10),
                "tags": tags,
                "note": f"Order number {i} for Ada" if i % 7 == 0 else f"order {i}",
            }
            wid = client.start("search-order", input=given).workflow.workflow_id
            approved = i % 6 == 0
            if approved:
                client.resume(wid, "approve")
            made[wid] = {"definition": "search-order", "approved": approved, **given}
    return made


@pytest.fixture
def client(search_server: ServerProcess) -> Iterator[Client]:
    with Client(search_server.target) as c:
        yield c


def listed(client: Client, text: str, order_by: str = "", page_size: int = 100) -> list[str]:
    out: list[str] = []
    token = ""
    for _ in range(200):
        request = pb.ListWorkflowsRequest(
            filter=text, order_by=order_by, page_size=page_size, page_token=token
        )
        page = client.stub.ListWorkflows(request, timeout=client.timeout)
        out.extend(w.workflow_id for w in page.workflows)
        token = page.next_page_token
        if not token:
            return out
    raise AssertionError("the listing did not end")


def test_filters_answer_what_the_inputs_say(
    client: Client, seeded: dict[str, dict[str, object]]
) -> None:
    def where(rule: object) -> set[str]:
        return {wid for wid, given in seeded.items() if rule(given)}  # type: ignore[operator]

    def order(g: dict[str, object]) -> bool:
        return g["definition"] == "search-order"

    cases = {
        'search.customer = "c-1"': where(lambda g: g["customer"] == "c-1"),
        'definition = search-order AND search.customer = "c-1"': where(
            lambda g: order(g) and g["customer"] == "c-1"
        ),
        "search.amount >= 500 AND search.amount < 900": where(
            lambda g: order(g) and 500 <= g["total"] < 900
        ),
        'search.customer = "c-0" OR search.customer = "c-4"': where(
            lambda g: g["customer"] in ("c-0", "c-4")
        ),
        "search.tags:urgent": where(lambda g: order(g) and "urgent" in g["tags"]),
        'NOT search.tags:"bulk" AND definition = search-order': where(
            lambda g: order(g) and "bulk" not in g["tags"]
        ),
        'search.note:"ada"': where(lambda g: order(g) and "Ada" in g["note"]),
        "search.approved = true": where(lambda g: order(g) and g["approved"]),
        "status = WAITING AND (search.priority <= 1 OR search.amount > 1100)": where(
            lambda g: (not order(g) and g["priority"] <= 1) or (order(g) and g["total"] > 1100)
        ),
        "create_time > 2000-01-01T00:00:00Z AND create_time < 2999-01-01T00:00:00Z": set(seeded),
        f"update_time > {datetime.now(UTC).year + 1}-01-01T00:00:00Z": set(),
    }
    for text, expected in cases.items():
        assert set(listed(client, text)) == expected, text
        count = client.stub.CountWorkflows(pb.CountWorkflowsRequest(filter=text))
        assert count.total == len(expected), text
        assert sum(c.count for c in count.by_status) == len(expected), text


def test_a_filtered_ordered_listing_pages_each_instance_once_while_others_start(
    client: Client, seeded: dict[str, dict[str, object]]
) -> None:
    text = "definition = search-order AND search.amount >= 0"
    expected = listed(client, text, "create_time desc")
    assert set(expected) == {w for w, g in seeded.items() if g["definition"] == "search-order"}
    pages: list[str] = []
    token = ""
    for n in range(200):
        request = pb.ListWorkflowsRequest(
            filter=text, order_by="create_time desc", page_size=37, page_token=token
        )
        page = client.stub.ListWorkflows(request)
        pages.extend(w.workflow_id for w in page.workflows)
        if n < 3:  # newer than the listing: never in a later page of a newest-first one
            client.start("search-order", input={"customer": "late", "total": 1.0})
        token = page.next_page_token
        if not token:
            break
    assert pages == expected
    # A token belongs to its filter.
    first = client.stub.ListWorkflows(
        pb.ListWorkflowsRequest(filter=text, page_size=5)
    ).next_page_token
    expect_error(
        lambda: client.stub.ListWorkflows(
            pb.ListWorkflowsRequest(filter="search.amount >= 1", page_size=5, page_token=first)
        ),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_PAGE_TOKEN",
    )


def test_counts_by_status(client: Client, seeded: dict[str, dict[str, object]]) -> None:
    count = client.stub.CountWorkflows(
        pb.CountWorkflowsRequest(filter="definition = search-ticket")
    )
    tickets = sum(1 for g in seeded.values() if g["definition"] == "search-ticket")
    assert count.total == tickets
    assert [(c.status, c.count) for c in count.by_status] == [
        (workflow_pb2.WORKFLOW_STATUS_WAITING, tickets)
    ]


def test_a_bad_filter_names_its_position_and_problem(client: Client) -> None:
    info = expect_error(
        lambda: listed(client, 'search.custmer = "c-1"'),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FILTER",
    )
    assert info.metadata["position"] == "0"
    assert info.metadata["problem"] == "unknown field search.custmer, did you mean search.customer"
    info = expect_error(
        lambda: client.stub.CountWorkflows(pb.CountWorkflowsRequest(filter="status = WAITING AND")),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_FILTER",
    )
    assert info.metadata["position"] == "20"


def test_definitions_show_their_search_fields(client: Client) -> None:
    found = client.stub.GetDefinition(
        pb.GetDefinitionRequest(name="definitions/search-ticket/versions/1")
    ).definition
    assert [(f.name, f.type) for f in found.search_fields] == [
        ("customer", "keyword"),
        ("priority", "int"),
    ]


def test_a_listing_ordered_by_a_search_field_pages_in_its_order(
    client: Client, seeded: dict[str, dict[str, object]]
) -> None:
    # (The instances other tests start late are left out: their customer is "late".)
    text = 'definition = search-order AND search.amount >= 0 AND search.customer != "late"'
    orders = [(g["total"], w) for w, g in seeded.items() if g["definition"] == "search-order"]
    expected = [w for _, w in sorted(orders, reverse=True)]  # ties by id, the same way
    pages: list[str] = []
    token = ""
    for n in range(200):
        request = pb.ListWorkflowsRequest(
            filter=text, order_by="search.amount desc", page_size=37, page_token=token
        )
        page = client.stub.ListWorkflows(request)
        pages.extend(w.workflow_id for w in page.workflows)
        if n < 3:  # outside the filter: never listed
            client.start("search-order", input={"customer": "late", "total": -1.0})
        token = page.next_page_token
        if not token:
            break
    assert pages == expected
    ascending = listed(client, text, "search.amount")
    assert ascending == [w for _, w in sorted(orders)]
    for bad, problem in (
        ("search.amout", "unknown field search.amout, did you mean search.amount"),
        ("search.tags desc", "search.tags cannot order a listing (a keyword_list field)"),
    ):
        info = expect_error(
            lambda bad=bad: listed(client, "", bad),  # type: ignore[misc]
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_ORDER_BY",
        )
        assert info.metadata["problem"] == problem


def test_a_listing_ordered_by_two_keys_pages_each_instance_once_while_others_start(
    client: Client, seeded: dict[str, dict[str, object]]
) -> None:
    text = "definition = search-order"
    order_by = "update_time desc, search.amount"
    expected = listed(client, text, order_by)
    assert set(seeded) - set(expected) == {
        w for w, g in seeded.items() if g["definition"] != "search-order"
    }
    pages: list[workflow_pb2.Workflow] = []
    token = ""
    for n in range(200):
        request = pb.ListWorkflowsRequest(
            filter=text, order_by=order_by, page_size=37, page_token=token
        )
        page = client.stub.ListWorkflows(request)
        pages.extend(page.workflows)
        if n < 3:  # changed after the listing began: never in a later page of it
            client.start("search-order", input={"customer": "late", "total": 2.0})
        token = page.next_page_token
        if not token:
            break
    assert [w.workflow_id for w in pages] == expected
    assert len(set(expected)) == len(expected)
    times = [w.update_time.ToDatetime() for w in pages]
    assert times == sorted(times, reverse=True)
    info = expect_error(
        lambda: listed(client, text, "update_time desc, search.tags"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ORDER_BY",
    )
    assert info.metadata["problem"] == "search.tags cannot order a listing (a keyword_list field)"
    info = expect_error(
        lambda: listed(client, text, "update_time desc, sate"),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ORDER_BY",
    )
    assert info.metadata["problem"] == "unknown field sate, did you mean state"
