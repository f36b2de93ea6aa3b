"""A group commit on PostgreSQL: one statement per row against the set-based statements,
for saves with and without request ids.

Steps from clients that send request ids (the workers' CompleteTask, retried calls) used
to take one compare-and-swap statement per row; the set-based statements take a whole
batch in one (after a statement that locks its rows in one order), checking and recording
each row's request id. Batches of 1, 2, 4, 8 and 16 saves, each with a fresh request id or
none, through the repository's own ``apply_batch``, rounds interleaved, each side forced
by the repository's ``set_based_from``. Client CPU and wall time per save; PostgreSQL's
CPU per save from its processes.

Not a test: run it as ``bench/run_request_batches.sh`` (a private PostgreSQL, 127.0.0.1).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.records import (
    InstanceRecord,
    Operation,
    RequestRecord,
)
from statewrightd.store.repository import Repository
from statewrightd.store.schema import migrate

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.stepped_instances import SteppedInstances
from bench.timer_bench import postgres_cpu

NOW = datetime.now(UTC)
SIZES = (1, 2, 4, 8, 16)
# The fewest steps of a batch that takes the set-based statements, by side.
SIDES = {"per row": 1 << 30, "set-based": 1}


def batch(instances: SteppedInstances, size: int, requested: bool) -> list[Operation]:
    """Saves of ``size`` distinct instances, each with a fresh request id or none."""
    ops: list[Operation] = []
    for _ in range(size):
        save = instances.step()
        if requested:
            wid = save.new.workflow_id
            request = RequestRecord(uuid.uuid4().hex, wid, "CompleteTask", "fp", b"{}", NOW)
            save = replace(save, request=request)
        ops.append(save)
    return ops


def measured(run: Callable[[], None]) -> tuple[float, float, float]:
    cpu, wall, pg = time.process_time(), time.perf_counter(), postgres_cpu()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall, postgres_cpu() - pg


def one_round(
    repos: dict[str, Repository],
    instances: SteppedInstances,
    kind: str,
    case: tuple[bool, int],
    saves: int,
) -> tuple[float, float, float]:
    requested, size = case
    batches = [batch(instances, size, requested) for _ in range(saves // size)]

    def run() -> None:
        for ops in batches:
            results = repos[kind].apply_batch(ops)
            assert all(isinstance(r, InstanceRecord) for r in results), results

    return measured(run)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=256)
    parser.add_argument("--saves", type=int, default=1_600, help="per round, side and size")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    url = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    migrate(url)
    repos: dict[str, Repository] = {
        kind: PostgresRepository(url, pool_size=2, set_based_from=first)
        for kind, first in SIDES.items()
    }
    kinds = tuple(SIDES)
    sides = {kind: SteppedInstances(args.instances, kind.replace(" ", "-")) for kind in kinds}
    for kind, instances in sides.items():
        repos[kind].apply_batch(instances.creates())
    cases = [(requested, size) for requested in (True, False) for size in SIZES]
    results: dict[tuple[str, tuple[bool, int]], list[tuple[float, float, float]]] = {}
    for _ in range(args.rounds):
        for case in cases:
            for kind in kinds:
                got = one_round(repos, sides[kind], kind, case, args.saves)
                results.setdefault((kind, case), []).append(got)
    for repo in repos.values():
        repo.close()
    print(f"{args.saves} saves a round, {args.rounds} rounds interleaved")
    print(
        "request ids  batch  statements   client CPU µs/save (median, by round)"
        "   wall µs/save   postgres CPU µs/save"
    )
    for case in cases:
        requested, size = case
        for kind in kinds:
            rounds = results[kind, case]
            cpu = [c / args.saves * 1e6 for c, _, _ in rounds]
            wall = [w / args.saves * 1e6 for _, w, _ in rounds]
            pg = [p / args.saves * 1e6 for _, _, p in rounds]
            ids = "yes" if requested else "no"
            print(
                f"{ids:<11}  {size:>5}  {kind:<10}  {statistics.median(cpu):6.0f}"
                f" ({', '.join(f'{c:.0f}' for c in cpu)})"
                f"   {statistics.median(wall):6.0f}   {statistics.median(pg):6.0f}"
            )


if __name__ == "__main__":
    main()
