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
import tempfile
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import psycopg
from google.protobuf import json_format, struct_pb2
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.runtime_bench import Served, _launch, statewrightd_command
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


@contextmanager
def _database(admin: str) -> Iterator[str]:
    name = f"cache_memory_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


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


def _side(admin: str, definitions: Path, logs: Path, budget: int, args: Any) -> dict[str, Any]:
    context = struct_pb2.Struct()
    json_format.ParseDict({"items": _items(args.context_bytes)}, context)
    with _database(admin) as url:
        argv = [
            *statewrightd_command(),
            "serve", "--listen", "127.0.0.1:0", "--database", url,
            "--definitions", str(definitions), "--log-level", "INFO",
            "--max-cached-contexts", str(budget),
        ]  # fmt: skip
        env = {**os.environ, "STATEWRIGHT_PROCESSES": "1"}
        served: Served = _launch(
            "statewrightd", argv, logs / f"server-{budget}.log", r"serving on [\d.]+:(\d+)", env
        )
        try:
            with grpc.insecure_channel(served.target) as channel:
                stub = pb_grpc.WorkflowServiceStub(channel)
                idle = _rss_mib(served.process.pid)
                ids = [f"held-{n}" for n in range(args.instances)]
                starts = [
                    pb.StartWorkflowRequest(definition="held", workflow_id=wid, input=context)
                    for wid in ids
                ]
                _each(stub, starts, "StartWorkflow")
                diagnostics = stub.GetDiagnostics(pb.GetDiagnosticsRequest(), timeout=10)
                held = _rss_mib(served.process.pid)
                pokes = [pb.SignalWorkflowRequest(name=f"workflows/{w}", event="poke") for w in ids]
                poked = _each(stub, pokes, "SignalWorkflow")
                return {
                    "budget": "lifted" if budget == LIFTED else budget,
                    "instances": args.instances,
                    "context_json_bytes": len(
                        json.dumps(
                            {"items": _items(args.context_bytes), "pokes": 0}, separators=(",", ":")
                        )
                    ),
                    "cached_sessions": diagnostics.admissions.cached_sessions,
                    "cached_context_bytes": diagnostics.admissions.cached_context_bytes,
                    "rss_idle_mib": round(idle, 1),
                    "rss_held_mib": round(held, 1),
                    "rss_after_steps_mib": round(_rss_mib(served.process.pid), 1),
                    "steps_per_s": round(args.instances / poked, 1),
                }
        finally:
            served.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--context-bytes", type=int, default=64 * 1024)
    parser.add_argument(
        "--budget", type=int, default=CACHED_CONTEXT_BYTES, help="the bounded side's"
    )
    args = parser.parse_args()
    admin = os.environ["STATEWRIGHT_TEST_POSTGRES_URL"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        definitions = root / "definitions"
        definitions.mkdir()
        (definitions / "held.yaml").write_text(HELD)
        results = [
            _side(admin, definitions, root, budget, args) for budget in (args.budget, LIFTED)
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
