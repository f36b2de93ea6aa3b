"""One trace of order-fulfilment, end to end, as a waterfall page and its screenshot.

Not a test: ``make trace-screenshot`` runs it and writes docs/images/trace-order-fulfilment.png
(and the page beside it, under --out). It runs the real server in this process over a
SQLite file, with an in-memory span exporter behind the server's own BatchSpanProcessor
(as tests/e2e/test_trace_tree.py does), and a Python worker of the Python client, in a
thread, with a global SDK tracer provider recording the caller's and the worker's spans.
The caller places one order under a span of its own; the worker charges and ships it. The
spans of that trace are drawn as a plain HTML waterfall (one row per span, indented under
its parent, a bar from its start to its end, its links named) and Debian's headless
Chromium, driven by Selenium as the console's browser tests drive it, takes the picture.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import html
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from statewright import Client, Worker
from statewright.models import Task

from statewrightd.config import ServerConfig
from statewrightd.observability.setup import Observability
from statewrightd.server import Server

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "definitions"
PICTURE = ROOT / "docs" / "images" / "trace-order-fulfilment.png"
WIDTH = 1280
# Where each span was recorded, by who recorded it: the bar's colour and the row's label.
SERVER, CLIENT = "statewrightd", "caller and worker (Python client)"


def _order(target: str) -> None:
    """Places one order under the caller's span and waits for it while one worker works it
    to its end (polling before the order exists, so that the waterfall has no idle gap)."""
    tracer = trace.get_tracer("statewright.trace_screenshot")

    def charge(task: Task) -> dict[str, object]:
        with tracer.start_as_current_span("charge card"):
            return {"id": "ch-" + str(task.input["order"])[-6:]}

    def ship(task: Task) -> dict[str, object]:
        with tracer.start_as_current_span("book courier"):
            return {"tracking": "TRK-1"}

    with Client(target) as client:
        worker = Worker(client, poll_wait=1.0)
        worker.register("payments", charge)
        worker.register("shipping", ship)
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            # The caller waits for the order to finish (a watch), inside its own span.
            with tracer.start_as_current_span("place order", kind=SpanKind.CLIENT):
                final = client.execute(
                    "order-fulfilment",
                    {"items": ["book", "pen"], "price": 12.5},
                    until="finish",
                    timeout=60,
                )
        finally:
            worker.stop()
            thread.join(30)
    if final.state != "shipped":
        raise SystemExit(f"the order did not ship: {final}")


async def _spans(workdir: Path) -> list[tuple[ReadableSpan, str]]:
    """Runs the server and the order; every span recorded, with who recorded it."""
    provider = TracerProvider()
    trace.set_tracer_provider(provider)
    client_spans = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(client_spans))
    server_spans = InMemorySpanExporter()
    config = ServerConfig(
        listen="127.0.0.1:0",
        database_url=f"sqlite:///{workdir / 'statewright.db'}",
        definitions_dir=EXAMPLES,
        grace_seconds=1.0,
    )
    server = Server(config, Observability(config, env={}, span_exporters=[server_spans]))
    port = await server.start()
    try:
        await asyncio.to_thread(_order, f"127.0.0.1:{port}")
    finally:
        await server.drain()  # flushes the server's spans
    return [(s, SERVER) for s in server_spans.get_finished_spans()] + [
        (s, CLIENT) for s in client_spans.get_finished_spans()
    ]


def _ids(span: ReadableSpan) -> tuple[int, int]:
    """The span's trace id and span id."""
    context = span.get_span_context()
    assert context is not None, span.name
    return context.trace_id, context.span_id


def _trace_of(spans: list[tuple[ReadableSpan, str]]) -> list[tuple[ReadableSpan, str, int]]:
    """The caller's trace, parents before their children (by start time): span, who, depth."""
    (caller,) = [s for s, _ in spans if s.name == "place order"]
    trace_id = _ids(caller)[0]
    mine = [(s, who) for s, who in spans if _ids(s)[0] == trace_id]
    children: dict[int | None, list[tuple[ReadableSpan, str]]] = {}
    for span, who in mine:
        children.setdefault(None if span.parent is None else span.parent.span_id, []).append(
            (span, who)
        )
    ordered: list[tuple[ReadableSpan, str, int]] = []

    def walk(parent: int | None, depth: int) -> None:
        for span, who in sorted(children.get(parent, []), key=lambda x: x[0].start_time or 0):
            ordered.append((span, who, depth))
            walk(_ids(span)[1], depth + 1)

    walk(None, 0)
    return ordered


