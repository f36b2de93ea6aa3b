"""The console as an operator uses it, in a real headless Chromium against a real server:
graphs readable in both colour schemes (contrast measured from computed colours, since
axe skips SVG text), axe-core's audit of every page in both, only the actions that can
work, forms that keep what is typed while steps land, long ids and a 400 px screen, the
keyboard on the filters and below the sticky top bar, and the static files gzipped."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from tests.support.api import uid
from tests.support.browser import (
    assert_accessible,
    color_scheme,
    css,
    current_state,
    graph_contrast,
    not_reloaded,
    open_page,
    screenshot,
    start,
    wait_for,
)
from tests.support.console import Http

TEXT_CONTRAST = 4.5  # WCAG AA for text, asked of every label and mark of a graph
OUTLINE_CONTRAST = 3.0  # WCAG AA for a graphical object: the lit node's outline


@pytest.fixture
def scheme(browser: webdriver.Chrome, request: pytest.FixtureRequest) -> Iterator[str]:
    chosen: str = request.param
    color_scheme(browser, chosen)
    try:
        yield chosen
    finally:
        color_scheme(browser, "light")


def options(chrome: webdriver.Chrome, selector: str) -> list[str]:
    return [o.get_attribute("value") or "" for o in Select(css(chrome, selector)).options]


def shown(chrome: webdriver.Chrome, selector: str) -> bool:
    return any(e.is_displayed() for e in chrome.find_elements(By.CSS_SELECTOR, selector))


def tables_reflowed(chrome: webdriver.Chrome) -> list[object]:
    """For each table: how far it scrolls sideways in its box, and a labelled cell's layout."""
    found: list[object] = chrome.execute_script(
        "return [...document.querySelectorAll('.table-wrap')].map((w) => {"
        "  const cell = w.querySelector('tbody td[data-label]');"
        "  return [w.scrollWidth - w.clientWidth, cell && getComputedStyle(cell).display];"
        "})"
    )
    return found


def page_overflow(chrome: webdriver.Chrome) -> int:
    width: int = chrome.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return width


@pytest.mark.parametrize("scheme", ["light", "dark"], indirect=True)
def test_every_graph_label_and_node_is_readable(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path, scheme: str
) -> None:
    task = start(http, "order-fulfilment", input={"items": ["a"], "price": 2.0})
    wait = start(http, "mail-approval", input={"topic": "contrast"})
    done = start(http, "mail-approval", input={"topic": "finished"})
    answer = http.post(f"/api/v1/workflows/{done}/resume", {"event": "approve"})
    assert answer.status == 200, answer.body
    pages = [(task, "charging"), (wait, "awaiting_approval"), (done, "send")]
    for workflow_id, lit in pages:
        open_page(browser, base_url, f"/workflows/{workflow_id}")
        wait_for(browser, lambda d: current_state(d) == lit)  # noqa: B023 (waited on here)
        found = graph_contrast(browser)
        kinds = {item["kind"] for item in found}
        assert {"current", "state", "start", "final", "current outline"} <= kinds, kinds
        if lit != "send":
            assert {"edge label"} <= kinds, kinds
        else:  # finished: its state coloured by the outcome, the path to it outlined
            assert {"ended completed", "path outline", "taken edge"} <= kinds, kinds
        low = [
            item
            for item in found
            if item["ratio"]
            < (OUTLINE_CONTRAST if item["kind"] == "current outline" else TEXT_CONTRAST)
        ]
        assert not low, (scheme, workflow_id, low)
        assert_accessible(browser, f"{scheme} /workflows/{workflow_id}")
    # The task states and the wait state, each not lit, are measured too.
    open_page(browser, base_url, "/definitions/order-fulfilment")
    css(browser, ".graph-canvas[data-rendered] svg")
    found = graph_contrast(browser)
    assert {"task", "edge label", "state"} <= {item["kind"] for item in found}
    assert all(item["ratio"] >= TEXT_CONTRAST for item in found), found
    open_page(browser, base_url, "/definitions/ticket-escalation")
    css(browser, ".graph-canvas[data-rendered] svg")
    found = graph_contrast(browser)
    assert "wait" in {item["kind"] for item in found}
    assert all(item["ratio"] >= TEXT_CONTRAST for item in found), found
    if scheme == "dark":
        open_page(browser, base_url, f"/workflows/{task}")
        wait_for(browser, lambda d: current_state(d) == "charging")
        screenshot(browser, shots, "workflow-dark")


