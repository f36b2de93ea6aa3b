"""The schedule benchmark: N schedules firing every minute on PostgreSQL.

Not a test. Run it through bench/run_schedules.sh, which brings its own PostgreSQL. On
127.0.0.1 only, it starts one statewrightd (``--replicas 2``: two sharing the database),
creates ``--schedules`` schedules of a definition that completes at once, all firing at
second 0 of every minute (``* * * * *``, the worst case: every fire due at once; with
``--jitter S`` each fire is spread over S seconds, as a schedule's ``spec.jitter`` does),
lets them fire for ``--minutes`` minutes, and reports:

- fire lag: each started instance's create time minus its due time (its nominal time, which
  the instance id carries, plus its jitter), p50/p99/max, over the fires due in the run;
- fires: instances started, and whether any nominal time started twice (never);
- server CPU seconds per fire (the servers' user + system time over the run, minus an idle
  ten seconds measured before the schedules exist).

``--idle-effect``: instead, what schedules that exist but are not due cost everything
else. Two servers on two fresh databases of the same PostgreSQL, one holding
``--schedules`` schedules that fire once a year (the next fire months away), one holding
none; a closed loop of start-to-complete calls (``instant``, 32 at a time) against each in
turn, A B A B ..., so that the machine's other load falls on both alike. The ratio is the
mean with the schedules over the mean without.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import psycopg
from statewright.v1 import schedule_service_pb2 as spb
from statewright.v1 import schedule_service_pb2_grpc as spb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.timer_bench import closed_loop, cpu_seconds, server, workspace
from statewrightd.engine.schedule_spec import jitter_of

DEFINITIONS = {
    "instant.yaml": """
name: instant
version: 1
initial: done
states:
  done: {}
""",
}


def create(target: str, count: int, cron: str = "* * * * *", jitter: float = 0.0) -> None:
    with grpc.insecure_channel(target) as channel:
        stub = spb_grpc.ScheduleServiceStub(channel)
        for i in range(count):
            schedule = spb.Schedule()
            schedule.spec.cron_expressions.append(cron)
            if jitter:
                schedule.spec.jitter.FromMilliseconds(int(jitter * 1000))
            schedule.action.definition = "instant"
            request = spb.CreateScheduleRequest(schedule_id=f"b{i:05d}", schedule=schedule)
            stub.CreateSchedule(request, timeout=10)


def lags(
    database: str, first: float, last: float, jitter: float = 0.0
) -> tuple[list[float], int, int]:
    """Lags of the fires whose nominal time is in [first, last) (epoch seconds): creating
    thousands of schedules can outlast a minute, and the fires due meanwhile are not the
    run's. A lag counts from the fire's due time, its nominal time plus its jitter."""
    with psycopg.connect(database) as conn:
        rows = conn.execute(
            "SELECT workflow_id, create_time FROM workflow_instances WHERE workflow_id LIKE 'b%'"
        ).fetchall()
    found, nominal_times = [], set()
    for workflow_id, created in rows:
        stamp = workflow_id.split("-", 1)[1]
        nominal = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        if not first <= nominal.timestamp() < last:
            continue
        schedule_id = workflow_id.split("-", 1)[0]
        nominal_times.add((schedule_id, nominal))
        due = nominal + timedelta(seconds=jitter_of(schedule_id, nominal, jitter))
        found.append((created - due).total_seconds())
    return found, len(found), len(found) - len(nominal_times)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))] if ordered else 0.0


def fresh_database(admin: str, name: str) -> str:
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}".encode())
        conn.execute(f"CREATE DATABASE {name}".encode())
    return admin.rsplit("/", 1)[0] + f"/{name}"


def idle_effect(admin: str, schedules: int, rounds: int, seconds: float) -> dict[str, object]:
    rates: dict[str, list[float]] = {"none": [], "idle": []}
    with workspace(DEFINITIONS, "schedule-idle-") as (definitions, logs), ExitStack() as stack:
        targets = {
            name: stack.enter_context(
                server(fresh_database(admin, f"sw_sched_{name}"), definitions, logs, name)
            )[0]
            for name in rates
        }
        # New Year's midnight: every one of them exists, none is due for months.
        create(targets["idle"], schedules, cron="0 0 1 1 *")
        for round_ in range(rounds):
            for name, target in targets.items():
                rate = asyncio.run(closed_loop(target, seconds))
                rates[name].append(rate)
                print(f"round {round_ + 1} {name:<4} {rate:8.1f} starts/s", flush=True)
    ratio = statistics.fmean(rates["idle"]) / statistics.fmean(rates["none"])
    return {
        "idle_schedules": schedules,
        "rounds": rounds,
        "seconds": seconds,
        "throughput": rates,
        "ratio_idle_over_none": round(ratio, 3),
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=500)
    parser.add_argument("--minutes", type=int, default=2)
    parser.add_argument("--replicas", type=int, default=1, choices=(1, 2))
    parser.add_argument(
        "--jitter", type=float, default=0.0, help="seconds each fire may be spread over"
    )
    parser.add_argument(
        "--idle-effect",
        action="store_true",
        help="measure what --schedules idle schedules cost start-to-complete throughput",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--idle-effect: A/B rounds")
    parser.add_argument("--seconds", type=float, default=10.0, help="--idle-effect: per round")
    args = parser.parse_args()
    database = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    if args.idle_effect:
        print(
            json.dumps(idle_effect(database, args.schedules, args.rounds, args.seconds), indent=2)
        )
        return
    with workspace(DEFINITIONS, "schedule-bench-") as (definitions, logs), ExitStack() as stack:
        servers = [
            stack.enter_context(server(database, definitions, logs, f"replica{n}"))
            for n in range(args.replicas)
        ]
        pids = [pid for _, pid in servers]
        time.sleep(5)  # past start-up's own work, which is not idling
        idle_from = sum(cpu_seconds(p) for p in pids)
        time.sleep(10)
        idle_rate = (sum(cpu_seconds(p) for p in pids) - idle_from) / 10
        create(servers[0][0], args.schedules, jitter=args.jitter)
        # From the next minute on, for --minutes minutes (plus the last fires' lag).
        now = time.time()
        start = now - now % 60 + 60
        time.sleep(start - time.time())
        cpu_from = sum(cpu_seconds(p) for p in pids)
        time.sleep(args.minutes * 60 - 5)
        busy = sum(cpu_seconds(p) for p in pids) - cpu_from - idle_rate * (args.minutes * 60 - 5)
        found, fires, twice = lags(database, start, start + args.minutes * 60, args.jitter)
    result = {
        "schedules": args.schedules,
        "replicas": args.replicas,
        "minutes": args.minutes,
        "fires": fires,
        "fires_due": args.schedules * args.minutes,
        "jitter_s": args.jitter,
        "started_twice": twice,
        "lag_p50_s": round(percentile(found, 0.5), 3),
        "lag_p99_s": round(percentile(found, 0.99), 3),
        "lag_max_s": round(max(found, default=0.0), 3),
        "lag_mean_s": round(statistics.fmean(found), 3) if found else 0.0,
        "cpu_ms_per_fire": round(1000 * busy / fires, 2) if fires else None,
        "idle_cores": round(idle_rate, 4),  # subtracted from the busy CPU above
        "time": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
