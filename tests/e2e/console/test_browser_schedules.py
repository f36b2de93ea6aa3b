"""The console's schedules page in a real headless Chromium against a real server: a
schedule's next fires and recent actions, with links to the instances it started, and
its pause, unpause and trigger buttons working over the HTTP API."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from selenium import webdriver
from selenium.webdriver.common.by import By

from tests.support.api import uid
from tests.support.browser import assert_accessible, css, open_page, screenshot, wait_for
from tests.support.console import Http


def test_the_schedules_page_pauses_unpauses_and_triggers(
    browser: webdriver.Chrome, base_url: str, http: Http, shots: Path
) -> None:
    sid = uid("ui")
    schedule = {
        "spec": {"cronExpressions": ["0 9 * * 1-5"], "timeZone": "Europe/Berlin"},
        "action": {"definition": "mail-approval", "input": {"topic": "from a schedule"}},
        "state": {"paused": True, "note": "made paused"},
    }
    answer = http.post(f"/api/v1/schedules?scheduleId={sid}", schedule)
    assert answer.status == 200, answer.body
    open_page(browser, base_url, "/schedules")
    row = f'tr[data-schedule="{sid}"]'
    assert "paused" in css(browser, row).text and "made paused" in css(browser, row).text
    assert_accessible(browser, "schedules")

    css(browser, f'{row} button[data-action="trigger"]').click()
    started = wait_for(
        browser,
        lambda d: next(iter(d.find_elements(By.CSS_SELECTOR, f"{row} .schedule-action a")), None),
    )
    workflow_id = started.text
    assert workflow_id.startswith(f"{sid}-")
    assert http.get(f"/api/v1/workflows/{workflow_id}").status == 200

    css(browser, f'{row} button[data-action="unpause"]').click()
    wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'{row} button[data-action="pause"]')
    )
    shown = http.get(f"/api/v1/schedules/{sid}").body["schedule"]
    assert shown["state"]["paused"] is False and len(shown["info"]["nextFireTimes"]) == 10
    screenshot(browser, shots, "schedules")
    css(browser, f'{row} button[data-action="pause"]').click()
    wait_for(
        browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'{row} button[data-action="unpause"]')
    )
    assert http.get(f"/api/v1/schedules/{sid}").body["schedule"]["state"]["paused"] is True

    # The instance's link is the console's page of it.
    href = css(browser, f"{row} .schedule-action a").get_attribute("href") or ""
    assert unquote(href) == f"{base_url}/workflows/{workflow_id}"