@pytest.mark.parametrize("scheme", ["light", "dark"], indirect=True)
def test_axe_finds_nothing_serious_on_any_page(
    browser: webdriver.Chrome, base_url: str, http: Http, scheme: str
) -> None:
    workflow_id = start(http, "review-loop", workflowId=uid("axe"))
    for path, ready in (
        ("/workflows", "tbody tr[data-workflow]"),
        ("/definitions", "a[href='/definitions/review-loop']"),
        ("/definitions/order-fulfilment", ".graph-canvas[data-rendered] svg"),
        (f"/workflows/{workflow_id}", ".graph-canvas[data-rendered] g.node.sw-current"),
        ("/runtime", "#diagnostics-updated[data-samples]"),
    ):
        open_page(browser, base_url, path)
        css(browser, ready)
        assert_accessible(browser, f"{scheme} {path}")


MARKS = """
const canvas = document.querySelector('.graph-canvas[data-rendered]');
const id = (g) => (/(?:^|-)state-(.+)-\\d+$/.exec(g.id) || [])[1];
return {
  visited: [...canvas.querySelectorAll('g.node.sw-visited')].map(id).sort(),
  taken: canvas.querySelectorAll('path.sw-taken').length,
  edges: canvas.querySelectorAll('path[data-edge]').length,
  ended: [...canvas.querySelectorAll('g.node[data-outcome]')].map(
    (g) => [id(g), g.dataset.outcome]).sort(),
};
"""


@pytest.mark.parametrize("scheme", ["light", "dark"], indirect=True)
def test_the_path_taken_and_the_outcome_are_marked_on_the_graph(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path, scheme: str
) -> None:
    done = start(http, "mail-approval", workflowId=uid("path-done"), input={"topic": "path"})
    assert http.post(f"/api/v1/workflows/{done}/resume", {"event": "approve"}).status == 200
    failed = start(
        http, "fragile", workflowId=uid("path-failed"), input={"mode": "park", "divisor": 0}
    )
    assert http.post(f"/api/v1/workflows/{failed}/resume", {"event": "go"}).status == 200
    assert http.get(f"/api/v1/workflows/{failed}").body["workflow"]["status"] == (
        "WORKFLOW_STATUS_FAILED"
    )
    expected = {
        # start -> draft -> awaiting_approval -> send -> the end; drafting never entered.
        done: {
            "visited": ["root_end", "root_start", "s_awaiting_approval", "s_draft", "s_send"],
            "taken": 4,
            "ended": [["root_end", "completed"], ["s_send", "completed"]],
        },
        # start -> begin -> parked -> compute on `go`, whose way on (100 / 0) failed the
        # instance there: no end reached, done never entered.
        failed: {
            "visited": ["root_start", "s_begin", "s_compute", "s_parked"],
            "taken": 3,
            "ended": [["s_compute", "failed"]],
        },
    }
    for workflow_id, want in expected.items():
        open_page(browser, base_url, f"/workflows/{workflow_id}")
        css(browser, ".graph-canvas[data-rendered] g.node.sw-current")
        marks = wait_for(
            browser,
            lambda d: (m := d.execute_script(MARKS))["ended"] and m["taken"] and m,
        )
        assert {k: marks[k] for k in want} == want, (scheme, marks)
        assert marks["edges"] > marks["taken"]
        found = graph_contrast(browser)
        ended = want["ended"]
        assert isinstance(ended, list)
        outcome = ended[-1][1]
        kinds = {item["kind"] for item in found}
        assert {f"ended {outcome}", "path outline", "taken edge"} <= kinds, kinds
        low = [
            item
            for item in found
            if item["ratio"]
            < (OUTLINE_CONTRAST if item["kind"] == "current outline" else TEXT_CONTRAST)
        ]
        assert not low, (scheme, workflow_id, low)
        assert_accessible(browser, f"{scheme} /workflows/{workflow_id} path")
    if scheme == "light":
        screenshot(browser, shots, "workflow-failed")


