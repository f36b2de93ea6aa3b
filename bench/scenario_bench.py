"""Benchmark of ``statewrightd test``: scenario steps per second, a typical scenario's time,
and the example scenarios' wall time, each against its goal, in one run.

Not a test. Run: ``.venv/bin/python bench/scenario_bench.py [--rounds N]``. The process
pins itself to one core (the runner is single-threaded; the goal is per core). Measured:

1. steps/s: 20 steps of every kind (start, resume, signals, a worker's complete, fail and
   timeout, advances that fire timers and wait out retries, checks) in three scenarios of
   three definitions, each scenario in a fresh sandbox, run back to back; CPU and wall
   time; goal >= 1,000 steps/s;
2. those 20 steps' wall time, p50 and p99 over the rounds (three sandboxes where a
   one-scenario file needs one: the goal, < 20 ms, is met with room or not at all);
3. the examples suite, ``statewrightd test examples/definitions``, as a separate process
   from its start (interpreter, imports, definitions compiled) to its exit; goal < 2 s.

Every goal is printed as a ratio measured in this run, with the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from statewrightd.scenarios.language import Catalog, Scenario, read_scenario_file
from statewrightd.scenarios.runner import run_scenario

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "definitions"

# A typical scenario of 20 steps: the kinds of step a team's CI runs, on two definitions.
TYPICAL = """
scenarios:
  - name: an order through every worker, with a retry and a timeout
    definition: order-fulfilment.yaml
    steps:
      - start: {input: {items: [{sku: a}, {sku: b}], price: 10.0}}
        expect: {state: charging, tasks: [{queue: payments, attempt: 0}]}
      - task: {queue: payments, fail: {type: GATEWAY_TIMEOUT, message: again}}
        expect: {tasks: [{queue: payments, attempt: 1, status: BACKOFF}]}
      - task: {queue: payments, timeout: true}
        expect: {state: charging}
      - task: {queue: payments, complete: {id: ch_1}}
        expect: {state: shipping, context: {charge_id: ch_1}}
      - task: {queue: shipping, complete: {tracking: TR-1}}
        expect: {state: shipped, status: COMPLETED}
      - expect: {tasks: [], timers: []}
  - name: a review loop and an escalation
    definition: review-loop.yaml
    steps:
      - start: {input: {max_iterations: 5}}
      - signal: {event: score, payload: {score: 0.1}}
      - signal: {event: revised, payload: {document: v2}}
      - signal: {event: score, payload: {score: 0.2}}
      - signal: {event: revised, payload: {document: v3}}
      - signal: {event: score, payload: {score: 0.3}}
      - signal: {event: revised, payload: {document: v4}}
        expect: {state: evaluating, context: {iterations: 3}}
      - signal: {event: score, payload: {score: 0.9}}
        expect: {state: accepted, status: COMPLETED}
  - name: an escalation that expires
    definition: ticket-escalation.yaml
    steps:
      - start: {input: {title: t}}
        expect: {timers: [{target: escalated, due: 15m}]}
      - advance: 10m
      - advance: 10m
        expect: {state: escalated}
      - resume: {event: take, input: {assignee: ann}}
      - signal: resolve
        expect: {state: resolved, status: COMPLETED}
      - expect: {revision: 4}
"""


def typical(directory: Path) -> list[Scenario]:
    path = directory / "typical.test.yaml"
    path.write_text(TYPICAL)
    read = read_scenario_file(path, Catalog())
    assert not read.problems, read.lines()
    assert sum(len(s.steps) for s in read.scenarios) == 20
    return list(read.scenarios)


def run_typical(scenarios: list[Scenario]) -> int:
    steps = 0
    for scenario in scenarios:
        result = run_scenario(scenario)
        assert result.passed, (result.failure, result.crash)
        steps += result.steps
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=300, help="typical scenarios to run")
    parser.add_argument("--suite-runs", type=int, default=5, help="runs of the examples suite")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")

    workdir = ROOT / "build" / "bench"
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("order-fulfilment.yaml", "review-loop.yaml", "ticket-escalation.yaml"):
        (workdir / name).write_text((EXAMPLES / name).read_text())
    scenarios = typical(workdir)
    for _ in range(20):  # warm-up: imports, compiled expressions, allocator
        run_typical(scenarios)

    durations: list[float] = []
    steps = 0
    cpu_began, wall_began = time.process_time(), time.perf_counter()
    for _ in range(args.rounds):
        began = time.perf_counter()
        steps += run_typical(scenarios)
        durations.append(time.perf_counter() - began)
    cpu = time.process_time() - cpu_began
    wall = time.perf_counter() - wall_began
    durations.sort()
    p50 = statistics.median(durations) * 1000
    p99 = durations[min(len(durations) - 1, round(0.99 * (len(durations) - 1)))] * 1000
    per_cpu = steps / cpu
    per_wall = steps / wall
    print(f"typical 20-step scenario, {args.rounds} rounds on one core:")
    print(
        f"  {per_wall:,.0f} steps/s wall, {per_cpu:,.0f} steps/s of CPU "
        f"({cpu / steps * 1e6:,.0f} us of CPU per step)"
    )
    print(f"  one scenario of 20 steps: p50 {p50:.1f} ms, p99 {p99:.1f} ms")

    suite: list[float] = []
    suite_cpu: list[float] = []
    command = [str(Path(sys.executable).with_name("statewrightd")), "test", str(EXAMPLES), "-q"]
    for _ in range(args.suite_runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        suite.append(time.perf_counter() - began)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        suite_cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    best, median = min(suite), statistics.median(suite)
    cpu_median = statistics.median(suite_cpu)
    print(
        f"examples suite as a process: median {median:.2f} s, best {best:.2f} s, "
        f"{cpu_median:.2f} s of CPU ({summary})"
    )

    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("goals (ratio >= 1 meets the goal):")
    print(f"  steps/s on one core       {per_wall:>8,.0f} / 1,000  = {per_wall / 1000:.2f}")
    print(f"  20-step scenario p50 ms   {p50:>8.1f} / 20     = {20 / p50:.2f}")
    print(f"  examples suite median s   {median:>8.2f} / 2      = {2 / median:.2f}")
    print("the same goals counted in CPU time (what the process used, however busy the machine):")
    cpu_scenario = cpu / steps * 20 * 1000
    print(f"  steps per CPU second      {per_cpu:>8,.0f} / 1,000  = {per_cpu / 1000:.2f}")
    print(f"  20 steps' CPU ms          {cpu_scenario:>8.1f} / 20     = {20 / cpu_scenario:.2f}")
    print(f"  examples suite CPU s      {cpu_median:>8.2f} / 2      = {2 / cpu_median:.2f}")


if __name__ == "__main__":
    main()
