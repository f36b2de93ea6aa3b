"""The web console's cost and speed: open pages against start-to-complete throughput, and
how soon a page hears of a committed step.

Not a test. Run it through bench/run_console.sh, which brings its own PostgreSQL. On
127.0.0.1 only, one statewrightd (one process, --http-listen) and, for each measured run,
one "pages" process (this file with --pages-process: Python, aiohttp) that behaves as open
console workflow pages do: each page reads its workflow and its definition, then follows
the workflow's Server-Sent Events stream (afterRevision as the page asks), and the
process steps the followed workflows (review-loop, signalled over the HTTP API, open loop,
``--follow-rate`` steps/s in all) for as long as the run lasts.

1. Cost: rounds of two arms, interleaved so that a drift of the machine hits both alike,
   each a closed-loop start-to-complete run (bench/loadgen.py, the ``start`` scenario:
   order-pricing, one step to COMPLETED; bench/goload by default) while the pages process
   steps ``--pages`` live workflows: in arm ``pages`` each of them is followed by an open
   page, in arm ``none`` no page is open. Reports each arm's median throughput and their
   ratio (goal: the pages cost < 10%, a ratio > 0.90).
2. Latency: ``--latency-pages`` pages following as many workflows, stepped at
   ``--latency-rate`` steps/s in all for ``--latency-seconds``, with no other load.
   For every step a page receives: the time from the signal's send (an upper bound of
   commit-to-page: it includes the step's own durable save) and from the step's time as
   history records it (the engine stamps a step before its save commits, so this too is
   an upper bound); p50/p99/max, and any step lost or seen twice (goal: p99 <= 100 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.timer_bench import cpu_seconds, percentile, server, workspace
from statewrightd.definitions.files import is_definition_file
from tests.support.browser import chromium

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "definitions"
STARTUP_SECONDS = 60.0
HISTORY_SHOWN = 200  # the workflow page replays at most this many revisions (workflow.ts)
OPEN_CONCURRENCY = 20  # pages opened at once while the process sets up


# -- the pages process ---------------------------------------------------------------------


class Page:
    """One open workflow page: its stream, and when each revision reached it."""

    def __init__(self, workflow_id: str) -> None:
        self.workflow_id = workflow_id
        self.revision = 1  # the last revision a signal was answered with
        self.busy = False
        self.ready = asyncio.Event()
        self.seen: dict[int, tuple[float, float]] = {}  # revision -> (received, step time)
        self.duplicates = 0
        self.stream_errors = 0


def _step_time(data: dict[str, Any]) -> float:
    stamp = str(data.get("workflow", {}).get("updateTime", ""))
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else 0.0


async def follow(session: aiohttp.ClientSession, base: str, page: Page) -> None:
    path = f"{base}/api/v1/workflows/{page.workflow_id}"
    try:
        async with session.get(path) as got:
            workflow = (await got.json())["workflow"]
        definition = (
            f"{base}/api/v1/definitions/{workflow['definition']}/versions/{workflow['version']}"
        )
        async with session.get(definition) as got:
            await got.read()
        after = max(0, int(workflow["revision"]) - HISTORY_SHOWN)
        headers = {"Accept": "text/event-stream"}
        timeout = aiohttp.ClientTimeout(total=None, sock_read=None)
        async with session.get(
            f"{path}/watch?afterRevision={after}", headers=headers, timeout=timeout
        ) as stream:
            kind, data = "message", ""
            async for raw in stream.content:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event:"):
                    kind = line[6:].strip()
                elif line.startswith("data:"):
                    data += line[5:].strip()
                elif not line and data:
                    if kind == "step":
                        step = json.loads(data)
                        revision = int(step["revision"])
                        if revision in page.seen:
                            page.duplicates += 1
                        page.seen[revision] = (time.time(), _step_time(step))
                        page.ready.set()
                    kind, data = "message", ""
    except (TimeoutError, aiohttp.ClientError):
        page.stream_errors += 1
    finally:
        page.ready.set()


async def pages_process(args: argparse.Namespace) -> None:
    base = args.base
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        gate = asyncio.Semaphore(OPEN_CONCURRENCY)

        async def create(index: int) -> Page:
            body = {
                "definition": "review-loop",
                "input": {"document": f"d{index}", "max_iterations": 10**9},
            }
            async with gate, session.post(f"{base}/api/v1/workflows", json=body) as answer:
                assert answer.status == 200, await answer.text()
                return Page((await answer.json())["workflow"]["workflowId"])

        pages = await asyncio.gather(*(create(i) for i in range(args.workflows)))
        tasks: list[asyncio.Task[None]] = []
        if args.open_pages:
            for page in pages:
                async with gate:
                    tasks.append(asyncio.create_task(follow(session, base, page)))
                    await asyncio.wait_for(page.ready.wait(), 30)  # its replay of revision 1
        print("ready", flush=True)

        sent: dict[tuple[str, int], float] = {}
        answered: dict[tuple[str, int], float] = {}  # when the signal's answer came back
        errors: dict[str, int] = {}
        inflight: set[asyncio.Task[None]] = set()

        def failed(key: str) -> None:
            errors[key] = errors.get(key, 0) + 1

        async def signal(page: Page) -> None:
            # The next event follows the instance's actual revision: a refused signal
            # leaves it where it was (evaluating at odd revisions, improving at even).
            body = (
                {"event": "score", "payload": {"score": 0.1}}
                if page.revision % 2 == 1
                else {"event": "revised", "payload": {"document": "again"}}
            )
            page.busy = True
            began = time.time()
            url = f"{base}/api/v1/workflows/{page.workflow_id}/signal"
            try:
                async with session.post(url, json=body) as answer:
                    got = await answer.json()
                if answer.status != 200:
                    # An error body: {"error": {..., "details": [ErrorInfo, ...]}}.
                    details = got.get("error", {}).get("details", [])
                    reason = next((d["reason"] for d in details if "reason" in d), "")
                    failed(f"{answer.status} {reason}")
                elif got.get("accepted") is not True:
                    failed(f"not accepted {got.get('reason', '')}")
                else:
                    page.revision = int(got["workflow"]["revision"])
                    sent[(page.workflow_id, page.revision)] = began
                    answered[(page.workflow_id, page.revision)] = time.time()
            except aiohttp.ClientError as exc:
                failed(type(exc).__name__)
            finally:
                page.busy = False

        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_stdin() -> None:  # the orchestrator's "stop" line, or EOF
            loop.remove_reader(sys.stdin.fileno())
            stop.set()

        loop.add_reader(sys.stdin.fileno(), on_stdin)
        began = time.monotonic()
        interval = 1.0 / args.rate if args.rate > 0 else 0.0
        count = 0
        while interval and not stop.is_set() and time.monotonic() - began < args.max_seconds:
            due = began + count * interval
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            page = pages[count % len(pages)]
            count += 1
            if page.busy:  # its last signal is still unanswered: one at a time per instance
                failed("skipped, the last still in flight")
                continue
            task = asyncio.create_task(signal(page))
            inflight.add(task)
            task.add_done_callback(inflight.discard)
        if not interval:
            await stop.wait()
        elapsed = time.monotonic() - began
        if inflight:
            await asyncio.wait(inflight, timeout=10)
        await asyncio.sleep(1.0)  # the last steps' events
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    from_send: list[float] = []
    from_step: list[float] = []
    from_answer: list[float] = []
    lost = 0
    if args.open_pages:
        for page in pages:
            for revision in range(2, page.revision + 1):
                seen = page.seen.get(revision)
                if seen is None:
                    lost += 1
                    continue
                received, stepped = seen
                sent_at = sent.get((page.workflow_id, revision))
                if sent_at is not None:  # its answer was lost: no send time to count from
                    from_send.append((received - sent_at) * 1000)
                if stepped:
                    from_step.append((received - stepped) * 1000)
                answer_at = answered.get((page.workflow_id, revision))
                if answer_at is not None:  # after the commit; the page may hear first (< 0)
                    from_answer.append((received - answer_at) * 1000)
    report = {
        "signals": count,
        "steps": sum(page.revision - 1 for page in pages),
        "seconds": elapsed,
        "errors": errors,
        "lost": lost,
        "duplicates": sum(p.duplicates for p in pages),
        "stream_errors": sum(p.stream_errors for p in pages),
        "from_send_ms": sorted(from_send),
        "from_step_ms": sorted(from_step),
        "from_answer_ms": sorted(from_answer),
    }
    print(json.dumps(report), flush=True)


# -- the orchestrator ------------------------------------------------------------------------


class PagesRun:
    """The pages process of one measured run: started, ready, then stopped for its report."""

    def __init__(
        self, base: str, workflows: int, open_pages: bool, rate: float, max_seconds: float
    ) -> None:
        argv = [
            sys.executable, __file__, "--pages-process", "--base", base,
            "--workflows", str(workflows), "--open-pages", str(int(open_pages)),
            "--rate", str(rate), "--max-seconds", str(max_seconds),
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if line != "ready":
            self.process.kill()
            raise RuntimeError(f"the pages process did not get ready: {line!r}")

    def stop(self) -> dict[str, Any]:
        out, _ = self.process.communicate("stop\n", timeout=60)
        report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return report


# Each history row the page adds, stamped at the next animation frame: when it is painted.
OBSERVE = """
window.__shown = {};
const rows = document.querySelector(".timeline tbody");
new MutationObserver((changes) => {
  for (const change of changes) for (const row of change.addedNodes) {
    const revision = row.dataset && row.dataset.revision;
    if (revision) requestAnimationFrame(() => { window.__shown[revision] = Date.now(); });
  }
}).observe(rows, {childList: true});
"""


class BrowserPage:
    """One workflow page in Debian's headless Chromium, and its workflow stepped from here,
    one signal at a time: when did each step show on the page?"""

    def __init__(self, base: str) -> None:
        self.base = base
        browser, _ = chromium()
        options = webdriver.ChromeOptions()
        options.binary_location = browser
        for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
            options.add_argument(flag)
        options.add_argument("--window-size=1280,800")
        self.chrome = webdriver.Chrome(
            options=options, service=Service(executable_path="/usr/bin/chromedriver")
        )
        body = {"definition": "review-loop", "input": {"max_iterations": 10**9}}
        self.workflow_id = self._call("POST", "/api/v1/workflows", body)["workflow"]["workflowId"]
        self.chrome.get(f"{base}/workflows/{self.workflow_id}")
        WebDriverWait(self.chrome, 60).until(
            lambda d: d.execute_script(
                "return !!document.querySelector('.timeline tbody tr[data-revision]')"
            )
        )
        self.chrome.execute_script(OBSERVE)
        self.sent: dict[int, tuple[float, float]] = {}  # revision -> (sent, step time)
        self.revision = 1

    def _call(self, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.base + path,
            data=json.dumps(body).encode(),
            method=method,
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            got: dict[str, Any] = json.loads(answer.read())
            return got

    def step(self, rate: float, seconds: float) -> None:
        began = time.monotonic()
        count = 0
        while time.monotonic() - began < seconds:
            time.sleep(max(0.0, began + count / rate - time.monotonic()))
            count += 1
            body = (
                {"event": "score", "payload": {"score": 0.1}}
                if self.revision % 2 == 1
                else {"event": "revised", "payload": {"document": "again"}}
            )
            sent = time.time()
            got = self._call("POST", f"/api/v1/workflows/{self.workflow_id}/signal", body)
            self.revision = int(got["workflow"]["revision"])
            self.sent[self.revision] = (sent, _step_time(got))

    def finish(self) -> dict[str, Any]:
        time.sleep(1.0)
        shown: dict[str, int] = self.chrome.execute_script("return window.__shown")
        self.chrome.quit()
        from_send, from_step, lost = [], [], 0
        for revision, (sent, stepped) in self.sent.items():
            at = shown.get(str(revision))
            if at is None:
                lost += 1
                continue
            from_send.append(at - sent * 1000)
            from_step.append(at - stepped * 1000)
        return {"from_send_ms": sorted(from_send), "from_step_ms": sorted(from_step), "lost": lost}


def console_base(log: Path) -> str:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if "web console on " in line:
                return line.split("web console on ", 1)[1].strip().rstrip("/")
        time.sleep(0.1)
    raise RuntimeError("the console did not start")


def spread(values: list[float]) -> str:
    """p50, p99 and max of milliseconds."""
    p50, p99, top = (percentile(values, f) for f in (0.5, 0.99, 1.0))
    return f"p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {top:.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages-process", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--workflows", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--open-pages", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--max-seconds", type=float, default=120.0, help=argparse.SUPPRESS)
    parser.add_argument("--pages", type=int, default=200, help="open pages in the cost arm")
    parser.add_argument(
        "--follow-rate", type=float, default=50.0, help="steps/s of the followed workflows"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--seconds", type=float, default=8.0, help="each throughput window")
    parser.add_argument("--idle-seconds", type=float, default=10.0, help="each pages-alone window")
    parser.add_argument("--engine", default="go", choices=loadgen.ENGINES)
    parser.add_argument("--latency-pages", type=int, default=100)
    parser.add_argument("--latency-rate", type=float, default=100.0)
    parser.add_argument("--latency-seconds", type=float, default=20.0)
    parser.add_argument(
        "--browser-rate",
        type=float,
        default=20.0,
        help="of the latency run's steps/s, those of one workflow open in headless Chromium "
        "(0: no browser)",
    )
    parser.add_argument("--quick", action="store_true", help="one round, shorter windows")
    args = parser.parse_args()
    if args.pages_process:
        asyncio.run(pages_process(args))
        return
    if args.quick:
        args.rounds, args.seconds, args.latency_seconds, args.idle_seconds = 1, 4.0, 8.0, 5.0

    database = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    definitions = {p.name: p.read_text() for p in EXAMPLES.glob("*.yaml") if is_definition_file(p)}
    with (
        workspace(definitions, "console-bench-") as (folder, logs),
        server(database, folder, logs, "statewrightd", ["--http-listen", "127.0.0.1:0"]) as (
            target,
            pid,
        ),
    ):
        base = console_base(logs / "statewrightd.log")
        print(f"statewrightd on {target}, console on {base}", flush=True)
        print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores)", flush=True)
        if args.engine == "go":
            loadgen.goload_binary()
        throughput: dict[str, list[float]] = {"none": [], "pages": []}
        cpu: dict[str, list[float]] = {"none": [], "pages": []}
        per_start: dict[str, list[float]] = {"none": [], "pages": []}  # server CPU ms a start
        checks: list[dict[str, Any]] = []
        # The pages alone, with no other load: the server CPU they take, read from /proc,
        # which a busy machine inflates less than it does a throughput.
        idle: dict[str, list[float]] = {"none": [], "pages": []}
        for round_ in range(args.rounds):
            for arm in ("none", "pages") if round_ % 2 == 0 else ("pages", "none"):
                pages = PagesRun(base, args.pages, arm == "pages", args.follow_rate, 300.0)
                before, began = cpu_seconds(pid), time.monotonic()
                time.sleep(args.idle_seconds)
                idle[arm].append((cpu_seconds(pid) - before) / (time.monotonic() - began))
                report = pages.stop()
                print(
                    f"round {round_ + 1} {arm:<5} alone: server {idle[arm][-1]:.3f} cores, "
                    f"followed steps {report['steps']} ({report['errors'] or 'no errors'})",
                    flush=True,
                )
        for round_ in range(args.rounds):
            for arm in ("none", "pages") if round_ % 2 == 0 else ("pages", "none"):
                pages = PagesRun(base, args.pages, arm == "pages", args.follow_rate, 300.0)
                plan = loadgen.Plan(
                    target=target, scenario="start", engine=args.engine,
                    processes=1 if args.engine == "go" else 3,
                    concurrency=48 if args.engine == "go" else 16,
                    warmup=args.warmup, duration=args.seconds,
                )  # fmt: skip
                before = cpu_seconds(pid)
                summary = loadgen.run(plan)
                used = (cpu_seconds(pid) - before) / (args.warmup + args.seconds + 0.5)
                report = pages.stop()
                throughput[arm].append(summary.throughput)
                cpu[arm].append(used)
                per_start[arm].append(1000 * used / max(summary.throughput, 1e-9))
                if arm == "pages":
                    checks.append(report)
                print(
                    f"round {round_ + 1} {arm:<5}: {summary.throughput:,.0f} starts/s, "
                    f"p99 {summary.p99_ms:.1f} ms, server {used:.2f} cores, "
                    f"followed steps {report['steps']} of {report['signals']} sent "
                    f"({report['errors'] or 'no errors'}), "
                    f"lost {report['lost']}, twice {report['duplicates']}",
                    flush=True,
                )
        none = statistics.median(throughput["none"])
        with_pages = statistics.median(throughput["pages"])
        follow = [v for r in checks for v in r["from_send_ms"]]
        cores = f"{statistics.median(cpu['pages']):.2f} / {statistics.median(cpu['none']):.2f}"
        print(
            f"\ncost: {with_pages:,.0f} starts/s with {args.pages} pages against {none:,.0f} "
            f"without: ratio {with_pages / none:.3f} "
            f"(the pages cost {100 * (1 - with_pages / none):.1f}%); server cores {cores}; "
            f"the pages' steps under that load, signal sent -> page: {spread(follow)}",
            flush=True,
        )
        extra = statistics.median(idle["pages"]) - statistics.median(idle["none"])
        full = statistics.median(cpu["none"])
        print(
            f"the {args.pages} pages alone take {extra:.3f} server cores "
            f"({statistics.median(idle['pages']):.3f} with them, "
            f"{statistics.median(idle['none']):.3f} without): {100 * extra / full:.1f}% of the "
            f"{full:.2f} cores the server spends at full start-to-complete load",
            flush=True,
        )
        # On a machine shared with other work the throughput follows the cores the server
        # is given; its CPU per completed start shows the pages' cost apart from that.
        mine, bare = statistics.median(per_start["pages"]), statistics.median(per_start["none"])
        print(
            f"server CPU per start-to-complete: {mine:.2f} ms with the pages, {bare:.2f} ms "
            f"without ({100 * (mine / bare - 1):+.1f}%)",
            flush=True,
        )

        browser = BrowserPage(base) if args.browser_rate > 0 else None
        sse_rate = args.latency_rate - (args.browser_rate if browser else 0.0)
        pages = PagesRun(base, args.latency_pages, True, sse_rate, args.latency_seconds)
        if browser is not None:
            browser.step(args.browser_rate, args.latency_seconds)
        else:
            time.sleep(args.latency_seconds)
        report = pages.stop()
        send, step = report["from_send_ms"], report["from_step_ms"]
        rate = report["signals"] / report["seconds"]
        print(
            f"latency at {rate:.0f} steps/s over {args.latency_pages} pages ({len(send)} steps "
            f"seen, {report['lost']} lost, {report['duplicates']} twice, "
            f"errors {report['errors'] or 'none'}):\n"
            f"  signal sent -> page: {spread(send)}\n"
            f"  step time (history) -> page: {spread(step)}\n"
            f"  signal answered (after its commit) -> page: {spread(report['from_answer_ms'])}",
            flush=True,
        )
        if browser is not None:
            shown = browser.finish()
            print(
                f"  and in Chromium, one workflow page at {args.browser_rate:.0f} of those "
                f"steps/s ({len(shown['from_send_ms'])} steps shown, {shown['lost']} not):\n"
                f"    signal sent -> shown: {spread(shown['from_send_ms'])}\n"
                f"    step time (history) -> shown: {spread(shown['from_step_ms'])}",
                flush=True,
            )
        print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