def test_only_the_actions_that_can_work_are_offered(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    # Waiting: Resume with the wait state's events; no Signal, which the server refuses.
    waiting = start(http, "mail-approval", workflowId=uid("actions-wait"))
    accepted = http.get(f"/api/v1/workflows/{waiting}").body["workflow"]["acceptedEvents"]
    open_page(browser, base_url, f"/workflows/{waiting}")
    wait_for(browser, lambda d: current_state(d) == "awaiting_approval")
    assert shown(browser, "form[data-action='resume']")
    assert options(browser, "#resume-event") == accepted and accepted
    assert not shown(browser, "form[data-action='signal']")
    assert shown(browser, "#cancel-button")
    # Running in a task state: Signal with that state's events (cancel_order), no Resume.
    running = start(http, "order-fulfilment", workflowId=uid("actions-run"), input={"items": [1]})
    open_page(browser, base_url, f"/workflows/{running}")
    wait_for(browser, lambda d: current_state(d) == "charging")
    assert not shown(browser, "form[data-action='resume']")
    assert shown(browser, "form[data-action='signal']")
    assert options(browser, "#signal-event") == ["cancel_order"]
    browser.find_element(By.ID, "signal-button").click()
    wait_for(browser, lambda d: current_state(d) == "cancelled")
    # Finished: nothing to act with, and it says so.
    wait_for(browser, lambda d: shown(d, "#actions-ended"))
    assert not any(
        shown(browser, s) for s in ("form[data-action]", "#cancel-button", "#actions-idle")
    )
    assert (
        "nothing can act on it any more, unless it is repaired"
        in browser.find_element(By.ID, "actions-ended").text
    )
    assert not_reloaded(browser)


def test_a_step_landing_keeps_what_is_being_typed(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "review-loop", workflowId=uid("typing"))
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "evaluating")
    assert options(browser, "#signal-event") == ["score"]
    payload = css(browser, "#signal-payload")
    payload.click()
    payload.send_keys('{"score": 0.9')
    browser.execute_script("window.__payload = document.getElementById('signal-payload')")
    # Another client steps the instance while the user types.
    answer = http.post(
        f"/api/v1/workflows/{workflow_id}/signal", {"event": "score", "payload": {"score": 0.2}}
    )
    assert answer.status == 200, answer.body
    wait_for(browser, lambda d: current_state(d) == "improving")
    wait_for(browser, lambda d: options(d, "#signal-event") == ["revised"])
    kept = browser.execute_script(
        "const p = document.getElementById('signal-payload');"
        "return [p === window.__payload, p.value, document.activeElement === p]"
    )
    assert kept == [True, '{"score": 0.9', True], kept
    # Typing goes on where it stopped, and the form sends it.
    browser.switch_to.active_element.send_keys("}")
    Select(browser.find_element(By.ID, "signal-event")).select_by_value("revised")
    payload = browser.find_element(By.ID, "signal-payload")
    payload.send_keys(Keys.CONTROL, "a")
    payload.send_keys('{"document": "better"}')
    browser.find_element(By.ID, "signal-button").click()
    wait_for(browser, lambda d: current_state(d) == "evaluating")
    assert not_reloaded(browser)


def test_a_long_id_on_a_400px_screen(browser: webdriver.Chrome, base_url: str, http: Http) -> None:
    workflow_id = (uid("long") + "-" + "x" * 128)[:128]
    assert len(workflow_id) == 128
    start(http, "order-fulfilment", workflowId=workflow_id, input={"items": [1, 2]})
    origin = base_url.rstrip("/")
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": origin, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    browser.set_window_size(400, 844)
    try:
        open_page(browser, base_url, f"/workflows/{workflow_id}")
        wait_for(browser, lambda d: current_state(d) == "charging")
        assert page_overflow(browser) <= 1
        heading = css(browser, "h1.id-heading code")
        assert heading.text.replace("\n", "") == workflow_id
        assert css(browser, ".crumbs .crumb-id").get_attribute("title") == workflow_id
        # The copy button puts the whole id on the clipboard.
        css(browser, "h1.id-heading button.copy").click()
        wait_for(
            browser, lambda d: css(d, "h1.id-heading button.copy").get_attribute("data-copied")
        )
        copied = browser.execute_async_script(
            "const done = arguments[0];"
            "navigator.clipboard.readText().then(done, (e) => done(String(e)))"
        )
        assert copied == workflow_id
        # The graph keeps readable labels and scrolls inside its own box.
        canvas = css(browser, ".graph-canvas[data-rendered]")
        label_height = browser.execute_script(
            "return document.querySelector('.graph-canvas g.node .nodeLabel')"
            ".getBoundingClientRect().height"
        )
        assert label_height >= 10, label_height
        scrolls = browser.execute_script(
            "const c = arguments[0]; return c.scrollWidth > c.clientWidth", canvas
        )
        assert scrolls
        width = "return arguments[0].querySelector('svg').getBoundingClientRect().width"
        before = browser.execute_script(width, canvas)
        css(browser, "button[data-zoom='fit-to-width']").click()
        fitted = browser.execute_script(width, canvas)
        assert fitted < before and fitted <= canvas.size["width"]
        css(browser, "button[data-zoom='zoom-in']").click()
        assert browser.execute_script(width, canvas) > fitted
        assert page_overflow(browser) <= 1
        # The history table reflows: a block per row, each value under its column's name.
        css(browser, ".timeline tbody tr td[data-label='Event']")
        assert tables_reflowed(browser) == [[0, "flex"]]
        # In the list: cut short, whole in its tooltip, and the page does not widen.
        open_page(browser, base_url, "/workflows?definition=order-fulfilment")
        cell = css(browser, f"tr[data-workflow='{workflow_id}'] .long-id-text")
        assert cell.get_attribute("title") == workflow_id
        assert cell.size["width"] < 400
        assert page_overflow(browser) <= 1
        assert css(browser, f"tr[data-workflow='{workflow_id}'] td[data-label='Status']")
        assert tables_reflowed(browser) == [[0, "flex"]]
    finally:
        browser.set_window_size(1280, 800)