def _note(span: ReadableSpan, names: dict[int, str]) -> str:
    """What a row says under its name: a step's outcome and the spans it is linked to."""
    attributes = span.attributes or {}
    said = []
    if "statewright.revision" in attributes:
        state, revision = attributes.get("statewright.state"), attributes["statewright.revision"]
        said.append(f"→ {state!s}, revision {revision!s}")
    if "statewright.scheduled_task_id" in attributes:
        said.append("schedules a task")
    for link in span.links:
        why = (link.attributes or {}).get("statewright.link")
        if why is None or why in ("committed by", "saved step"):
            continue  # the storage batch's: a trace of its own, not drawn here
        said.append(f"linked ({why}) to {names.get(link.context.span_id, 'another trace')}")
    return "; ".join(said)


def page(rows: Sequence[tuple[ReadableSpan, str, int]]) -> str:
    """The waterfall as one self-contained HTML page."""
    start = min(s.start_time or 0 for s, _, _ in rows)
    end = max(s.end_time or 0 for s, _, _ in rows)
    total = max(end - start, 1)
    names = {_ids(s)[1]: s.name for s, _, _ in rows}
    lines = []
    for span, who, depth in rows:
        began, ended = (span.start_time or start) - start, (span.end_time or end) - start
        left, width = 100 * began / total, max(100 * (ended - began) / total, 0.3)
        note = _note(span, names)
        lines.append(
            f'<tr><td class="name" style="padding-left:{8 + 14 * depth}px">'
            f"<code>{html.escape(span.name)}</code>"
            + (f'<div class="note">{html.escape(note)}</div>' if note else "")
            + "</td>"
            f'<td class="lane"><div class="bar {"server" if who == SERVER else "client"}" '
            f'style="left:{left:.2f}%;width:{width:.2f}%"></div></td>'
            f'<td class="ms">{(ended - began) / 1e6:.1f} ms</td></tr>'
        )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>order-fulfilment: one trace</title>
<style>
body {{ font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #1b1f24; background: #fff; }}
h1 {{ font-size: 16px; margin: 0 0 4px; }}
p {{ margin: 0 0 10px; color: #57606a; }}
table {{ border-collapse: collapse; width: 100%; table-layout: fixed; }}
th {{ font-weight: normal; color: #57606a; text-align: left; padding: 2px 6px;
      border-bottom: 1px solid #d0d7de; }}
th.end, td.ms {{ text-align: right; }}
td {{ padding: 4px 6px; border-bottom: 1px solid #eaeef2; vertical-align: middle; }}
code {{ font: 12px ui-monospace, monospace; }}
.note {{ color: #57606a; font-size: 12px; }}
td.lane {{ position: relative; }}
td.ms {{ color: #57606a; }}
.bar {{ position: absolute; top: calc(50% - 6px); height: 12px; border-radius: 2px; }}
.server {{ background: #0969da; }} .client {{ background: #bf8700; }}
.key span {{ display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 12px; }}
</style></head><body>
<h1>order-fulfilment: one order, one trace ({len(rows)} spans, {total / 1e6:.0f} ms)</h1>
<p>From the caller's span through each step to the worker and back: every step that
finishes a task is linked to the step that scheduled it and to the worker's span.</p>
<p class="key"><span class="server"></span>{SERVER}<span class="client"></span>{CLIENT}</p>
<table><colgroup><col style="width:470px"><col><col style="width:80px"></colgroup>
<tr><th>span</th><th>0 ms<span style="float:right">{total / 1e6:.0f} ms</span></th>
<th class="end">duration</th></tr>{"".join(lines)}</table>
</body></html>
"""


def screenshot(html_path: Path, picture: Path, chromium: str, driver: str) -> None:
    """The page's full height at WIDTH pixels, by headless Chromium (as the console tests)."""
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in (
        "--headless=new",
        "--no-sandbox",  # may run as root, where Chromium's sandbox will not start
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={WIDTH},800",
        "--lang=en-GB",
    ):
        options.add_argument(argument)
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    try:
        chrome.get(html_path.as_uri())
        bottom = "return Math.ceil(document.body.getBoundingClientRect().bottom) + 16"
        height = int(chrome.execute_script(bottom))
        metrics = {"width": WIDTH, "height": height, "deviceScaleFactor": 1, "mobile": False}
        chrome.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        shot = chrome.execute_cdp_cmd("Page.captureScreenshot", {"format": "png"})
    finally:
        chrome.quit()
    picture.write_bytes(base64.b64decode(shot["data"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--picture", type=Path, default=PICTURE)
    parser.add_argument("--out", type=Path, help="keep the HTML page here (default: not kept)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--chromedriver", default="/usr/bin/chromedriver")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="statewright-trace-") as tmp:
        workdir = Path(tmp)
        rows = _trace_of(asyncio.run(_spans(workdir)))
        html_path = (args.out or workdir) / "trace-order-fulfilment.html"
        html_path.parent.mkdir(parents=True, exist_ok=True)
        html_path.write_text(page(rows), encoding="utf-8")
        screenshot(html_path, args.picture, args.chromium, args.chromedriver)
    print(f"{args.picture}: {len(rows)} spans of one trace")


if __name__ == "__main__":
    main()
