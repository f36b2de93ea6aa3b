"""The console's Migrate on a workflow page, in a real headless Chromium against a real
server on PostgreSQL: the dry run's plan is shown first (and a plan that cannot apply,
its problems with their paths), then the migration is applied and shows on the timeline."""

from __future__ import annotations

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.support.api import uid
from tests.support.browser import css, open_page, start, wait_for
from tests.support.console import Http

TICKET = """
name: console-ticket
version: {version}
context:
  amount: {{type: int, default: 0}}
{fields}
states:
  {state}: {{wait: true}}
  done: {{}}
transitions:
  - {{from: {state}, on: approve, to: done}}
"""


@pytest.fixture(scope="module")
def console_definitions() -> dict[str, str]:
    return {
        "console-ticket-v1.yaml": TICKET.format(
            version=1, state="review", fields='  note: {type: string, default: "n"}'
        ),
        "console-ticket-v2.yaml": TICKET.format(
            version=2, state="approval", fields="  priority: {type: int, default: 3}"
        ),
    }


def test_migrate_shows_the_plan_first_then_applies_it(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(http, "console-ticket", workflowId=uid("browser-migrate"), version=1)
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(
        browser, lambda d: d.find_element(By.CSS_SELECTOR, ".page-head .badge").text == "Waiting"
    )
    # A state the target does not declare: the dry run names the problem and its path.
    css(browser, "#migrate-map").send_keys("review=aproval")
    css(browser, "#migrate-button").click()
    dialog = css(browser, "dialog.confirm[open]")
    wait_for(browser, lambda d: "MIGRATION_INVALID" in dialog.text)
    assert "state_map[review]" in dialog.text and "did you mean 'approval'?" in dialog.text
    assert not css(browser, "#confirm-migrate").is_enabled()
    dialog.find_element(By.CSS_SELECTOR, "button[value='keep']").click()
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog.confirm"))

    css(browser, "#migrate-map").clear()
    css(browser, "#migrate-map").send_keys("review=approval")
    css(browser, "#migrate-button").click()
    plan = css(browser, "dialog.confirm [data-plan]")
    assert "review → approval" in plan.text and "1 → 2" in plan.text
    assert css(browser, "[data-plan-defaulted]").text == "priority"
    assert css(browser, "[data-plan-removed]").text == "note"
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert (got["version"], got["revision"]) == (1, "1"), "the dry run saved nothing"
    css(browser, "#migrate-reason").send_keys("review renamed")
    css(browser, "#confirm-migrate").click()
    wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, "tr.history-row[data-revision='2']")
    )
    assert "migrate" in css(browser, "tr.history-row[data-revision='2']").text
    got = http.get(f"/api/v1/workflows/{workflow_id}").body["workflow"]
    assert (got["version"], got["state"], got["revision"]) == (2, "approval", "2")
