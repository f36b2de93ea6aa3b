"""System calls per step at a moderate rate: the thread hand-offs a step costs, counted.

Not a test. Starts one ``statewrightd serve --processes 1`` per variant (the server as it
is, and each ``--variant`` of bench/patched_server.py's patches) on the given PostgreSQL,
offers start-to-complete at ``--rate`` (100/s) from bench/goload, and counts the server's
system calls over the measured window with ``strace -c -f``; futex and epoll_wait are the
thread wake-ups, the rest mostly the sockets and wake-up pipes they carry. strace slows
every system call down, so the counts are what to read, not the time or the CPU.

    scripts/with-postgres .venv/bin/python bench/wakeups.py --variant inline-writer
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import loadgen
from bench.loadgen import Plan
from bench.runtime_bench import settle, start_statewrightd

WAKE_UPS = ("futex", "epoll_wait", "epoll_pwait", "poll", "ppoll", "select", "pselect6")


def count(database: str, logs: Path, patches: list[str], plan: Plan) -> tuple[dict[str, int], int]:
    served = start_statewrightd(database, logs, index=len(os.listdir(logs)), patches=patches)
    out = logs / f"strace-{'-'.join(patches) or 'as-is'}.txt"
    tracer: list[subprocess.Popen[bytes]] = []
    try:
        settle(served)

        def probe() -> dict[str, float]:
            if not tracer:
                argv = ["strace", "-c", "-f", "-qq", "-o", str(out), "-p", str(served.process.pid)]
                tracer.append(subprocess.Popen(argv))
            else:
                tracer[0].send_signal(signal.SIGINT)
                tracer[0].wait(30)
            return {}

        summary = loadgen.run(replace(plan, target=served.target), probe)
    finally:
        for process in tracer:
            if process.poll() is None:
                process.kill()
        served.stop()
    calls: dict[str, int] = {}
    for line in out.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            calls[fields[-1]] = int(fields[3])
    return calls, summary.ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", default=os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL", ""))
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--variant", action="append", default=[], help="patch set, comma-separated")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        raise SystemExit("needs strace (apt-get install strace)")
    loadgen.goload_binary()
    plan = Plan(
        target="",
        scenario="start",
        processes=1,
        concurrency=256,
        rate=args.rate,
        warmup=2.0,
        duration=args.duration,
        engine="go",
    )
    logs = Path(tempfile.mkdtemp(prefix="statewright-wakeups."))
    variants = [[], *[v.split(",") for v in args.variant]]
    results = []
    try:
        for patches in variants:
            calls, ops = count(args.database, logs, patches, plan)
            results.append((", ".join(patches) or "as it is", calls, ops))
    finally:
        shutil.rmtree(logs, ignore_errors=True)
    names = sorted(
        {n for _, calls, _ in results for n in calls}, key=lambda n: -results[0][1].get(n, 0)
    )
    print(f"system calls per start-to-complete step at {args.rate:g}/s (strace -c -f):")
    print("| syscall | " + " | ".join(label for label, _, _ in results) + " |")
    print("|---|" + "---:|" * len(results))
    for name in names[:14]:
        cells = [f"{calls.get(name, 0) / ops:.1f}" if ops else "-" for _, calls, ops in results]
        print(f"| {name} | " + " | ".join(cells) + " |")
    wake = [sum(c.get(n, 0) for n in WAKE_UPS) / ops if ops else 0.0 for _, c, ops in results]
    total = [sum(c.values()) / ops if ops else 0.0 for _, c, ops in results]
    print("| wake-ups (futex, epoll, poll) | " + " | ".join(f"{w:.1f}" for w in wake) + " |")
    print("| all | " + " | ".join(f"{t:.1f}" for t in total) + " |")


if __name__ == "__main__":
    main()
