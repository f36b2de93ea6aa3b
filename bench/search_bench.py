"""Search fields: what a filtered list costs at N instances, and what projecting two search
fields costs a start-to-complete.

Not a test. Run it through bench/run_search.sh (a private PostgreSQL, all on 127.0.0.1):

    bench/run_search.sh                         # 100,000 instances, 2 rounds of 10 s
    bench/run_search.sh --instances 1000000     # the acceptance size (minutes to seed)

Two statewrightd servers run from this process on two fresh databases of the same
PostgreSQL: one with order-pricing as the examples declare it, one with the same
definition plus two search fields (a number and a keyword, both projected at every save).

1. Throughput: the start scenario (StartWorkflow order-pricing, one step to COMPLETED)
   closed loop against each server in turn, A B A B ..., so that the machine's other load
   falls on both alike; the ratio is the mean with search fields over the mean without.
2. Latency: the search database is filled by SQL with N more instances and their search
   rows (each with its own `total`), analysed, and ListWorkflows is asked for pages of 100
   by a selective filter (`search.total >= X AND search.total < X + 100`, X random), one at
   a time, over gRPC: p50 and p99 of the whole call.
3. Orders (--orders, or alone with --lists-only): pages of 100 in each order of ORDERS,
   with the selective filter and without one, the first page and the fifth (reached by
   its tokens): p50 and p99 of the call, to compare an order of several keys with the
   time order of old.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import grpc
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from bench import loadgen
from bench.runtime_bench import ROOT, VENV_BIN, Served, _launch, settle
from statewrightd.store.schema import migrate
from tests.support import citus

SEARCH = """
search:
  total:   {type: number, value: "context.total"}
  carrier: {type: keyword, value: "has(context.shipment.carrier) ? context.shipment.carrier : ''"}
"""
SEED = """
INSERT INTO workflow_instances (workflow_id, definition, version, state, status, context,
                                revision, create_time, update_time)
SELECT 'seed-' || i, 'order-pricing', 1, 'shipped', 'COMPLETED', '{}', 1,
       now() - i * interval '1 millisecond', now() - i * interval '1 millisecond'
  FROM generate_series(%(first)s::integer, %(last)s::integer) AS i
"""
SEED_SEARCH = """
INSERT INTO workflow_search (workflow_id, field, text, number)
SELECT 'seed-' || i, 'total', NULL, i
  FROM generate_series(%(first)s::integer, %(last)s::integer) AS i
UNION ALL
SELECT 'seed-' || i, 'carrier', 'standard', NULL
  FROM generate_series(%(first)s::integer, %(last)s::integer) AS i
