"""Temporal on the HITL workload: a workflow that waits for a signal, then completes.

Not a test. Runs in .cache/peers-venv (bench/peers/install.sh). The server is Temporal's
development server, built from Temporal's own Go module by bench/peers/install.sh
(bench/peers/temporal: the lite server, on in-memory SQLite, as `temporal server
start-dev` runs by default; it keeps nothing across a restart, unlike every other system
here). The workflow and the load run in this process on Temporal's Python SDK, as the
other Python peers run theirs: the SDK's worker, without its sandbox (which re-imports the
workflow's module on every run: a cost of safety, not of Temporal).

Per workflow: ``start_workflow`` (durable once it returns), a query until the workflow
says it is waiting (its first workflow task has run), the approval as a signal (durable),
then the handle's ``result`` once it has completed.

    .cache/peers-venv/bin/python bench/peers/temporal_hitl.py --lanes 16
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from temporalio import workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

# The repository root, so that bench.peers.common imports in the peers' own environment.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.peers.common import Roles, arguments, fail, finish, measure_async, stop, tree

SERVER = Path(__file__).resolve().parents[2] / ".cache" / "temporal" / "temporal-dev"
TASK_QUEUE = "hitl-bench"
STARTUP_TIMEOUT = 60.0
WAIT_POLLS = 5_000


@workflow.defn
class MailApproval:
    def __init__(self) -> None:
        self._decision: str | None = None

    @workflow.run  # type: ignore[untyped-decorator]
    async def run(self) -> str:
        await workflow.wait_condition(lambda: self._decision is not None)
        return "COMPLETED" if self._decision == "approve" else f"UNEXPECTED {self._decision!r}"

    @workflow.signal  # type: ignore[untyped-decorator]
    def decide(self, decision: str) -> None:
        self._decision = decision

    @workflow.query  # type: ignore[untyped-decorator]
    def state(self) -> str:
        return "waiting" if self._decision is None else "decided"


@contextmanager
def dev_server(log: Path) -> Iterator[tuple[int, str, str]]:
    """The development server: its pid, where it listens, its namespace."""
    if not SERVER.exists():
        fail(f"Temporal's development server is not built: run bench/peers/install.sh ({SERVER})")
    with log.open("wb") as out:
        process = subprocess.Popen([str(SERVER)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            found = re.search(r"serving on (\S+) namespace (\S+)", log.read_text(errors="replace"))
            if found:
                yield process.pid, found.group(1), found.group(2)
                return
            if process.poll() is not None or time.monotonic() > deadline:
                fail(f"the Temporal server did not start: {log.read_text(errors='replace')[-500:]}")
            time.sleep(0.1)
    finally:
        stop(process)


async def run(args: argparse.Namespace, server_pid: int, target: str, namespace: str) -> None:
    client = await Client.connect(target, namespace=namespace)

    async def one() -> None:
        handle = await client.start_workflow(
            MailApproval.run,
            id=f"hitl-{uuid.uuid4().hex}",
            task_queue=TASK_QUEUE,
            execution_timeout=timedelta(minutes=5),
        )
        for _ in range(WAIT_POLLS):
            if await handle.query(MailApproval.state) == "waiting":
                break
            await asyncio.sleep(0.001)
        else:
            raise RuntimeError("the workflow did not reach its waiting point")
        await handle.signal(MailApproval.decide, "approve")
        if await handle.result() != "COMPLETED":
            raise RuntimeError("the workflow did not complete")

    worker = Worker(
        client,
        task_queue=TASK_QUEUE,
        workflows=[MailApproval],
        workflow_runner=UnsandboxedWorkflowRunner(),
    )
    me = os.getpid()
    # This process alone (the server is its child, a role of its own).
    roles = Roles({"temporal server": tree(server_pid), "worker+load": lambda: [me]})
    async with worker:
        window, before, after = await measure_async(args, roles, one)
    finish(
        args,
        "Temporal",
        "dev server (Go, in-memory SQLite), Python SDK worker and load",
        window,
        roles,
        before,
        after,
    )


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"temporal-dev-{os.getpid()}.log"
    try:
        with dev_server(log) as (pid, target, namespace):
            asyncio.run(run(args, pid, target, namespace))
    finally:
        log.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
