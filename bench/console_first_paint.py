"""The console's first paint on a cold browser: how long until a workflow page shows its
graph with the current state lit, and how many bytes it took on the wire.

Not a test. Run it against a running server with the console on (``statewrightd dev``
serves it on 127.0.0.1:8080), as a separate process:

    .venv/bin/python bench/console_first_paint.py [--target LABEL=URL ...] [--runs 7]

Each run starts Debian's Chromium (headless, through Selenium) with a new, empty profile,
so nothing is cached, and opens the page of a mail-approval instance waiting for approval
(started over the HTTP API first). The time is the page's own clock from the navigation's
start to the moment the lit node is in the document (a MutationObserver installed before
any of the page's scripts runs); the browser's start is not counted. Bytes are what the
navigation and every resource it loaded transferred (Resource Timing's transferSize: the
compressed size where the server compressed). Goals: the first lit page within 1 s and
under 500 KB, each printed as a ratio (>= 1 meets it), with the load average, since the
machine is shared.

Repeat ``--target`` to compare builds, each served by its own server (a checkout before a
change and one after it): their runs alternate, so that the shared machine's drift hits
both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.browser import new_chrome  # noqa: E402

GOAL_MS = 1000.0
GOAL_BYTES = 500_000
LIT = ".graph-canvas[data-rendered] g.node.sw-current"

# Runs before the page's first script: notes when the lit node first appears.
OBSERVER = f"""
window.__firstLit = undefined;
new MutationObserver((_, observer) => {{
  if (document.querySelector({json.dumps(LIT)})) {{
    window.__firstLit = performance.now();
    observer.disconnect();
  }}
}}).observe(document, {{ subtree: true, childList: true, attributes: true }});
"""

TRANSFERRED = """
const entries = [...performance.getEntriesByType("navigation"),
                 ...performance.getEntriesByType("resource")];
return {
  transferred: entries.reduce((sum, e) => sum + (e.transferSize || 0), 0),
  decoded: entries.reduce((sum, e) => sum + (e.decodedBodySize || 0), 0),
  requests: entries.length,
};
"""


def start_instance(url: str) -> str:
    workflow_id = f"first-paint-{os.getpid()}-{int(time.time() * 1000)}"
    body = json.dumps(
        {"definition": "mail-approval", "workflowId": workflow_id, "input": {"topic": "bench"}}
    ).encode()
    request = urllib.request.Request(
        f"{url}/api/v1/workflows",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        json.load(answer)
    return workflow_id


def one_run(url: str, path: str) -> tuple[float, dict[str, int]]:
    with tempfile.TemporaryDirectory(prefix="first-paint-") as profile:
        chrome = new_chrome(Path(profile))
        try:
            chrome.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER})
            chrome.get(url + path)
            deadline = time.monotonic() + 60
            lit = None
            while lit is None and time.monotonic() < deadline:
                lit = chrome.execute_script("return window.__firstLit")
                if lit is None:
                    time.sleep(0.02)
            if lit is None:
                raise SystemExit(f"the lit node never appeared on {path}")
            sizes: dict[str, int] = chrome.execute_script(TRANSFERRED)
            return float(lit), sizes
        finally:
            chrome.quit()


def report(label: str, times: list[float], sizes: dict[str, int]) -> None:
    median = statistics.median(times)
    transferred = sizes["transferred"]
    print(
        f"{label}: first lit page, cold: median {median:.0f} ms, best {min(times):.0f} ms, "
        f"worst {max(times):.0f} ms over {len(times)} runs; {transferred:,} bytes "
        f"transferred ({sizes['decoded']:,} decoded) in {sizes['requests']} requests"
    )
    print(f"  goal first lit page <= 1 s: {GOAL_MS:.0f} / {median:.0f} ms = {GOAL_MS / median:.2f}")
    print(
        f"  goal bytes <= 500 KB: {GOAL_BYTES:,} / {transferred:,} = {GOAL_BYTES / transferred:.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--target",
        action="append",
        metavar="LABEL=URL",
        help="a build to measure and its console's base URL; repeat it to compare builds, "
        "whose runs then alternate (default: this build=http://127.0.0.1:8080)",
    )
    parser.add_argument("--runs", type=int, default=7, help="cold runs of each target")
    args = parser.parse_args()
    if not 1 <= args.runs <= 50:
        raise SystemExit("--runs takes 1 to 50")
    targets: list[tuple[str, str, str]] = []
    for spec in args.target or ["this build=http://127.0.0.1:8080"]:
        label, _, url = spec.rpartition("=")
        if not label or not url.startswith("http"):
            raise SystemExit(f"--target takes LABEL=URL, not {spec!r}")
        url = url.rstrip("/")
        targets.append((label, url, f"/workflows/{start_instance(url)}"))
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    times: dict[str, list[float]] = {label: [] for label, _, _ in targets}
    sizes: dict[str, dict[str, int]] = {}
    # Alternating the targets run by run lets a drift of the shared machine hit all alike.
    for n in range(args.runs):
        for label, url, path in targets:
            ms, sizes[label] = one_run(url, path)
            times[label].append(ms)
            print(f"  run {n + 1} {label}: {ms:7.1f} ms, {sizes[label]['transferred']:,} bytes")
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("goals (ratio >= 1 meets the goal):")
    for label, _, _ in targets:
        report(label, times[label], sizes[label])


if __name__ == "__main__":
    main()
