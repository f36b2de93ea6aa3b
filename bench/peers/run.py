"""Run every HITL peer once, one after the other, and write their reports as one JSON list.

Not a test. Run by bench/runtime_bench.py (``make bench``) with the peers' own Python
(.cache/peers-venv, bench/peers/install.sh), after the Statewright cases and on the same
PostgreSQL: each PostgreSQL peer gets a fresh database of its own, dropped afterwards. A
peer that cannot run is reported with the reason instead of figures.

    .cache/peers-venv/bin/python bench/peers/run.py --database postgresql://... --out peers.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import psycopg

HERE = Path(__file__).resolve().parent
PEERS = {
    "dbos": ("DBOS Transact", "dbos_hitl.py", True),
    "langgraph": ("LangGraph + PostgresSaver", "langgraph_hitl.py", True),
    "restate": ("Restate", "restate_hitl.py", False),
    "temporal": ("Temporal", "temporal_hitl.py", False),
}
# Start-up, warm-up, window and shut-down together; past this a peer is stopped.
PEER_TIMEOUT = 240.0


def with_database(url: str, name: str) -> str:
    return re.sub(r"/[^/]*$", f"/{name}", url)


def run_peer(key: str, args: argparse.Namespace) -> dict[str, Any]:
    name, script, uses_postgres = PEERS[key]
    database = ""
    if uses_postgres:
        database = f"peer_{key}_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(args.database, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{database}"')
    try:
        with tempfile.NamedTemporaryFile(suffix=".json") as out:
            argv = [
                sys.executable,
                str(HERE / script),
                "--lanes",
                str(args.lanes),
                "--warmup",
                str(args.warmup),
                "--duration",
                str(args.duration),
                "--out",
                out.name,
            ]
            if database:
                argv += ["--database", with_database(args.database, database)]
            try:
                done = subprocess.run(
                    argv, capture_output=True, text=True, timeout=PEER_TIMEOUT, check=False
                )
            except subprocess.TimeoutExpired:
                return {"peer": name, "skipped": f"did not finish within {PEER_TIMEOUT:.0f} s"}
            text = Path(out.name).read_text()
            if done.returncode != 0 or not text.strip():
                reason = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
                return {"peer": name, "skipped": reason[:300]}
            report: dict[str, Any] = json.loads(text)
            return report
    finally:
        if database:
            with psycopg.connect(args.database, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="postgresql:// URL (an admin's)")
    parser.add_argument("--lanes", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--only", nargs="*", choices=list(PEERS), default=list(PEERS))
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    reports = []
    for key in args.only:
        report = run_peer(key, args)
        shown = report.get("skipped") or (
            f"{report['throughput']:.0f} workflows/s, p99 {report['p99_ms']:.0f} ms"
        )
        print(f"peer {report['peer']:<28} {shown}", flush=True)
        reports.append(report)
    args.out.write_text(json.dumps(reports, indent=2) + "\n")


if __name__ == "__main__":
    main()
