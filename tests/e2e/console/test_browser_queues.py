"""A workflow whose task waits on a queue no worker polls says so on its page, with a link
to the queues; the notice goes once a worker takes the task. On a server of its own, whose
queues nobody else polls, and which counts a queue stalled after two seconds without a
poll instead of a minute (tests.support.quick_stall_window), so the test waits seconds."""

from __future__ import annotations

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By

from statewrightd.server import TEST_HOOKS_ENV
from tests.support import quick_stall_window
from tests.support.api import uid
from tests.support.browser import (
    assert_accessible,
    css,
    current_state,
    open_page,
    start,
    wait_for,
)
from tests.support.console import Http
from tests.support.deployment import REPO
from tests.support.server import wait_until

# Past the hook's two seconds and the page's 10 s look at the queues, on a loaded machine.
STALL_WAIT = 120.0


@pytest.fixture(scope="module")
def console_server_env() -> dict[str, str]:
    return {TEST_HOOKS_ENV: quick_stall_window.MODULE, "PYTHONPATH": str(REPO)}


def _stalled(http: Http, queue: str) -> bool:
    answer = http.get("/api/v1/diagnostics")
    assert answer.status == 200, answer.body
    return any(q["queue"] == queue and q["stalled"] for q in answer.body["taskQueues"])


def test_a_task_on_a_queue_nobody_polls_is_pointed_out(
    browser: webdriver.Chrome, base_url: str, http: Http
) -> None:
    workflow_id = start(
        http, "order-fulfilment", workflowId=uid("unpolled"), input={"items": ["a"], "price": 2.0}
    )
    open_page(browser, base_url, f"/workflows/{workflow_id}")
    wait_for(browser, lambda d: current_state(d) == "charging")
    # Until the server calls the queue stalled, the page says nothing of it.
    if not _stalled(http, "payments"):
        assert not browser.find_elements(By.CSS_SELECTOR, "[data-stalled-queue]")
    assert wait_until(lambda: _stalled(http, "payments"), timeout=STALL_WAIT, interval=1.0)

    notice = css(browser, "[data-stalled-queue='payments']")
    assert "No worker has polled payments since this server started" in notice.text
    assert "min ago" in notice.text
    runtime = notice.find_element(By.CSS_SELECTOR, "a[href='/runtime']")
    assert "Task queues" in runtime.text
    assert_accessible(browser, "workflow page with a stalled queue")

    # A worker takes the task: the page drops the notice as the task's lease shows.
    polled = http.post("/api/v1/tasks:poll", {"queue": "payments", "identity": "e2e-worker"})
    assert polled.status == 200, polled.body
    assert [t["workflow"] for t in polled.body["tasks"]] == [f"workflows/{workflow_id}"]
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-stalled-queue]"))

    # Its attempt fails and the task waits again: once the queue is a minute past that
    # poll, the page says how long since it.
    task = polled.body["tasks"][0]
    failed = http.post(
        f"/api/v1/{task['name']}/fail",
        {
            "leaseToken": task["leaseToken"],
            "error": {"type": "GATEWAY_DOWN", "message": "no answer"},
            "retryDelay": "1s",
        },
    )
    assert failed.status == 200 and failed.body["task"]["status"] == "TASK_STATUS_BACKOFF"
    assert wait_until(lambda: _stalled(http, "payments"), timeout=STALL_WAIT, interval=1.0)
    again = css(browser, "[data-stalled-queue='payments']")
    assert "No worker has polled payments for " in again.text and "min" in again.text
    assert "since this server started" not in again.text
