"""Batch operations in the console, in a real headless Chromium against a real server with
an auth config: "Apply to all matching" on the workflows list runs a dry run first (the
count and the first instances), then starts the batch and follows it on its page to the
end; a running batch is cancelled from its page, its failures listed; a caller whose
role does not reach the operation is shown the server's refusal."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.support.api import uid
from tests.support.browser import (
    assert_accessible,
    css,
    not_reloaded,
    open_page,
    screenshot,
    start,
    wait_for,
)
from tests.support.console import Http

KEYS = {"admin": "sw-batch-admin-c0ffee01", "client": "sw-batch-client-c0ffee02"}
# Each test's instances are of a definition of its own, so that a list filtered by it
# holds only that test's, whichever tests ran before.
WAITING = """
name: {name}
version: 1
context:
  note: {{type: string, default: ""}}
states:
  review: {{wait: true}}
  done: {{}}
transitions:
  - {{from: review, on: approve, to: done}}
"""
NAMES = ("console-batch-pause", "console-batch-slow", "console-batch-denied", "console-batch-ids")


@pytest.fixture(scope="module")
def console_definitions() -> dict[str, str]:
    return {f"{name}.yaml": WAITING.format(name=name) for name in NAMES}


@pytest.fixture(scope="module")
def console_server_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    def key(name: str, role: str) -> str:
        digest = hashlib.sha256(KEYS[name].encode()).hexdigest()
        return f"  - {{name: {name}, sha256: {digest}, grants: [{{role: {role}}}]}}\n"

    auth = tmp_path_factory.mktemp("batch-auth") / "auth.yaml"
    auth.write_text("api_keys:\n" + key("admin", "admin") + key("client", "client"))
    return {"STATEWRIGHT_AUTH_CONFIG": str(auth)}


@pytest.fixture
def http(base_url: str) -> Http:
    return Http(base_url, token=KEYS["admin"])


def sign_in(chrome: webdriver.Chrome, base_url: str, who: str) -> None:
    """The console's bearer token for this tab, as its Token dialog keeps it."""
    open_page(chrome, base_url, "/definitions")
    chrome.execute_script("sessionStorage.setItem('statewright.token', arguments[0])", KEYS[who])


def workflow(http: Http, workflow_id: str) -> dict[str, Any]:
    answer = http.get(f"/api/v1/workflows/{workflow_id}")
    assert answer.status == 200, answer.body
    found: dict[str, Any] = answer.body["workflow"]
    return found


def open_batch_dialog(
    chrome: webdriver.Chrome, base_url: str, definition: str, n: int, id_prefix: str = ""
) -> None:
    """The list of ``definition``'s waiting instances (whose ids start with ``id_prefix``),
    and its Apply to all N matching."""
    query = f"definition={definition}&status=WORKFLOW_STATUS_WAITING"
    query += f"&idPrefix={id_prefix}" if id_prefix else ""
    open_page(chrome, base_url, f"/workflows?{query}")
    button = css(chrome, "#batch-apply")
    wait_for(chrome, lambda d: button.text == f"Apply to all {n} matching…")
    button.click()
    css(chrome, "dialog.batch-dialog[open]")


