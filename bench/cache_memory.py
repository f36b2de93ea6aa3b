"""What the session cache costs in memory: one server process's resident size with N
instances waiting, each holding a context of about S bytes of JSON (a list of small
records, the shape that takes Python the most memory per byte), under the cache's
default byte budget and with that budget lifted (the count alone bounding the cache, as
it did before ``--max-cached-contexts``). Each side on a fresh database; every instance
is then stepped once, the ones the cache let go read from the database first, and the
time that takes is reported too.

Not a test: run it as ``bench/run_cache_memory.sh`` (a private PostgreSQL, 127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format, struct_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.schedule_bench import fresh_database
from bench.timer_bench import server, workspace
from statewrightd.config import CACHED_CONTEXT_BYTES

HELD = """\
name: held
version: 1
context:
  items: {type: list, default: []}
  pokes: {type: int, default: 0}
states:
  waiting: {}
  done: {}
transitions:
  - {from: waiting, on: poke, to: waiting, set: {pokes: "context.pokes + 1"}}
  - {from: waiting, on: finish, to: done}
"""
LIFTED = 1 << 40  # bytes: no byte bound in practice, only the count (50,000)
LANES = 8


def _items(size: int) -> list[dict[str, Any]]:
    """Records of about 64 bytes of JSON each, ``size`` bytes of them together."""
    return [{"id": n, "name": f"item-{n:08d}", "qty": n % 7, "ok": True} for n in range(size // 64)]


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _each(stub: pb_grpc.WorkflowServiceStub, calls: list[Any], call: str) -> float:
    """Send ``calls`` (requests) over ``LANES`` threads; the seconds it took."""
    method = getattr(stub, call)
    began = time.perf_counter()
    with ThreadPoolExecutor(LANES) as pool:
        for _ in pool.map(lambda request: method(request, timeout=60), calls):
            pass
    return time.perf_counter() - began


def _side(
    database: str,
    definitions: Path,
    logs: Path,
    budget: int,
    *,
    context: dict[str, Any],
    n: int,
) -> dict[str, Any]:
    message = json_format.ParseDict(context, struct_pb2.Struct())
    extra = ["--max-cached-contexts", str(budget)]
    with (
        server(database, definitions, logs, f"server-{budget}", extra) as (target, pid),
        grpc.insecure_channel(target) as channel,
    ):
        stub = pb_grpc.WorkflowServiceStub(channel)
        idle = _rss_mib(pid)
        ids = [f"held-{i}" for i in range(n)]
        starts = [
            pb.StartWorkflowRequest(definition="held", workflow_id=wid, input=message)
            for wid in ids
        ]
        _each(stub, starts, "StartWorkflow")
        diagnostics = stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=10)
        held = _rss_mib(pid)
        pokes = [pb.SignalWorkflowRequest(name=f"workflows/{w}", event="poke") for w in ids]
        poked = _each(stub, pokes, "SignalWorkflow")
        return {
            "budget": "lifted" if budget == LIFTED else budget,
            "instances": n,
            "context_json_bytes": len(json.dumps({**context, "pokes": 0}, separators=(",", ":"))),
            "cached_sessions": diagnostics.admissions.cached_sessions,
            "cached_context_bytes": diagnostics.admissions.cached_context_bytes,
            "rss_idle_mib": round(idle, 1),
            "rss_held_mib": round(held, 1),
            "rss_after_steps_mib": round(_rss_mib(pid), 1),
            "steps_per_s": round(n / poked, 1),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--context-bytes", type=int, default=64 * 1024)
    parser.add_argument(
        "--budget", type=int, default=CACHED_CONTEXT_BYTES, help="the bounded side's"
    )
    args = parser.parse_args()
    admin = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    context = {"items": _items(args.context_bytes)}
    with workspace({"held.yaml": HELD}, "cache-memory-") as (definitions, logs):
        results = [
            _side(
                fresh_database(admin, f"sw_cache_{i}"),
                definitions,
                logs,
                budget,
                context=context,
                n=args.instances,
            )
            for i, budget in enumerate((args.budget, LIFTED))
        ]
    for result in results:
        print(json.dumps(result))
    keys = list(results[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for result in results:
        print("| " + " | ".join(str(result[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
