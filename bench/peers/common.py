"""What every peer script shares: the HITL closed loop, the window, CPU by role, the report.

Standard library only: the peer scripts run in their own virtual environment
(.cache/peers-venv, made by bench/peers/install.sh), never in the project's.

The workload is the one Statewright's benchmark calls human in the loop: start a workflow,
let it reach its waiting point durably, resume it with an approval, and wait until it has
completed. ``lanes`` workflows are in flight at any moment (closed loop); a workflow counts
if it completes inside the measured window, and its latency runs from its start to its
completion. CPU is read from /proc over the window for each role: the processes the peer
runs (its own and their children), PostgreSQL's (when the peer uses it), and the machine.
A role's CPU counts every one of its processes, however short-lived: those it had at both
ends of the window, those it started during it (a pool that opens connections as threads
ask for them: a PostgreSQL backend each), and those that exited during it (counted by the
parent that reaped them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NoReturn

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# However a peer behaves, a run ends: the window plus this, then the report is written.
OVERRUN_SECONDS = 30.0


def proc_cpu(pid: int) -> float:
    """The CPU ``pid`` and its reaped children used, in seconds: utime + stime (every
    thread of the process) + cutime + cstime (the children it has waited for, such as the
    backends a postmaster reaps); 0 if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = text[text.rindex(")") + 2 :].split()
    return sum(int(f) for f in fields[11:15]) / CLOCK_TICKS


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2 :].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(children.get(current, []))
    return found


def postgres_pids(port: int) -> list[int]:
    """The postmaster listening on ``port`` and its children."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"postgres" in argv[0] and b"-p" in argv and str(port).encode() in argv:
                return descendants(int(entry.name))
    return []


def machine_busy() -> float:
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / CLOCK_TICKS


@dataclass
class Roles:
    """How to find the processes of each role, looked up again at each end of the window:
    connections opened during the window are backends that did not exist before it, and
    those closed during it exist no more at its end (their CPU is their postmaster's
    reaped children's by then)."""

    finders: dict[str, Callable[[], list[int]]] = field(default_factory=dict)

    def snapshot(self) -> dict[str, dict[int, float]]:
        return {role: {pid: proc_cpu(pid) for pid in find()} for role, find in self.finders.items()}


def tree(pid: int) -> Callable[[], list[int]]:
    return lambda: descendants(pid)


def postgres(url: str) -> Callable[[], list[int]]:
    port = postgres_port(url)
    return lambda: postgres_pids(port)


def cpu_over(
    before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]
) -> dict[str, float]:
    """Each role's CPU over the window: what all its processes had used at its end, less
    what they had at its start. A process started inside the window counts from zero; one
    that exited inside it is in its parent's reaped children's CPU at the end (the role's
    root outlives the window), so neither is lost nor counted twice."""
    out: dict[str, float] = {}
    for role, pids in after.items():
        out[role] = max(0.0, sum(pids.values()) - sum(before.get(role, {}).values()))
    return out


def postgres_port(url: str) -> int:
    match = re.search(r":(\d+)/", url)
    if match is None:
        raise SystemExit(f"the database URL must name its port: {url}")
    return int(match.group(1))


@dataclass
class Report:
    peer: str
    setup: str
    lanes: int
    window: float
    workflows: int
    throughput: float
    p50_ms: float
    p99_ms: float
    errors: dict[str, int]
    cpu_seconds: dict[str, float]  # by role, over the window
    cpu_ms_per_workflow: dict[str, float]  # by role, and "total"
    machine_cores: float


def percentile(ordered: list[float], fraction: float) -> float:
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


@dataclass
class Window:
    begin: float
    end: float
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def done(self, started: float) -> None:
        now = time.monotonic()
        if self.begin <= now <= self.end:
            with self.lock:
                self.latencies.append(now - started)

    def error(self, exc: BaseException) -> None:
        key = type(exc).__name__
        with self.lock:
            self.errors[key] = self.errors.get(key, 0) + 1


def arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--database", default="", help="postgresql:// URL of a fresh database")
    parser.add_argument("--lanes", type=int, default=16, help="workflows in flight")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--out", type=Path, help="write the JSON report here (else stdout)")
    return parser


Mark = tuple[dict[str, dict[int, float]], float]  # CPU by role and pid, machine busy
Measured = tuple["Window", Mark, Mark]


def finish(
    args: argparse.Namespace,
    peer: str,
    setup: str,
    window: Window,
    roles: Roles,
    *marks: Mark,
) -> Report:
    before, after = marks
    cpu = cpu_over(before[0], after[0])
    span = window.end - window.begin
    ordered = sorted(window.latencies)
    count = len(ordered)
    per = {role: 1000 * seconds / count for role, seconds in cpu.items()} if count else {}
    if per:
        per["total"] = sum(per.values())
    report = Report(
        peer=peer,
        setup=setup,
        lanes=args.lanes,
        window=span,
        workflows=count,
        throughput=count / span if span else 0.0,
        p50_ms=1000 * percentile(ordered, 0.50),
        p99_ms=1000 * percentile(ordered, 0.99),
        errors=dict(window.errors),
        cpu_seconds=cpu,
        cpu_ms_per_workflow=per,
        machine_cores=(after[1] - before[1]) / span if span else 0.0,
    )
    text = json.dumps(asdict(report))
    if args.out is not None:
        args.out.write_text(text + "\n")
    else:
        print(text, flush=True)
    return report


def measure_threads(
    args: argparse.Namespace, roles: Roles, one: Callable[[], None]
) -> tuple[
    Window, tuple[dict[str, dict[int, float]], float], tuple[dict[str, dict[int, float]], float]
]:
    """``args.lanes`` threads, each running ``one`` workflow after another until the end."""
    start = time.monotonic()
    window = Window(start + args.warmup, start + args.warmup + args.duration)
    marks: dict[str, Mark] = {}

    def lane() -> None:
        while time.monotonic() < window.end:
            began = time.monotonic()
            try:
                one()
            except Exception as exc:  # counted, never fatal: the report says how many
                window.error(exc)
                continue
            window.done(began)

    threads = [threading.Thread(target=lane, daemon=True) for _ in range(args.lanes)]
    for thread in threads:
        thread.start()
    for moment, name in ((window.begin, "before"), (window.end, "after")):
        time.sleep(max(0.0, moment - time.monotonic()))
        marks[name] = (roles.snapshot(), machine_busy())
    deadline = window.end + OVERRUN_SECONDS
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return window, marks["before"], marks["after"]


async def measure_async(
    args: argparse.Namespace, roles: Roles, one: Callable[[], Awaitable[None]]
) -> tuple[
    Window, tuple[dict[str, dict[int, float]], float], tuple[dict[str, dict[int, float]], float]
]:
    """``args.lanes`` asyncio tasks, each running ``one`` workflow after another."""
    start = time.monotonic()
    window = Window(start + args.warmup, start + args.warmup + args.duration)
    marks: dict[str, Mark] = {}

    async def lane() -> None:
        while time.monotonic() < window.end:
            began = time.monotonic()
            try:
                await one()
            except Exception as exc:
                window.error(exc)
                await asyncio.sleep(0.01)
                continue
            window.done(began)

    async def clock() -> None:
        for moment, name in ((window.begin, "before"), (window.end, "after")):
            await asyncio.sleep(max(0.0, moment - time.monotonic()))
            marks[name] = (roles.snapshot(), machine_busy())

    lanes = [asyncio.create_task(lane()) for _ in range(args.lanes)]
    await clock()
    _, late = await asyncio.wait(lanes, timeout=OVERRUN_SECONDS)
    for task in late:
        task.cancel()
    return window, marks["before"], marks["after"]


def stop(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """End a server the peer started: asked first, killed if it does not go in ``grace``."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def fail(message: str) -> NoReturn:
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(1)