def test_apply_to_all_matching_dry_runs_then_pauses_them_all(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path
) -> None:
    ids = sorted(start(http, NAMES[0], workflowId=uid("batch-pause")) for _ in range(3))
    sign_in(browser, base_url, "admin")
    open_batch_dialog(browser, base_url, NAMES[0], 3)
    assert "status = WAITING" in css(browser, "#batch-scope").text
    Select(css(browser, "#batch-operation")).select_by_value("pause")
    assert "operator role" in css(browser, "#batch-does").text
    # No reason: nothing is sent.
    css(browser, "#batch-dry-run").click()
    assert "REASON_REQUIRED" in css(browser, "#batch-preview [role='alert']").text
    css(browser, "#batch-reason").send_keys("maintenance window")
    css(browser, "#batch-rate").send_keys("100")
    css(browser, "#batch-dry-run").click()
    matched = css(browser, "#batch-matched")
    assert matched.get_attribute("data-matched") == "3"
    sample = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#batch-sample code")]
    assert sample == ids, "the first instances, in the batch's (workflow id) order"
    assert css(browser, "#batch-start").text == "Start batch on 3"
    # The dry run saved nothing: no instance is paused, no batch exists.
    assert not any(workflow(http, w)["paused"] for w in ids)
    listed = http.get("/api/v1/batches").body.get("batches", [])
    assert not [b for b in listed if b["definition"] == NAMES[0]]
    screenshot(browser, shots, "batch-dialog")

    css(browser, "#batch-start").click()
    wait_for(browser, lambda d: "/batches/" in d.current_url)
    assert not_reloaded(browser)
    batch_id = browser.current_url.rsplit("/", 1)[1]
    head = css(browser, ".head-facts[data-state]")
    wait_for(browser, lambda d: head.get_attribute("data-state") == "BATCH_STATE_COMPLETED")
    counts = css(browser, "#batch-counts")
    assert [counts.get_attribute(f"data-{k}") for k in ("matched", "done", "failed")] == [
        "3",
        "3",
        "0",
    ]
    assert "No instance has failed." in css(browser, "#batch-failures").text
    assert not css(browser, "#batch-cancel").is_displayed()
    assert "maintenance window" in css(browser, "#batch-reason-text").text
    for w in ids:
        got = workflow(http, w)
        assert got["paused"] is True and got["status"] == "WORKFLOW_STATUS_WAITING", got
        assert got["pause"]["reason"] == "maintenance window", got
    batch = http.get(f"/api/v1/batches/{batch_id}").body["batch"]
    assert (batch["state"], batch["actor"], batch["done"]) == (
        "BATCH_STATE_COMPLETED",
        "key:admin",
        "3",
    )
    assert_accessible(browser, f"/batches/{batch_id}")
    screenshot(browser, shots, "batch")

    # The batches list, from the navigation: the batch, newest first, its state filter.
    css(browser, "nav a[data-nav='batches']").click()
    row = css(browser, f'tr[data-batch="{batch_id}"]')
    assert "Pause" in row.text and "maintenance window" in row.text and "3 of 3" in row.text
    assert_accessible(browser, "/batches")
    Select(css(browser, "#batch-state")).select_by_value("BATCH_STATE_CANCELLED")
    wait_for(browser, lambda d: "state=BATCH_STATE_CANCELLED" in d.current_url)
    # Drawn once the page has read the list: its rows, or the row that says there is none.
    rows = wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#batches tbody tr"))
    states = {r.get_attribute("data-state") for r in rows if r.get_attribute("data-batch")}
    assert states <= {"BATCH_STATE_CANCELLED"}, states
    Select(css(browser, "#batch-state")).select_by_value("BATCH_STATE_COMPLETED")
    css(browser, f'tr[data-batch="{batch_id}"] a').click()
    wait_for(browser, lambda d: d.current_url == f"{base_url}/batches/{batch_id}")
    assert not_reloaded(browser)


