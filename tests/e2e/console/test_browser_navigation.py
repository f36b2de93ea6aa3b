"""Many pages at once in a real headless Chromium: tabs, and the pages the browser keeps
alive but hidden for its Back button. A hidden page's event stream must not stay open,
since each holds one of the six connections the browser opens to one server, and a
seventh page would wait for one. A page shown again takes its stream up where it left
off, as it was drawn."""

from __future__ import annotations

from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.support.api import uid
from tests.support.browser import css, current_state, not_reloaded, open_page, start, wait_for
from tests.support.console import Http
from tests.support.server import wait_until

# One page more than the connections a browser opens to one server.
PAGES = 7


def open_streams(http: Http) -> int:
    answer = http.get("/api/v1/diagnostics")
    assert answer.status == 200, answer.body
    return int(answer.body.get("watchers", {}).get("activeWatchers", 0))


def assert_open_streams(http: Http, count: int) -> None:
    """The server comes to hold ``count`` open streams (pages let go of theirs soon)."""
    assert wait_until(lambda: open_streams(http) == count, timeout=10), open_streams(http)


def waiting_instances(http: Http, tag: str) -> list[str]:
    """PAGES review-loop instances, each waiting in evaluating."""
    return [
        start(http, "review-loop", workflowId=uid(tag), input={"document": "a draft"})
        for _ in range(PAGES)
    ]


def test_pages_left_behind_hold_no_stream_and_come_back_live(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    ids = waiting_instances(http, "browser-left")
    for workflow_id in ids:
        open_page(browser, base_url, f"/workflows/{workflow_id}")
        wait_for(browser, lambda d: current_state(d) == "evaluating")
        # Only the page on screen follows its instance.
        assert_open_streams(http, 1)
    open_page(browser, base_url, "/definitions")
    assert_open_streams(http, 0)
    # Back to the last instance's page, as the browser kept it (not loaded again): it
    # follows its instance again, and a step taken elsewhere shows.
    browser.back()
    wait_for(browser, lambda d: d.current_url.endswith(ids[-1]))
    assert not_reloaded(browser)
    assert_open_streams(http, 1)
    signal = {"event": "score", "payload": {"score": 0.4}}
    assert http.post(f"/api/v1/workflows/{ids[-1]}/signal", signal).status == 200
    wait_for(browser, lambda d: current_state(d) == "improving")


def test_tabs_in_the_background_hold_no_stream_and_catch_up_when_shown(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    ids = waiting_instances(http, "browser-tab")
    first = browser.current_window_handle
    open_page(browser, base_url, f"/workflows/{ids[0]}")
    wait_for(browser, lambda d: current_state(d) == "evaluating")
    # Something typed on the first page, which must still be there when it is shown again.
    payload = css(browser, "#signal-payload")
    payload.clear()
    payload.send_keys('{"score": 0.9}')
    try:
        for workflow_id in ids[1:]:
            browser.switch_to.new_window("tab")
            open_page(browser, base_url, f"/workflows/{workflow_id}")
            wait_for(browser, lambda d: current_state(d) == "evaluating")
            assert_open_streams(http, 1)
        # A step on the first tab's instance while it is in the background.
        signal = {"event": "score", "payload": {"score": 0.4}}
        assert http.post(f"/api/v1/workflows/{ids[0]}/signal", signal).status == 200
        browser.switch_to.window(first)
        wait_for(browser, lambda d: current_state(d) == "improving")
        assert not_reloaded(browser)
        assert browser.find_element(By.ID, "signal-payload").get_attribute("value") == (
            '{"score": 0.9}'
        )
        assert_open_streams(http, 1)
    finally:
        for handle in browser.window_handles:
            if handle != first:
                browser.switch_to.window(handle)
                browser.close()
        browser.switch_to.window(first)
