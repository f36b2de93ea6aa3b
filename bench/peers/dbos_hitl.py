"""DBOS Transact on the HITL workload: a workflow that waits for a message, then completes.

Not a test. Runs in .cache/peers-venv (bench/peers/install.sh) against a fresh PostgreSQL
database (its system database). DBOS is a library: the workflows run inside this process,
which is also the load, so its CPU is DBOS's and the load's together. Its best set-up for
this workload, as its documentation describes it: LISTEN/NOTIFY for messages and events
(the default), a connection pool as large as the lanes in flight.

Per workflow: ``DBOS.start_workflow`` (durable once it returns), ``DBOS.get_event`` until
the workflow says it is waiting (its ``set_event`` is durable), ``DBOS.send`` the approval
(durable), then the handle's ``get_result`` once it has completed.

    .cache/peers-venv/bin/python bench/peers/dbos_hitl.py --database postgresql://... --lanes 16
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dbos import DBOS, DBOSConfig

# The repository root, so that bench.peers.common imports in the peers' own environment.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.peers.common import Roles, arguments, finish, measure_threads, postgres, tree

TOPIC = "approval"


@DBOS.workflow()  # type: ignore[untyped-decorator]
def mail_approval(topic: str) -> str:
    DBOS.set_event("state", "waiting")
    decision = DBOS.recv(TOPIC, timeout_seconds=60)
    return "COMPLETED" if decision == "approve" else f"UNEXPECTED {decision!r}"


def one() -> None:
    handle = DBOS.start_workflow(mail_approval, "benchmark")
    if DBOS.get_event(handle.workflow_id, "state", timeout_seconds=30) != "waiting":
        raise RuntimeError("the workflow did not reach its waiting point")
    DBOS.send(handle.workflow_id, "approve", TOPIC)
    if handle.get_result() != "COMPLETED":
        raise RuntimeError("the workflow did not complete")


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    config: DBOSConfig = {
        "name": "hitl-bench",
        "system_database_url": args.database,
        "sys_db_pool_size": max(20, 2 * args.lanes),
        "log_level": "WARNING",
    }
    DBOS(config=config)
    DBOS.launch()
    roles = Roles({"dbos+load": tree(os.getpid()), "postgres": postgres(args.database)})
    window, before, after = measure_threads(args, roles, one)
    finish(
        args,
        "DBOS Transact",
        "library in the load process, PostgreSQL",
        window,
        roles,
        before,
        after,
    )
    DBOS.destroy(destroy_registry=True)


if __name__ == "__main__":
    main()
