"""LangGraph with PostgresSaver on the HITL workload: a graph that interrupts, then completes.

Not a test. Runs in .cache/peers-venv (bench/peers/install.sh) against a fresh PostgreSQL
database. LangGraph is a library: the graph runs inside this process, which is also the
load, so its CPU is LangGraph's and the load's together. Its best set-up for many graphs
in flight: the asyncio API (``AsyncPostgresSaver`` on a psycopg connection pool, the
set-up its documentation gives), default durability.

Per workflow, one thread: ``ainvoke`` with the input runs the graph to its ``interrupt()``
(the checkpoint saved when it returns: the waiting point), ``ainvoke(Command(resume=...))``
resumes it to its end (COMPLETED, checkpointed).

    .cache/peers-venv/bin/python bench/peers/langgraph_hitl.py --database postgresql://...
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

# The repository root, so that bench.peers.common imports in the peers' own environment.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.peers.common import Roles, arguments, finish, measure_async, postgres, tree


class State(TypedDict, total=False):
    topic: str
    decision: str
    status: str


def ask(state: State) -> State:
    decision = interrupt({"topic": state["topic"]})
    return {"decision": str(decision)}


def complete(state: State) -> State:
    return {"status": "COMPLETED" if state.get("decision") == "approve" else "FAILED"}


async def run(args: Any) -> None:
    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_node("complete", complete)
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "complete")
    builder.add_edge("complete", END)
    pool = AsyncConnectionPool(
        args.database,
        min_size=args.lanes,
        max_size=args.lanes + 4,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
    )
    await pool.open()
    saver = AsyncPostgresSaver(pool)
    await saver.setup()
    graph = builder.compile(checkpointer=saver)

    async def one() -> None:
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        parked = await graph.ainvoke({"topic": "benchmark"}, config)
        if "__interrupt__" not in parked:
            raise RuntimeError("the graph did not reach its interrupt")
        done = await graph.ainvoke(Command(resume="approve"), config)
        if done.get("status") != "COMPLETED":
            raise RuntimeError(f"the graph ended {done}")

    roles = Roles({"langgraph+load": tree(os.getpid()), "postgres": postgres(args.database)})
    window, before, after = await measure_async(args, roles, one)
    finish(
        args,
        "LangGraph + PostgresSaver",
        "library in the load process, asyncio, PostgreSQL",
        window,
        roles,
        before,
        after,
    )
    await pool.close()


def main() -> None:
    args = arguments(__doc__.splitlines()[0]).parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
