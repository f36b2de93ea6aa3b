"""The workflow list's filter box: it completes field names (the definitions' search fields
among them), keeps the filter in the URL so that a filtered view can be shared, lists what
the filter matches with the counts by status, and shows a bad filter's problem. On a
server of its own, with a definition that declares search fields."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.support.browser import assert_accessible, css, open_page, start, wait_for
from tests.support.console import Http
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

ORDER = """
name: shop-order
version: 1
context:
  customer: {type: string, default: ""}
  total: {type: number, default: 0}
search:
  customer: {type: keyword, value: "context.customer"}
  amount: {type: number, value: "context.total"}
states:
  review: {wait: true}
transitions:
  - {from: review, on: approve, to: __finish__}
"""


@pytest.fixture(scope="module")
def console_server(
    postgres_databases: PostgresDatabases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    url = postgres_databases.create()
    root = tmp_path_factory.mktemp("console-search")
    definitions = definitions_dir(
        root / "definitions", examples=False, test_definitions=False, extra={"order.yaml": ORDER}
    )
    args = ["--http-listen", "127.0.0.1:0"]
    with running_server(url, definitions, cwd=root, extra_args=args) as server:
        yield server
    postgres_databases.drop_soon(url)
    assert "Traceback" not in server.log(), server.log()


def _listed(chrome: webdriver.Chrome) -> list[str]:
    return [
        row.get_attribute("data-workflow") or ""
        for row in chrome.find_elements(By.CSS_SELECTOR, "tr[data-workflow]")
    ]


def test_the_filter_box_completes_filters_and_keeps_them_in_the_url(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    ids = {
        customer: start(http, "shop-order", input={"customer": customer, "total": total})
        for customer, total in (("ann", 10.0), ("bob", 250.0), ("cy", 990.0))
    }
    done = http.post(f"/api/v1/workflows/{ids['cy']}/resume", {"event": "approve"})
    assert done.status == 200, done.body

    open_page(browser, base_url, "/workflows")
    box = css(browser, "#filter-query")
    box.send_keys("search.cu")
    # The completion offers the search field, the text typed so far with its word finished.
    wait_for(
        browser,
        lambda d: (
            [
                o.get_attribute("value")
                for o in d.find_elements(By.CSS_SELECTOR, "#filter-fields option")
            ]
            == ["search.customer"]
        ),
    )
    box.clear()
    box.send_keys("search.amount >= 100", Keys.ENTER)
    wait_for(browser, lambda d: sorted(_listed(d)) == sorted([ids["bob"], ids["cy"]]))
    query = parse_qs(urlsplit(browser.current_url).query)
    assert query["filter"] == ["search.amount >= 100"]
    counts = wait_for(browser, lambda d: css(d, "#workflow-status-counts").text or None)
    assert "Waiting: 1" in counts and "Completed: 1" in counts
    assert css(browser, "#workflow-count").text.startswith("2 workflows match")
    assert_accessible(browser, "workflow list with a filter")

    # A shared link opens the same view.
    open_page(browser, base_url, "/workflows?filter=search.customer%20%3D%20ann")
    wait_for(browser, lambda d: _listed(d) == [ids["ann"]])
    assert css(browser, "#filter-query").get_attribute("value") == "search.customer = ann"

    # A bad filter says where and what.
    open_page(browser, base_url, "/workflows?filter=search.custmer%20%3D%20ann")
    problem = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[role=alert]"))
    assert "did you mean search.customer" in problem[0].text