def test_the_keyboard_on_the_filters_and_under_the_top_bar(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    start(http, "mail-approval")
    open_page(browser, base_url, "/workflows")
    status = css(browser, "#filter-status")
    browser.execute_script("arguments[0].focus()", status)
    before = browser.current_url
    # Arrow keys on the closed select choose; they do not navigate (WCAG 3.2.2).
    status.send_keys(Keys.ARROW_DOWN)
    status.send_keys(Keys.ARROW_DOWN)
    assert Select(status).first_selected_option.get_attribute("value") != ""
    chosen = Select(status).first_selected_option.get_attribute("value")
    assert browser.current_url == before
    assert browser.switch_to.active_element.get_attribute("id") == "filter-status"
    # Enter (or the Filter button) applies the choice.
    status.send_keys(Keys.ENTER)
    wait_for(browser, lambda d: f"status={chosen}" in d.current_url)
    assert not_reloaded(browser)
    # What takes the focus is not hidden under the sticky top bar.
    workflow_id = start(http, "review-loop", workflowId=uid("focus"))
    browser.set_window_size(1280, 600)
    try:
        open_page(browser, base_url, f"/workflows/{workflow_id}")
        wait_for(browser, lambda d: current_state(d) == "evaluating")
        browser.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        target = css(browser, "#signal-payload")
        browser.execute_script("arguments[0].focus()", target)
        top, bar = browser.execute_script(
            "return [arguments[0].getBoundingClientRect().top,"
            " document.querySelector('.topbar').getBoundingClientRect().bottom]",
            target,
        )
        assert top >= bar, (top, bar)
    finally:
        browser.set_window_size(1280, 800)


def test_static_files_go_out_gzipped(browser: webdriver.Chrome, base_url: str, http: Http) -> None:
    plain = http.request("GET", "/static/app.js")
    packed = http.request("GET", "/static/app.js", headers={"Accept-Encoding": "gzip"})
    assert plain.status == packed.status == 200
    assert "content-encoding" not in plain.headers
    assert packed.headers["content-encoding"] == "gzip"
    assert "accept-encoding" in packed.headers["vary"].lower()
    assert "accept-encoding" in plain.headers["vary"].lower()
    assert gzip.decompress(packed.body) == plain.body
    assert len(packed.body) < len(plain.body) / 2
    # A cold cache: what the first lit workflow page costs on the wire.
    workflow_id = start(http, "order-fulfilment", input={"items": [1]})
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.clearBrowserCache", {})
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "charging")
    sizes = browser.execute_script(
        "return performance.getEntries()"
        ".filter((e) => e.entryType === 'navigation' ||"
        " (e.entryType === 'resource' && !e.name.includes('/api/')))"
        ".map((e) => [e.name, e.transferSize, e.encodedBodySize, e.decodedBodySize])"
    )
    static = [s for s in sizes if "/static/" in s[0]]
    assert any(s[0].endswith("/app.js") for s in static), sizes
    assert all(s[2] < s[3] for s in static if s[3] > 2048), static
    transferred = sum(s[1] for s in sizes)
    decoded = sum(s[3] for s in sizes)
    print(f"first lit workflow page: {transferred} bytes transferred, {decoded} decoded")
    assert transferred < 500_000, sizes
