"""The console's history tells the story: each row opens to what its step took and how it
changed the context, a cancellation reads as one, and "Load earlier" pages back through
the whole history, in a real headless Chromium against a real server on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.support.api import uid
from tests.support.browser import assert_accessible, css, open_page, screenshot, start, wait_for
from tests.support.console import Http

# The console opens with this many revisions; more are a "Load earlier" away.
SHOWN = 200


def rows(browser: webdriver.Chrome) -> list[str]:
    found = browser.find_elements(By.CSS_SELECTOR, ".timeline tbody tr.history-row")
    return [row.get_attribute("data-revision") or "" for row in found]


def test_a_row_opens_to_its_signal_payload_and_context_patch(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path
) -> None:
    workflow_id = start(http, "review-loop", workflowId=uid("story"), input={"document": "v1"})
    signal = f"/api/v1/workflows/{workflow_id}/signal"
    assert http.post(signal, {"event": "score", "payload": {"score": 0.4}}).status == 200
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: rows(d) == ["2", "1"])
    toggle = css(browser, "tr[data-revision='2'] button.disclosure")
    detail = css(browser, "#history-detail-2")
    assert toggle.get_attribute("aria-expanded") == "false" and not detail.is_displayed()
    toggle.click()
    wait_for(browser, lambda d: detail.is_displayed())
    assert toggle.get_attribute("aria-expanded") == "true"
    text = detail.text.lower()  # headings are set in capitals by the style sheet
    assert "input" in text and '"score": 0.4' in text
    operations = [op.text for op in detail.find_elements(By.CSS_SELECTOR, "ol.patch li")]
    assert "replace /iterations = 1" in operations, operations
    assert "replace /score = 0.4" in operations, operations
    assert any(op.startswith("add /history/0 = ") and "0.4" in op for op in operations)
    assert_accessible(browser, "an opened history row")
    screenshot(browser, shots, "workflow-history-row")
    # The history card alone, opened row included (the page's shot shows its top).
    card = css(browser, "section[aria-labelledby='history-title']")
    card.screenshot(str(shots / "console-workflow-history-card.png"))
    toggle.click()
    wait_for(browser, lambda d: not detail.is_displayed())


def test_a_cancellation_reads_as_one(browser: webdriver.Chrome, base_url: str, http: Http) -> None:
    workflow_id = start(http, "mail-approval", workflowId=uid("story-cancel"))
    answer = http.post(f"/api/v1/workflows/{workflow_id}/cancel", {"reason": "a duplicate"})
    assert answer.status == 200, answer.body
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: rows(d) == ["2", "1"])
    row = css(browser, "tr[data-revision='2']")
    assert "cancelled" in row.find_element(By.CSS_SELECTOR, ".chip.cancellation").text
    row.find_element(By.CSS_SELECTOR, "button.disclosure").click()
    detail = css(browser, "#history-detail-2")
    wait_for(browser, lambda d: detail.is_displayed())
    assert "cancellation reason" in detail.text.lower() and "a duplicate" in detail.text
    # The reason is what the person gave, not an error: nothing on the page is red with it.
    red = browser.find_elements(By.CSS_SELECTOR, ".error-text, .notice-error")
    assert not [e for e in red if "a duplicate" in e.text]


def test_load_earlier_pages_back_through_the_whole_history(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "tally", workflowId=uid("story-long"))
    signal = f"/api/v1/workflows/{workflow_id}/signal"
    extra = 7
    for i in range(SHOWN + extra - 1):  # bounded: one step each
        assert http.post(signal, {"event": "tick", "payload": {"id": f"t{i}"}}).status == 200
    last = SHOWN + extra
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: len(rows(d)) == SHOWN)
    assert rows(browser)[0] == str(last) and rows(browser)[-1] == str(extra + 1)
    assert f"Revisions 1 to {extra} are not shown." in css(browser, "#history-earlier").text
    css(browser, "#load-earlier").click()
    wait_for(browser, lambda d: len(rows(d)) == last)
    assert rows(browser) == [str(r) for r in range(last, 0, -1)]
    assert not css(browser, "#load-earlier").is_displayed()
    # The earliest rows open like any other: the start's input and first context.
    css(browser, "tr[data-revision='2'] button.disclosure").click()
    detail = css(browser, "#history-detail-2")
    wait_for(browser, lambda d: detail.is_displayed())
    assert '"id": "t0"' in detail.text