def test_a_list_narrowed_by_id_prefix_batches_only_what_it_shows(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    base = uid("batch-ids")
    shown = sorted(start(http, NAMES[3], workflowId=f"{base}-in-{i}") for i in range(2))
    others = [start(http, NAMES[3], workflowId=f"{base}-out-{i}") for i in range(2)]
    sign_in(browser, base_url, "admin")
    open_batch_dialog(browser, base_url, NAMES[3], 2, id_prefix=f"{base}-in")
    assert f"ids starting with {base}-in" in css(browser, "#batch-scope").text
    Select(css(browser, "#batch-operation")).select_by_value("pause")
    css(browser, "#batch-reason").send_keys("only these")
    css(browser, "#batch-dry-run").click()
    assert css(browser, "#batch-matched").get_attribute("data-matched") == "2"
    sample = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#batch-sample code")]
    assert sample == shown
    css(browser, "#batch-start").click()
    wait_for(browser, lambda d: "/batches/" in d.current_url)
    batch_id = browser.current_url.rsplit("/", 1)[1]
    head = css(browser, ".head-facts[data-state]")
    wait_for(browser, lambda d: head.get_attribute("data-state") == "BATCH_STATE_COMPLETED")
    assert [workflow(http, w)["paused"] for w in shown + others] == [True, True, False, False]
    batch = http.get(f"/api/v1/batches/{batch_id}").body["batch"]
    assert (batch["idPrefix"], batch["done"]) == (f"{base}-in", "2")
    css(browser, "nav a[data-nav='batches']").click()
    row = css(browser, f'tr[data-batch="{batch_id}"]')
    assert f"ids starting with {base}-in" in row.text


def test_a_running_batch_shows_its_failures_and_is_cancelled_from_its_page(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    # A retry of instances that are not FAILED fails on each; at one every five seconds
    # the batch is still running when it is cancelled.
    ids = sorted(start(http, NAMES[1], workflowId=uid("batch-slow")) for _ in range(4))
    sign_in(browser, base_url, "admin")
    open_batch_dialog(browser, base_url, NAMES[1], 4)
    Select(css(browser, "#batch-operation")).select_by_value("retry")
    css(browser, "#batch-reason").send_keys("retry the stuck ones")
    css(browser, "#batch-rate").send_keys("0.2")
    css(browser, "#batch-dry-run").click()
    assert css(browser, "#batch-matched").get_attribute("data-matched") == "4"
    css(browser, "#batch-start").click()
    # The page reads the batch again while it runs: the first failure appears unasked.
    failure = css(browser, f'#batch-failures tr[data-failure="{ids[0]}"]')
    assert "FAILED_PRECONDITION" in failure.text
    assert failure.find_element(By.CSS_SELECTOR, "a").get_attribute("href") == (
        f"{base_url}/workflows/{ids[0]}"
    )
    assert css(browser, ".head-facts").get_attribute("data-state") == "BATCH_STATE_RUNNING"
    batch_id = browser.current_url.rsplit("/", 1)[1]

    css(browser, "#batch-cancel").click()
    dialog = css(browser, "dialog.confirm[open]")
    assert f"Cancel batch {batch_id}?" in dialog.text
    css(browser, "#batch-cancel-reason-input").send_keys("wrong filter")
    css(browser, "#confirm-batch-cancel").click()
    head = css(browser, ".head-facts[data-state]")
    wait_for(browser, lambda d: head.get_attribute("data-state") == "BATCH_STATE_CANCELLED")
    assert "wrong filter" in css(browser, "#batch-cancel-reason").text
    assert not css(browser, "#batch-cancel").is_displayed()
    batch = http.get(f"/api/v1/batches/{batch_id}").body["batch"]
    assert batch["state"] == "BATCH_STATE_CANCELLED" and "wrong filter" in batch["cancelReason"]
    assert batch["done"] == "0", "a retry of a waiting instance never succeeds"
    # The instances it reached were left as they were.
    assert all(workflow(http, w)["status"] == "WORKFLOW_STATUS_WAITING" for w in ids)


def test_a_caller_without_the_role_is_shown_the_refusal(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, NAMES[2], workflowId=uid("batch-denied"))
    sign_in(browser, base_url, "client")
    try:
        open_batch_dialog(browser, base_url, NAMES[2], 1)
        Select(css(browser, "#batch-operation")).select_by_value("pause")
        css(browser, "#batch-reason").send_keys("not mine to pause")
        css(browser, "#batch-dry-run").click()
        alert = css(browser, "#batch-preview [role='alert']")
        assert "PERMISSION_DENIED" in alert.text
        assert "needs the operator role" in css(browser, "#batch-denied").text
        assert not css(browser, "#batch-start").is_enabled()
        assert workflow(http, workflow_id)["paused"] is False
        # Reading batches needs the operator role too.
        open_page(browser, base_url, "/batches")
        assert "PERMISSION_DENIED" in css(browser, "main [role='alert']").text
    finally:
        sign_in(browser, base_url, "admin")
