"""A worker process that completes every task it leases three times at once, to prove the
server applies each result exactly once.

For each task: a completion through each replica with one request id (a retry of the same
call), and a third with no request id and another result (a duplicate that must lose, or
win alone). Every answer is written as a JSON line to ``--out``: what was acknowledged,
and what was refused and why. The process ends once it has found no task for
``--idle`` seconds after it did some work, or at ``--deadline``.

    python -m tests.support.duplicating_worker --targets A,B --queue Q --name W --out F
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf import json_format
from statewright.v1 import task_pb2

from tests.support.api import error_info
from tests.support.tasks import Tasks


def _complete(
    tasks: Tasks, task: task_pb2.Task, by: str, request_id: str, via: str
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task": task.name,
        "attempt": task.attempt,
        "by": by,
        "request_id": request_id,
        "via": via,
    }
    try:
        answer = tasks.complete(task, {"by": by}, request_id=request_id)
    except grpc.RpcError as err:
        reason = ""
        with contextlib.suppress(AssertionError):  # a status without our ErrorInfo
            reason = error_info(err).reason
        record.update(acked=False, code=err.code().name, reason=reason)
        return record
    context = json_format.MessageToDict(answer.workflow.context)
    record.update(
        acked=True, revision=answer.workflow.revision, applied_by=context.get("done_by", "")
    )
    return record


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--idle", type=float, default=4.0)
    parser.add_argument("--deadline", type=float, default=240.0)
    args = parser.parse_args()
    channels = [grpc.insecure_channel(t) for t in args.targets.split(",")]
    clients = [Tasks(c, timeout=30.0) for c in channels]
    ended = time.monotonic() + args.deadline
    last_work: float | None = None
    rng = random.Random(args.name)
    polls = 0
    with open(args.out, "w", encoding="utf-8") as out, ThreadPoolExecutor(12) as pool:
        while time.monotonic() < ended:
            poller = clients[polls % len(clients)]
            polls += 1
            try:
                leased = poller.poll(args.queue, wait=1.0, max_tasks=8, identity=args.name)
            except grpc.RpcError as err:
                print(f"{args.name}: poll failed: {err.code().name}", flush=True)
                time.sleep(0.2)
                continue
            if not leased:
                if last_work is not None and time.monotonic() - last_work > args.idle:
                    break
                continue
            last_work = time.monotonic()
            calls = []
            for task in leased:
                rid = f"{task.name}#{task.attempt}#complete"
                calls.append((clients[0], task, args.name, rid, "a"))
                calls.append((clients[-1], task, args.name, rid, "b"))
                calls.append((rng.choice(clients), task, f"{args.name}-dup", "", "dup"))
            rng.shuffle(calls)
            for record in pool.map(lambda c: _complete(*c), calls):
                out.write(json.dumps(record) + "\n")
            out.flush()
            last_work = time.monotonic()
    for channel in channels:
        channel.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