"""


def _database(admin: str, on_citus: bool) -> str:
    if on_citus:  # Citus's default 32 shards, as deployed
        made = citus.create_database(admin, shards=None)
        migrate(made)  # distributing takes longer than a server waits to start
        return made
    name = f"sw_search_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}".encode())
    return admin.rsplit("/", 1)[0] + f"/{name}"


def _serve(database: str, definitions: Path, logs: Path, name: str) -> Served:
    argv = [str(VENV_BIN / "statewrightd"), "serve", "--listen", "127.0.0.1:0"]
    argv += ["--database", database, "--definitions", str(definitions), "--log-level", "INFO"]
    return _launch(name, argv, logs / f"{name}.log", r"serving on [\d.]+:(\d+)", dict(os.environ))


def _definitions(root: Path, search: bool) -> Path:
    root.mkdir(parents=True)
    text = (ROOT / "examples" / "definitions" / "order-pricing.yaml").read_text()
    (root / "order-pricing.yaml").write_text(text + (SEARCH if search else ""))
    return root


def _seed(database: str, count: int) -> float:
    started = time.monotonic()
    with psycopg.connect(database, autocommit=True) as conn:
        for first in range(1, count + 1, 100_000):
            last = min(count, first + 99_999)
            conn.execute(SEED, {"first": first, "last": last})
            conn.execute(SEED_SEARCH, {"first": first, "last": last})
        conn.execute("ANALYZE workflow_instances")
        conn.execute("ANALYZE workflow_search")
    return time.monotonic() - started


def _list_latencies(target: str, count: int, queries: int) -> list[float]:
    found: list[float] = []
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        for _ in range(queries):
            low = random.randint(1, max(1, count - 100))
            text = f"search.total >= {low} AND search.total < {low + 100}"
            began = time.perf_counter()
            page = stub.ListWorkflows(pb.ListWorkflowsRequest(filter=text, page_size=100))
            found.append((time.perf_counter() - began) * 1000)
            assert len(page.workflows) == 100, (text, len(page.workflows))
    return sorted(found)


# order_by, and whether it is read with the selective filter: the time order of old, two
# keys one way over an index, two keys each way, and a search field after a time.
ORDERS = [
    ("create_time desc", False),
    ("status, create_time", False),
    ("status, create_time desc", False),
    ("create_time desc", True),
    ("update_time desc, search.total", True),
    ("status, search.total desc", True),
]


def _order_latencies(target: str, count: int, queries: int) -> list[str]:
    lines = []
    with grpc.insecure_channel(target) as channel:
        stub = pb_grpc.WorkflowServiceStub(channel)
        for order_by, filtered in ORDERS:
            first: list[float] = []
            fifth: list[float] = []
            for _ in range(queries):
                low = random.randint(1, max(1, count - 1000))
                text = f"search.total >= {low} AND search.total < {low + 1000}" if filtered else ""
                token = ""
                for n in range(5):
                    request = pb.ListWorkflowsRequest(
                        filter=text, order_by=order_by, page_size=100, page_token=token
                    )
                    began = time.perf_counter()
                    page = stub.ListWorkflows(request)
                    took = (time.perf_counter() - began) * 1000
                    if n == 0:
                        first.append(took)
                    elif n == 4:
                        fifth.append(took)
                    token = page.next_page_token
            first.sort()
            fifth.sort()
            lines.append(
                f"order_by {order_by!r}{' + filter' if filtered else ''}: first page p50 "
                f"{loadgen.percentile(first, 0.5):.1f} ms p99 {loadgen.percentile(first, 0.99):.1f}"
                f" ms; fifth page p50 {loadgen.percentile(fifth, 0.5):.1f} ms p99 "
                f"{loadgen.percentile(fifth, 0.99):.1f} ms ({queries} listings)"
            )
            print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--engine", choices=loadgen.ENGINES, default="go")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    parser.add_argument("--orders", type=int, default=0, help="listings per order (ORDERS)")
    parser.add_argument("--lists-only", action="store_true", help="no throughput rounds")
    parser.add_argument(
        "--citus", action="store_true", help="on the Citus cluster scripts/with-citus starts"
    )
    args = parser.parse_args()
    admin = os.environ[citus.ENV if args.citus else "STATEWRIGHT_TEST_POSTGRES_URL"]
    # A terminated run still stops its servers (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="search-bench-"))
    servers: dict[str, Served] = {}
    databases: dict[str, str] = {}
    try:
        for name, search in (("plain", False), ("search", True)):
            databases[name] = _database(admin, args.citus)
            definitions = _definitions(work / name, search)
            servers[name] = _serve(databases[name], definitions, work, name)
        processes, concurrency = loadgen.default_shape(args.engine)
        rates: dict[str, list[float]] = {"plain": [], "search": []}
        for round_ in range(0 if args.lists_only else args.rounds):
            for name in ("plain", "search"):
                settle(servers[name])
                plan = loadgen.Plan(
                    target=servers[name].target,
                    scenario="start",
                    processes=processes,
                    concurrency=concurrency,
                    duration=args.duration,
                    engine=args.engine,
                )
                summary = loadgen.run(plan)
                rates[name].append(summary.throughput)
                print(f"round {round_ + 1} {name:<6} {summary.line()}", flush=True)
        ratio = 0.0
        if rates["plain"]:
            ratio = statistics.mean(rates["search"]) / statistics.mean(rates["plain"])
            print(f"start-to-complete with two search fields / without: {ratio:.3f}", flush=True)
        seeded = _seed(databases["search"], args.instances)
        print(f"seeded {args.instances:,} instances in {seeded:.0f} s", flush=True)
        latencies = _list_latencies(servers["search"].target, args.instances, args.queries)
        p50 = loadgen.percentile(latencies, 0.50)
        p99 = loadgen.percentile(latencies, 0.99)
        print(
            f"ListWorkflows, selective search filter, 100-row pages at {args.instances:,}"
            f" instances: p50 {p50:.1f} ms, p99 {p99:.1f} ms ({args.queries} calls)",
            flush=True,
        )
        if args.orders:
            _order_latencies(servers["search"].target, args.instances, args.orders)
        if args.out is not None:
            result = {
                "instances": args.instances,
                "throughput": rates,
                "ratio": ratio,
                "list_p50_ms": p50,
                "list_p99_ms": p99,
            }
            args.out.write_text(json.dumps(result, indent=2) + "\n")
    finally:
        for served in servers.values():
            served.process.terminate()
            served.process.wait(30)
        if args.citus:
            for database in databases.values():
                citus.drop_database(admin, database)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
