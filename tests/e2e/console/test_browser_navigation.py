"""Full page loads in a real headless Chromium. The browser keeps the pages left behind for
its Back button, alive but hidden; a page's event stream must not stay open there, since
each one holds one of the six connections the browser opens to the server, and the
seventh page would wait for one. A page that comes back takes its stream up again."""

from __future__ import annotations

from selenium import webdriver

from tests.support.api import uid
from tests.support.browser import current_state, not_reloaded, open_page, start, wait_for
from tests.support.console import Http
from tests.support.server import wait_until

# One page more than the connections a browser opens to one server.
PAGES = 7


def open_streams(http: Http) -> int:
    answer = http.get("/api/v1/diagnostics")
    assert answer.status == 200, answer.body
    return int(answer.body.get("watchers", {}).get("activeWatchers", 0))


def test_pages_left_behind_hold_no_stream_and_come_back_live(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    ids = [
        start(http, "review-loop", workflowId=uid("browser-left"), input={"document": "a draft"})
        for _ in range(PAGES)
    ]
    for workflow_id in ids:
        open_page(browser, base_url, f"/workflows/{workflow_id}")
        wait_for(browser, lambda d: current_state(d) == "evaluating")
        # Only the page on screen follows its instance.
        assert wait_until(lambda: open_streams(http) == 1, timeout=10), open_streams(http)
    open_page(browser, base_url, "/definitions")
    assert wait_until(lambda: open_streams(http) == 0, timeout=10), open_streams(http)
    # Back to the last instance's page, as the browser kept it (not loaded again): it
    # follows its instance again, and a step taken elsewhere shows.
    browser.back()
    wait_for(browser, lambda d: d.current_url.endswith(ids[-1]))
    assert not_reloaded(browser)
    assert wait_until(lambda: open_streams(http) == 1, timeout=10), open_streams(http)
    signal = {"event": "score", "payload": {"score": 0.4}}
    assert http.post(f"/api/v1/workflows/{ids[-1]}/signal", signal).status == 200
    wait_for(browser, lambda d: current_state(d) == "improving")
