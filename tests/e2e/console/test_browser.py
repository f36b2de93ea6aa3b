"""The console's pages in a real headless Chromium (Debian's, driven through Selenium),
against a real server on PostgreSQL: graphs drawn, a step shown without a reload, actions
taken and refused, the runtime page refreshing. Each page's screenshot is saved on the way:
into STATEWRIGHT_SCREENSHOTS when set (`make console-screenshots` sets docs/images), else
into the test's scratch directory."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from tests.support.api import uid
from tests.support.browser import (
    assert_accessible,
    css,
    current_state,
    not_reloaded,
    open_page,
    screenshot,
    start,
    wait_for,
)
from tests.support.console import Http


def test_the_definitions_page_draws_each_graph(
    browser: webdriver.Chrome, base_url: str, shots: Path
) -> None:
    open_page(browser, base_url, "/definitions")
    css(browser, "a[href='/definitions/review-loop']")
    screenshot(browser, shots, "definitions")
    browser.find_element(By.CSS_SELECTOR, "a[href='/definitions/review-loop']").click()
    svg = css(browser, ".graph-canvas[data-rendered] svg")
    states = {
        node.get_attribute("id")
        for node in svg.find_elements(By.CSS_SELECTOR, "g.node")
        if "-state-" in (node.get_attribute("id") or "")
    }
    for state in ("evaluating", "improving", "accepted", "abandoned"):
        assert any(f"-state-s_{state}-" in (found or "") for found in states), (state, states)
    assert "initial: evaluating" in browser.find_element(By.CSS_SELECTOR, "pre.source").text
    assert not_reloaded(browser), "the list opened the definition by reloading"
    screenshot(browser, shots, "definition")


def test_the_start_form_begins_with_the_declared_defaults(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    open_page(browser, base_url, "/definitions/order-pricing")
    area = css(browser, "#start-input")
    prefilled = json.loads(wait_for(browser, lambda d: area.get_attribute("value") or None))
    assert prefilled == {
        "items": [],
        "quantity": 1,
        "price": 0,
        "total": 0,
        "in_stock": True,
        "express": False,
        "log": [],
        "shipment": {},
        "reason": None,
    }
    edited = {**prefilled, "items": ["a"], "quantity": 3, "price": 2.5}
    area.clear()
    area.send_keys(json.dumps(edited))
    workflow_id = uid("browser-prefill")
    browser.find_element(By.CSS_SELECTOR, "#start-id").send_keys(workflow_id)
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(browser, lambda d: workflow_id in d.current_url)
    context = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]["context"]
    assert context["quantity"] == 3 and context["total"] == 7.5
    assert context["log"][0] == "received"  # the append reducer took [] from the form


def test_resume_with_a_button_and_see_the_state_move_without_a_reload(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path
) -> None:
    workflow_id = start(
        http, "mail-approval", workflowId=uid("browser-mail"), input={"topic": "the launch"}
    )
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "awaiting_approval")
    Select(css(browser, "#resume-event")).select_by_value("approve")
    browser.find_element(By.ID, "resume-input").send_keys('{"approver": "ann"}')
    browser.find_element(By.ID, "resume-button").click()
    # The instance runs through `send` to the end; a finished instance rests in the state it
    # finished from, and that is the one lit.
    wait_for(browser, lambda d: current_state(d) == "send")
    badge = css(browser, ".page-head .badge")
    assert badge.text == "Completed" and badge.get_attribute("data-status") == "completed"
    assert "Resumed with approve" in browser.find_element(By.CSS_SELECTOR, ".action-outcome").text
    assert not_reloaded(browser)
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["status"] == "WORKFLOW_STATUS_COMPLETED"
    assert got["context"]["approver"] == "ann"


def test_steps_taken_elsewhere_move_the_graph_live(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path
) -> None:
    workflow_id = start(
        http, "review-loop", workflowId=uid("browser-loop"), input={"document": "a first draft"}
    )
    path = f"/api/v1/workflows/{workflow_id}/signal"
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "evaluating")
    # Another client steps the instance; the page hears it over its event stream.
    assert http.post(path, {"event": "score", "payload": {"score": 0.4}}).status == 200
    wait_for(browser, lambda d: current_state(d) == "improving")
    assert css(browser, "tr[data-revision='2']").text.startswith("2")
    assert http.post(path, {"event": "revised", "payload": {"document": "better"}}).status == 200
    wait_for(browser, lambda d: current_state(d) == "evaluating")
    wait_for(browser, lambda d: d.find_element(By.ID, "current-revision").text == "3")
    assert not_reloaded(browser)
    history = browser.find_elements(By.CSS_SELECTOR, ".timeline tbody tr.history-row")
    assert [row.get_attribute("data-revision") for row in history] == ["3", "2", "1"]
    assert "anonymous" in history[0].text and "revised" in history[0].text
    screenshot(browser, shots, "workflow")


def test_cancel_asks_first_and_then_cancels(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "mail-approval", workflowId=uid("browser-cancel"))
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "awaiting_approval")
    css(browser, "#cancel-button").click()
    dialog = css(browser, "dialog.confirm[open]")
    assert f"Cancel {workflow_id}?" in dialog.text
    # Keeping it is the default, and changes nothing.
    dialog.find_element(By.CSS_SELECTOR, "button[value='keep']").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog.confirm"))
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["status"] == "WORKFLOW_STATUS_WAITING"
    css(browser, "#cancel-button").click()
    css(browser, "#cancel-reason").send_keys("a duplicate")
    css(browser, "#confirm-cancel").click()
    wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, ".page-head .badge").text == "Cancelled"
    )
    assert not_reloaded(browser)
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["status"] == "WORKFLOW_STATUS_CANCELLED"


def test_reset_from_the_timeline_shows_the_dry_run_first(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "mail-approval", workflowId=uid("browser-reset"))
    http.post(f"/api/v1/workflows/{workflow_id}/cancel", {"reason": "by mistake"})
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, ".page-head .badge").text == "Cancelled"
    )
    assert not browser.find_element(By.ID, "retry-button").is_displayed()  # not FAILED
    css(browser, "tr.history-row[data-revision='1'] button.disclosure").click()
    css(browser, "button[data-reset-revision='1']").click()
    dialog = css(browser, "dialog.confirm[open]")
    assert f"Reset {workflow_id} to revision 1?" in dialog.text
    preview = css(browser, "dialog.confirm [data-preview]")
    assert "awaiting_approval" in preview.text and "Waiting" in preview.text
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["status"] == "WORKFLOW_STATUS_CANCELLED", "the dry run saved nothing"
    css(browser, "#reset-reason").send_keys("cancelled the wrong one")
    css(browser, "#confirm-reset").click()
    wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, ".page-head .badge").text == "Waiting"
    )
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert (got["status"], got["revision"]) == ("WORKFLOW_STATUS_WAITING", "3")
    wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.history-row[data-revision='3']")
    )
    assert "reset" in css(browser, "tr.history-row[data-revision='3']").text


def test_retry_is_offered_on_a_failed_instance_and_shows_its_dry_run(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    # 100 / 0 in its first step's guard: it fails at once, and would again.
    inputs = {"mode": "compute", "divisor": 0}
    failed = start(http, "fragile", workflowId=uid("browser-retry"), input=inputs)
    open_page(browser, base_url, f"/workflows/{failed}")
    wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, ".page-head .badge").text == "Failed"
    )
    css(browser, "#retry-button").click()
    dialog = css(browser, "dialog.confirm[open]")
    assert f"Retry {failed}?" in dialog.text
    preview = css(browser, "dialog.confirm [data-preview]")
    # The failure is in its data: the dry run shows it would fail again, and saves nothing.
    assert "Failed" in preview.text
    dialog.find_element(By.CSS_SELECTOR, "button[value='keep']").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog.confirm"))
    assert http.get(f"/api/v1/workflows/{failed}").body["workflow"]["revision"] == "1"


def test_pause_and_unpause_from_the_workflow_page_show_the_paused_badge(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "mail-approval", workflowId=uid("browser-pause"))
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "awaiting_approval")
    css(browser, "#pause-button").click()
    dialog = css(browser, "dialog.confirm[open]")
    assert f"Pause {workflow_id}?" in dialog.text
    preview = css(browser, "dialog.confirm [data-preview]")
    assert "Waiting" in preview.text and "PAUSED" in preview.text
    assert not http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]["paused"]
    css(browser, "#pause-reason").send_keys("looking into it")
    css(browser, "#confirm-pause").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".page-head [data-paused]"))
    # The page may redraw once more (the action's answer, then the watched revision):
    # each check reads the element it finds at that moment.
    wait_for(browser, lambda d: "looking into it" in d.find_element(By.ID, "pause-facts").text)
    wait_for(browser, lambda d: not d.find_element(By.ID, "resume-button").is_displayed())
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert (got["status"], got["paused"], got["revision"]) == ("WORKFLOW_STATUS_WAITING", True, "2")
    wait_for(browser, lambda d: d.find_element(By.ID, "pause-button").text.startswith("Unpause"))
    css(browser, "#pause-button").click()
    css(browser, "dialog.confirm[open] [data-preview]")
    css(browser, "#confirm-unpause").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, ".page-head [data-paused]"))
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert (got["paused"], got["revision"]) == (False, "3")
    wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.history-row[data-revision='3']")
    )
    row = "tr.history-row[data-revision='2']"
    wait_for(browser, lambda d: "pause" in d.find_element(By.CSS_SELECTOR, row).text)


def test_a_refused_action_shows_the_server_s_error(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "mail-approval", workflowId=uid("browser-refused"))
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "awaiting_approval")
    Select(css(browser, "#resume-event")).select_by_value("approve")
    # `approver` is declared a string: the server refuses a number.
    browser.find_element(By.ID, "resume-input").send_keys('{"approver": 5}')
    browser.find_element(By.ID, "resume-button").click()
    alert = css(browser, ".action-outcome [role='alert']")
    assert "INPUT_TYPE_MISMATCH" in alert.text and "INVALID_ARGUMENT" in alert.text
    assert "approver" in alert.find_element(By.CSS_SELECTOR, ".error-message").text
    # Nothing moved.
    assert current_state(browser) == "awaiting_approval"
    assert http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]["revision"] == "1"
    # Input that is not JSON is caught before anything is sent.
    resume_input = browser.find_element(By.ID, "resume-input")
    resume_input.clear()
    resume_input.send_keys("{approver: ann}")
    browser.find_element(By.ID, "resume-button").click()
    wait_for(
        browser, lambda d: "Not sent" in d.find_element(By.CSS_SELECTOR, ".action-outcome").text
    )
    assert http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]["revision"] == "1"


def test_the_workflows_list_filters_and_counts_live(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path
) -> None:
    for topic in ("pricing", "the launch", "holidays"):
        start(http, "mail-approval", input={"topic": topic})
    dropped = start(http, "mail-approval", input={"topic": "dropped"})
    assert http.post(f"/api/v1/workflows/{dropped}/cancel", {}).status == 200
    open_page(browser, base_url, "/workflows?definition=order-pricing")
    count = css(browser, "#workflow-count[data-count]")
    before = int(count.get_attribute("data-count") or "0")
    start(http, "order-pricing", input={"items": [{"sku": "a", "price": 2.5, "quantity": 2}]})
    wait_for(
        browser,
        lambda d: (
            d.find_element(By.ID, "workflow-count").get_attribute("data-count") == str(before + 1)
        ),
    )
    assert not_reloaded(browser)
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr[data-workflow]")
    assert rows and all("order-pricing" in row.text for row in rows)
    # The filters: each choice is a new list, and only what matches is on it.
    Select(browser.find_element(By.ID, "filter-definition")).select_by_value("")
    wait_for(browser, lambda d: "definition=" not in d.current_url)
    Select(css(browser, "#filter-status")).select_by_value("WORKFLOW_STATUS_CANCELLED")
    wait_for(browser, lambda d: "status=WORKFLOW_STATUS_CANCELLED" in d.current_url)
    wait_for(
        browser,
        lambda d: (
            (rows := d.find_elements(By.CSS_SELECTOR, "tbody tr[data-workflow]"))
            and all("Cancelled" in row.text for row in rows)
            and dropped in {row.get_attribute("data-workflow") for row in rows}
        ),
    )
    open_page(browser, base_url, "/workflows")
    css(browser, "#workflow-count[data-count]")
    css(browser, "tbody tr[data-workflow]")
    screenshot(browser, shots, "workflows")


def _on_page(chrome: webdriver.Chrome, number: int) -> bool:
    return css(chrome, ".page-number").text == f"Page {number}"


def _moved_from(chrome: webdriver.Chrome, seen: list[str]) -> bool:
    return listed_ids(chrome) not in ([], seen)


def listed_ids(chrome: webdriver.Chrome) -> list[str]:
    rows = chrome.find_elements(By.CSS_SELECTOR, "tbody tr[data-workflow]")
    return [row.get_attribute("data-workflow") or "" for row in rows]


def test_the_list_is_newest_first_sorts_searches_and_pages_by_one_token(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    prefix = uid("newest")
    made = [start(http, "tally", workflowId=f"{prefix}-{i:02d}") for i in range(9)]
    other = start(http, "tally", workflowId=uid("elsewhere"))
    # The first page, with no filter at all, starts with the newest instance.
    open_page(browser, base_url, "/workflows")
    wait_for(browser, lambda d: listed_ids(d)[:2] == [other, made[-1]])
    started = css(browser, "tbody tr[data-workflow] td.started time")
    assert started.get_attribute("datetime")
    # The id search: only this test's instances, still newest first.
    box = css(browser, "#filter-prefix")
    box.send_keys(prefix, Keys.ENTER)
    wait_for(browser, lambda d: f"idPrefix={prefix}" in d.current_url)
    wait_for(browser, lambda d: listed_ids(d) == made[::-1])
    # The sort control: oldest first, saved in the URL.
    Select(css(browser, "#sort-order")).select_by_value("create_time")
    wait_for(browser, lambda d: "orderBy=create_time" in d.current_url)
    wait_for(browser, lambda d: listed_ids(d) == made)
    # Paging two at a time: the URL carries the current page's token only, so its length
    # stays the same however far one goes; Previous and the browser's Back go back.
    open_page(browser, base_url, f"/workflows?idPrefix={prefix}&pageSize=2")
    wait_for(browser, lambda d: listed_ids(d) == made[::-1][:2])
    lengths, pages = [], [listed_ids(browser)]
    for n in range(2, 6):
        css(browser, ".pager a[rel=next]").click()
        wait_for(browser, partial(_on_page, number=n))
        wait_for(browser, partial(_moved_from, seen=pages[-1]))
        pages.append(listed_ids(browser))
        lengths.append(len(browser.current_url))
        assert "trail" not in browser.current_url and browser.current_url.count("pageToken") == 1
    assert [wid for page in pages for wid in page] == made[::-1]
    assert max(lengths) - min(lengths) <= 4, lengths
    assert not browser.find_elements(By.CSS_SELECTOR, ".pager a[rel=next]")
    css(browser, ".pager a[rel=prev]").click()
    wait_for(browser, lambda d: css(d, ".page-number").text == "Page 4")
    wait_for(browser, lambda d: listed_ids(d) == pages[3])
    browser.back()
    wait_for(browser, lambda d: css(d, ".page-number").text == "Page 5")
    wait_for(browser, lambda d: listed_ids(d) == pages[4])
    # A later page's link opened afresh (not reloaded: a reload keeps its history entry's
    # way back) knows one way back: to the first page.
    later = browser.current_url.removeprefix(base_url)
    open_page(browser, base_url, "/definitions")
    open_page(browser, base_url, later)
    wait_for(browser, lambda d: css(d, ".page-number").text == "A later page")
    css(browser, ".pager a[rel=first]").click()
    wait_for(browser, lambda d: listed_ids(d) == pages[0])
    assert not_reloaded(browser)


def test_the_runtime_page_refreshes_live(
    browser: webdriver.Chrome, base_url: str, shots: Path
) -> None:
    open_page(browser, base_url, "/runtime")
    first = int(
        css(browser, "#diagnostics-updated[data-samples]").get_attribute("data-samples") or 0
    )
    wait_for(
        browser,
        lambda d: (
            int(d.find_element(By.ID, "diagnostics-updated").get_attribute("data-samples") or 0)
            >= first + 2
        ),
    )
    assert not_reloaded(browser)
    assert css(browser, "[data-metric='phase']").text == "running"
    charts = browser.find_elements(By.CSS_SELECTOR, "figure.chart")
    assert len(charts) == 6 and all(c.find_elements(By.TAG_NAME, "canvas") for c in charts)
    assert all(
        c.find_element(By.CSS_SELECTOR, ".chart-summary").text.startswith("Now:") for c in charts
    )
    screenshot(browser, shots, "runtime")


def test_the_runtime_page_shows_each_queues_flow_control(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    limits = {"queue": "e2e.flow-console", "maxLeased": 2, "rate": 4, "keyMaxLeased": 1}
    answer = http.request(
        "PUT",
        "/api/v1/queues/e2e.flow-console/config",
        json.dumps(limits),
        {"Content-Type": "application/json"},
    )
    assert answer.status == 200, answer.body
    open_page(browser, base_url, "/runtime")
    row = wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, "[data-flow-queue='e2e.flow-console']")
    )[0]
    cells = [c.text for c in row.find_elements(By.CSS_SELECTOR, "th, td")]
    assert cells[0] == "e2e.flow-console"
    assert cells[1] == "at most 2 leased, 4/s (burst 4), 1 per key"
    assert cells[4] == "4", "a full bucket"
    assert cells[7] == "none", "no closed key"
    assert_accessible(browser, "runtime page with flow control")


def test_the_keyboard_reaches_the_content_with_a_visible_focus(
    browser: webdriver.Chrome, base_url: str
) -> None:
    open_page(browser, base_url, "/definitions")
    css(browser, "a[href='/definitions/review-loop']")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.get_attribute("class") == "skip-link" and focused.is_displayed()
    outline = browser.execute_script(
        "const s = getComputedStyle(document.activeElement);"
        "return [s.outlineStyle, parseFloat(s.outlineWidth)]"
    )
    assert outline[0] != "none" and outline[1] >= 2, outline
    focused.send_keys(Keys.ENTER)
    assert browser.switch_to.active_element.get_attribute("id") == "content"


def test_a_narrow_screen_needs_no_sideways_scrolling(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "review-loop", workflowId=uid("browser-narrow"))
    browser.set_window_size(390, 844)
    try:
        for path in (
            "/workflows",
            "/definitions/review-loop",
            f"/workflows/{workflow_id}",
            "/runtime",
        ):
            open_page(browser, base_url, path)
            css(browser, "main h1")
            if "/workflows/" in path or "/definitions/" in path:
                css(browser, ".graph-canvas[data-rendered] svg")
            overflow = browser.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 1, (path, overflow)
    finally:
        browser.set_window_size(1280, 800)


def test_a_delayed_start_from_the_form_shows_when_it_starts_and_is_cancelled(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    open_page(browser, base_url, "/definitions/review-loop")
    css(browser, "#start-input")
    workflow_id = uid("browser-delay")
    browser.find_element(By.CSS_SELECTOR, "#start-id").send_keys(workflow_id)
    browser.find_element(By.CSS_SELECTOR, "#start-delay").send_keys("soon")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    notice = css(browser, ".notice-error")
    assert "not a duration" in notice.text
    delay = browser.find_element(By.CSS_SELECTOR, "#start-delay")
    delay.clear()
    delay.send_keys("1h")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(browser, lambda d: workflow_id in d.current_url)
    # The page draws again as its stream delivers: read each text where it is now.
    wait_for(browser, lambda d: "delayed start" in css(d, "#start-time").text)
    wait_for(browser, lambda d: "has not started yet" in css(d, "#actions-idle").text)
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["status"] == "WORKFLOW_STATUS_WAITING" and got["revision"] == "1"
    assert got["timers"][0]["after"] == "start_delay 3600s"
    css(browser, "#cancel-button").click()
    css(browser, "#confirm-cancel").click()
    wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, ".page-head .badge").text == "Cancelled"
    )
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["status"] == "WORKFLOW_STATUS_CANCELLED" and not got.get("timers")


def test_a_start_from_the_form_may_lower_the_recursion_limit(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    # review-loop keeps the default limit of 25: a start may lower it, never raise it.
    open_page(browser, base_url, "/definitions/review-loop")
    css(browser, "#start-input")
    workflow_id = uid("browser-limit")
    browser.find_element(By.CSS_SELECTOR, "#start-id").send_keys(workflow_id)
    limit = browser.find_element(By.CSS_SELECTOR, "#start-recursion-limit")
    limit.send_keys("26")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    assert "RECURSION_LIMIT_TOO_HIGH" in css(browser, ".notice-error").text
    limit.clear()
    limit.send_keys("3")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(browser, lambda d: workflow_id in d.current_url)
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert got["recursionLimit"] == 3


def test_the_start_form_restarts_a_finished_instance_and_its_page_shows_the_run(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "mail-approval", workflowId=uid("browser-rerun"))
    http.post(f"/api/v1/workflows/{workflow_id}/resume", {"event": "approve"})
    open_page(browser, base_url, "/definitions/mail-approval")
    css(browser, "#start-input")
    browser.find_element(By.CSS_SELECTOR, "#start-id").send_keys(workflow_id)
    Select(css(browser, "#start-if-exists")).select_by_value("IF_EXISTS_POLICY_RESTART")
    browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
    wait_for(browser, lambda d: workflow_id in d.current_url)
    wait_for(browser, lambda d: d.find_element(By.ID, "current-run").text == "2")
    assert css(browser, "#run").text.startswith("2")
    wait_for(browser, lambda d: "restart: run 2 begins" in d.find_element(By.TAG_NAME, "body").text)
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert (got["run"], got["revision"], got["status"]) == (2, "3", "WORKFLOW_STATUS_WAITING")
