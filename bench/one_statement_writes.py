"""A write of one statement on PostgreSQL: on its own (no transaction block) against in a
transaction of its own (BEGIN, the statement, COMMIT: three round trips).

The writes that are no step of an instance (a heartbeat, a task's retry or release, the
background claims of timers, tasks and schedules) are each one statement. Through the
repository's own calls, rounds interleaved, the "transaction" side a repository whose
``_writing_one`` is its ``_writing``: a heartbeat (of a lease that is not current: the
statement runs and writes nothing, as a round trip costs the same), the timers' claim and
the task sweep's claim with nothing due. Client CPU and wall time per call; PostgreSQL's
CPU per call from its processes.

Not a test: run it as ``bench/run_one_statement_writes.sh`` (a private PostgreSQL).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from statewrightd.store.pg_pool import Conn
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.schema import migrate

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.request_batches import measured


class InTransactions(PostgresRepository):
    """Every write in a transaction block, as before writes of one statement ran alone."""

    def _writing_one(self) -> AbstractContextManager[Conn]:
        return self._writing()


def calls(repo: PostgresRepository) -> dict[str, Callable[[], object]]:
    now = datetime.now(UTC)
    later = now + timedelta(seconds=30)
    return {
        "heartbeat": lambda: repo.heartbeat_task("absent", "1", "t", now=now, details=None),
        "timers' claim": lambda: repo.claim_timers(now, later, 100),
        "task sweep's claim": lambda: repo.claim_expired_tasks(now, later, 100),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2_000, help="per round, side and call")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    url = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    migrate(url)
    repos = {
        "alone": PostgresRepository(url, pool_size=1),
        "transaction": InTransactions(url, pool_size=1),
    }
    kinds = {side: calls(repo) for side, repo in repos.items()}
    results: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for _ in range(args.rounds):
        for name in kinds["alone"]:
            for side, named in kinds.items():
                call = named[name]

                def run(call: Callable[[], object] = call) -> None:
                    for _ in range(args.calls):
                        call()

                results.setdefault((name, side), []).append(measured(run))
    for repo in repos.values():
        repo.close()
    print(f"{args.calls} calls a round, {args.rounds} rounds interleaved; medians per call")
    print("call                 side          client CPU µs   wall µs   postgres CPU µs")
    for name in kinds["alone"]:
        for side in kinds:
            rounds = results[name, side]
            cpu, wall, pg = (
                statistics.median(r[i] / args.calls * 1e6 for r in rounds) for i in range(3)
            )
            print(f"{name:<20} {side:<12} {cpu:14.0f} {wall:9.0f} {pg:17.0f}")


if __name__ == "__main__":
    main()
