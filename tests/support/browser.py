"""The console in a real headless Chromium (Debian's, driven through Selenium): starting it,
waiting on the page, screenshots, and what the browser tests measure there: axe-core's
accessibility audit, and the colour contrast of the drawn graphs, which axe does not check
(it skips SVG text): graph_contrast.js."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import JavascriptException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.support.console import Http

REPO = Path(__file__).resolve().parents[2]
WAIT = 30.0  # seconds an element may take to appear: Mermaid's first load on a busy machine
T = TypeVar("T")


def chromium() -> tuple[str, str]:
    """The browser and its driver, installed by scripts/install-chromium when missing."""
    done = subprocess.run(
        [str(REPO / "scripts" / "install-chromium")],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    browser = done.stdout.strip()
    driver = os.environ.get("STATEWRIGHT_CHROMEDRIVER", "/usr/bin/chromedriver")
    return browser, driver


def new_chrome(profile: Path) -> webdriver.Chrome:
    binary, driver = chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",  # the test may run as root, where Chromium's sandbox will not start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,800",
        "--force-prefers-reduced-motion",
        "--lang=en-GB",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(executable_path=driver))


def screenshot(chrome: webdriver.Chrome, shots: Path, name: str) -> None:
    """The page at 1280x800 exactly, whatever the window's frame takes."""
    # The caret and the focus ring of whatever was clicked last are not part of the page.
    chrome.execute_script("document.activeElement?.blur(); window.scrollTo(0, 0)")
    metrics = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    chrome.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
    try:
        # Let the layout (and the charts, which follow their box's size) settle at that size.
        chrome.execute_async_script(
            "const done = arguments[0];"
            "requestAnimationFrame(() => requestAnimationFrame(() => done(true)))"
        )
        shot = chrome.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        chrome.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    path = shots / f"console-{name}.png"
    path.write_bytes(base64.b64decode(shot["data"]))
    assert path.stat().st_size > 10_000, "a blank screenshot"


def wait_for(chrome: webdriver.Chrome, found: Callable[[webdriver.Chrome], T | None]) -> T:
    def probe(driver: webdriver.Chrome) -> T | None:
        try:
            return found(driver)
        except (StaleElementReferenceException, JavascriptException):
            return None  # the page redrew under the probe: look again

    result = WebDriverWait(chrome, WAIT, poll_frequency=0.1).until(probe)
    assert result is not None
    return result


def css(chrome: webdriver.Chrome, selector: str) -> WebElement:
    return wait_for(chrome, lambda d: next(iter(d.find_elements(By.CSS_SELECTOR, selector)), None))


def current_state(chrome: webdriver.Chrome) -> str | None:
    """The state the drawn graph lights (on the SVG node itself, not the caption)."""
    node = chrome.find_elements(By.CSS_SELECTOR, ".graph-canvas[data-rendered] g.node.sw-current")
    return node[0].get_attribute("data-current") if node else None


def open_page(chrome: webdriver.Chrome, base_url: str, path: str) -> None:
    chrome.get(base_url + path)
    # A marker that only a full page load removes: "without a reload" is checked by it.
    chrome.execute_script("window.__statewrightMarker = 'kept'")


def not_reloaded(chrome: webdriver.Chrome) -> bool:
    return bool(chrome.execute_script("return window.__statewrightMarker === 'kept'"))


def start(http: Http, definition: str, **fields: object) -> str:
    answer = http.post("/api/v1/workflows", {"definition": definition, **fields})
    assert answer.status == 200, answer.body
    workflow_id: str = answer.body["workflow"]["workflowId"]
    return workflow_id


def color_scheme(chrome: webdriver.Chrome, scheme: str) -> None:
    """prefers-color-scheme as the page sees it from its next load on."""
    feature = {"name": "prefers-color-scheme", "value": scheme}
    chrome.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [feature]})


def _axe_source() -> str:
    """axe-core from the console's own npm install (console/package.json pins it)."""
    script = REPO / "console" / "node_modules" / "axe-core" / "axe.min.js"
    if not script.exists():
        done = subprocess.run(
            [str(REPO / "console" / "build.sh"), "--deps"],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr
    return script.read_text(encoding="utf-8")


def axe_violations(chrome: webdriver.Chrome) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    if not chrome.execute_script("return typeof window.axe === 'object'"):
        chrome.execute_script(_axe_source())
    found: list[dict[str, Any]] = chrome.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then("
        "  (r) => done(r.violations.filter((v) => ['serious', 'critical'].includes(v.impact))"
        "    .map((v) => ({id: v.id, impact: v.impact, help: v.help,"
        "      nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' '))}))),"
        "  (e) => done([{id: 'axe-error', impact: 'critical', help: String(e), nodes: []}]));"
    )
    return found


def assert_accessible(chrome: webdriver.Chrome, where: str) -> None:
    violations = axe_violations(chrome)
    assert not violations, f"{where}: {json.dumps(violations, indent=1)}"


def graph_contrast(chrome: webdriver.Chrome) -> list[dict[str, Any]]:
    """Each text of the drawn graph (and its marks) with its contrast ratio."""
    script = (Path(__file__).parent / "graph_contrast.js").read_text(encoding="utf-8")
    found: list[dict[str, Any]] = chrome.execute_script(script)
    return found
