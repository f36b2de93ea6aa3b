"""What psycopg's async layer costs a group-commit transaction, against its blocking one.

The writer on the EventLoop thread (no writer thread, the EventLoop driving PostgreSQL
I/O itself on an asyncio loop) saves two thread crossings a step, which a prototype that
committed blocking put at 0.10 to 0.12 ms of server CPU a step. Doing it without blocking
needs psycopg's async connection, whose every statement passes through asyncio: this
measures that price, on the server's asyncio loop (uvloop where installed) and on the
standard one, for the very transaction the writer runs for one save (BEGIN, the instance
lock, the set-based save, the step notification, COMMIT, in one pipeline): the same
statements and parameters each way, rounds interleaved. Client CPU and wall time per
transaction; PostgreSQL's own work is the same on every side.

Not a test: run it as ``bench/run_async_io_costs.sh`` (a private PostgreSQL, 127.0.0.1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from statewrightd.store import open_repository
from statewrightd.store import sql_postgres as q
from statewrightd.store.codec import encode_op
from statewrightd.store.notifications import step_hints_payloads
from statewrightd.store.postgres import _SAVE_ROW, _fields, _rows_json, _work
from statewrightd.tuning import loop_factory

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.stepped_instances import SteppedInstances

Statement = tuple[str, Any]


def next_save(instances: SteppedInstances) -> list[Statement]:
    """The statements of a one-save group commit of the next instance."""
    save = instances.step()
    encoded = encode_op(save)
    kind = _work([encoded])
    rows = _rows_json([encoded.params], _fields(_SAVE_ROW, kind))
    statements: list[Statement] = [
        (q.LOCK_INSTANCES, (json.dumps([encoded.params["workflow_id"]]),)),
        (q.SAVE_MANYS[kind], (rows,)),
    ]
    statements += [
        (q.NOTIFY_STEPS, (q.STEPS_CHANNEL, payload)) for payload in step_hints_payloads([save.new])
    ]
    return statements


def blocking(conn: psycopg.Connection[Any], statements: list[Statement]) -> None:
    with conn.pipeline():
        cursors = [conn.execute(sql, params) for sql, params in statements]
    saved = cursors[1].fetchall()
    conn.commit()
    assert saved, "the save's CAS failed"


async def non_blocking(conn: psycopg.AsyncConnection[Any], statements: list[Statement]) -> None:
    async with conn.pipeline():
        cursors = [await conn.execute(sql, params) for sql, params in statements]
    saved = await cursors[1].fetchall()
    await conn.commit()
    assert saved, "the save's CAS failed"


def _measured(run: Callable[[], None]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def blocking_round(url: str, instances: SteppedInstances, count: int) -> tuple[float, float]:
    with psycopg.connect(url) as conn:
        blocking(conn, next_save(instances))  # connected and warm before the clock starts

        def run() -> None:
            for _ in range(count):
                blocking(conn, next_save(instances))

        return _measured(run)


def async_round(
    url: str,
    instances: SteppedInstances,
    count: int,
    new_loop: Callable[[], asyncio.AbstractEventLoop],
) -> tuple[float, float]:
    async def connect_and_run() -> tuple[float, float]:
        async with await psycopg.AsyncConnection.connect(url) as conn:
            await non_blocking(conn, next_save(instances))
            cpu, wall = time.process_time(), time.perf_counter()
            for _ in range(count):
                await non_blocking(conn, next_save(instances))
            return time.process_time() - cpu, time.perf_counter() - wall

    with asyncio.Runner(loop_factory=new_loop) as runner:
        return runner.run(connect_and_run())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=500)
    parser.add_argument("--saves", type=int, default=2_000, help="per round and side")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    url = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    # The server's asyncio loop (uvloop where installed), and the standard one.
    loops = {"async": loop_factory(), "async std": asyncio.new_event_loop}
    sides = {"blocking": SteppedInstances(args.instances, "b")}
    sides.update((name, SteppedInstances(args.instances, name[-3:])) for name in loops)
    repo = open_repository(url, migrate=True, pool_size=1)
    for instances in sides.values():
        repo.apply_batch(instances.creates())
    repo.close()
    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        rounds["blocking"].append(blocking_round(url, sides["blocking"], args.saves))
        for name, new_loop in loops.items():
            rounds[name].append(async_round(url, sides[name], args.saves, new_loop))
    print(f"one-save group commits, {args.saves} a round, {args.rounds} rounds interleaved")
    print("side       client CPU µs per commit (by round)       wall µs per commit (by round)")
    medians: dict[str, float] = {}
    for name, measured in rounds.items():
        cpu = [c / args.saves * 1e6 for c, _ in measured]
        wall = [w / args.saves * 1e6 for _, w in measured]
        medians[name] = statistics.median(cpu)
        print(
            f"{name:<10} {' '.join(f'{c:6.0f}' for c in cpu):<40}"
            f" {' '.join(f'{w:6.0f}' for w in wall)}"
        )
    for name in loops:
        extra = medians[name] - medians["blocking"]
        print(f"{name} - blocking, median client CPU: {extra:+.0f} µs per commit")


if __name__ == "__main__":
    main()
