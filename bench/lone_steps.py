"""A step alone in its group commit on PostgreSQL: one statement outside a transaction
block against the transaction block a batch takes (BEGIN, the statement and NOTIFY in one
pipeline, then COMMIT: two round trips).

Below saturation most group commits hold one step (every step at 10-100 steps/s). Through
the repository's own ``apply_batch``, one save at a time, rounds interleaved; the "block"
side a repository whose every batch takes the transaction block. Saves with and without a
request id (a worker's CompleteTask carries one). Client CPU and wall time per save;
PostgreSQL's CPU per save from its processes.

Not a test: run it as ``bench/run_lone_steps.sh`` (a private PostgreSQL).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from statewrightd.errors import StoreError
from statewrightd.store.codec import EncodedOp
from statewrightd.store.postgres import PostgresRepository
from statewrightd.store.records import InstanceRecord, Operation
from statewrightd.store.schema import migrate

# The repository root, so that `bench` is importable when this file runs as a script.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.request_batches import batch, measured
from bench.stepped_instances import SteppedInstances


class InBlock(PostgresRepository):
    """Every group commit in a transaction block, as a lone step's was before."""

    def _transaction(self, encoded: list[EncodedOp]) -> list[InstanceRecord | StoreError]:
        return self._in_block(encoded)


SIDES = {"alone": PostgresRepository, "block": InBlock}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--instances", type=int, default=256)
    parser.add_argument("--saves", type=int, default=2_000, help="per round, side and case")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    url = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    migrate(url)
    repos = {side: kind(url, pool_size=2) for side, kind in SIDES.items()}
    instances = {side: SteppedInstances(args.instances, side) for side in SIDES}
    for side, repo in repos.items():
        repo.apply_batch(instances[side].creates())
    results: dict[tuple[str, bool], list[tuple[float, float, float]]] = {}
    for _ in range(args.rounds):
        for requested in (False, True):
            for side, repo in repos.items():
                saves = [batch(instances[side], 1, requested) for _ in range(args.saves)]

                def run(
                    repo: PostgresRepository = repo, saves: list[list[Operation]] = saves
                ) -> None:
                    for ops in saves:
                        [result] = repo.apply_batch(ops)
                        assert isinstance(result, InstanceRecord), result

                results.setdefault((side, requested), []).append(measured(run))
    for repo in repos.values():
        repo.close()
    print(f"{args.saves} lone saves a round, {args.rounds} rounds interleaved")
    print("request id  side    client CPU µs/save (median, by round)   wall µs   postgres CPU µs")
    for requested in (False, True):
        for side in SIDES:
            rounds = results[side, requested]
            cpu = [c / args.saves * 1e6 for c, _, _ in rounds]
            wall = statistics.median(w / args.saves * 1e6 for _, w, _ in rounds)
            pg = statistics.median(p / args.saves * 1e6 for _, _, p in rounds)
            print(
                f"{'yes' if requested else 'no':<10}  {side:<6}  {statistics.median(cpu):6.0f}"
                f" ({', '.join(f'{c:.0f}' for c in cpu)})   {wall:7.0f}   {pg:7.0f}"
            )


if __name__ == "__main__":
    main()
