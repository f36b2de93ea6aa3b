"""Restate on the HITL workload: a workflow that waits on a durable promise, then completes.

Not a test. Runs in .cache/peers-venv with the Restate server binary and the TypeScript
SDK from npm (bench/peers/install.sh). Restate keeps its own durable log and state
(RocksDB under a temporary directory), not PostgreSQL. Three roles: restate-server, the
service (Node, bench/peers/restate/service.cjs, which Restate calls over HTTP/2) and this
process, the load, an HTTP/1.1 client with keep-alive connections to the ingress.

The server tries to reach the internet at start (a version check), so the whole peer runs
in a network namespace of its own with only a loopback interface: this script re-executes
itself under ``unshare --net`` (root only) and refuses to run without it.

Per workflow: ``POST /mailApproval/{id}/run/send`` (answered once the invocation is
durably accepted; Restate exposes no "waiting" state to wait for), ``POST
/mailApproval/{id}/approve`` (answered once the promise is durably resolved), then ``GET
/restate/workflow/mailApproval/{id}/attach``, answered with the run's result once it has
completed.

    .cache/peers-venv/bin/python bench/peers/restate_hitl.py --lanes 16
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

# The repository root, so that bench.peers.common imports in the peers' own environment.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.peers.common import (
    Measured,
    Roles,
    arguments,
    fail,
    finish,
    measure_async,
    stop,
    tree,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
MODULES = ROOT / ".cache" / "restate" / "node_modules"
SERVER = MODULES / "@restatedev" / "restate-server-linux-x64" / "bin" / "restate-server"
NETNS_ENV = "STATEWRIGHT_PEER_NETNS"
INGRESS = "http://127.0.0.1:8080"
ADMIN = "http://127.0.0.1:9070"
SERVICE_PORT = 9080
START_TIMEOUT = 60.0


def in_own_network() -> None:
    """Re-execute under a new network namespace with loopback up, unless already there."""
    if os.environ.get(NETNS_ENV) == "1":
        return
    unshare, ip = shutil.which("unshare"), shutil.which("ip")
    if os.geteuid() != 0 or unshare is None or ip is None:
        fail("restate peer: needs root, unshare and ip for a network namespace of its own")
    script = f'{ip} link set lo up && exec "$0" "$@"'
    argv = [unshare, "--net", "sh", "-c", script, sys.executable, *sys.argv]
    os.execve(unshare, argv, {**os.environ, NETNS_ENV: "1"})


def wait_http(url: str, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    fail(f"restate peer: {what} did not answer at {url}")


def run(args: Any) -> None:
    if not SERVER.exists() or not (MODULES / "@restatedev" / "restate-sdk").exists():
        fail("restate peer: run bench/peers/install.sh first (npm packages missing)")
    base = Path(tempfile.mkdtemp(prefix="restate-peer."))
    env = {
        **os.environ,
        "RESTATE_BASE_DIR": str(base),
        "RESTATE_BIND_IP": "127.0.0.1",
        "RESTATE_LISTEN_MODE": "tcp",
        "RESTATE_DISABLE_TELEMETRY": "true",
        "RESTATE_LOG_FILTER": "warn",
        "RESTATE_LOG_DISABLE_ANSI_CODES": "true",
    }
    log = (base / "restate.log").open("wb")
    server = subprocess.Popen([str(SERVER), "--no-logo"], env=env, stdout=log, stderr=log)
    service = subprocess.Popen(
        ["node", str(HERE / "restate" / "service.cjs"), str(SERVICE_PORT)],
        env={**os.environ, "NODE_PATH": str(MODULES)},
        stdout=log,
        stderr=log,
    )
    try:
        wait_http(f"{ADMIN}/health", "the admin API")
        wait_http(f"{INGRESS}/restate/health", "the ingress")
        registered = httpx.post(
            f"{ADMIN}/deployments", json={"uri": f"http://127.0.0.1:{SERVICE_PORT}"}, timeout=30
        )
        if registered.status_code >= 300:
            fail(f"restate peer: registering the service failed: {registered.text}")
        roles = Roles(
            {
                "restate-server": tree(server.pid),
                "service (node)": tree(service.pid),
                "load": lambda: [os.getpid()],
            }
        )
        window, before, after = asyncio.run(drive(args, roles))
        setup = "restate-server (own RocksDB log), Node service, HTTP load"
        finish(args, "Restate", setup, window, roles, before, after)
    finally:
        for process in (service, server):
            stop(process)
        log.close()
        shutil.rmtree(base, ignore_errors=True)


async def drive(args: Any, roles: Roles) -> Measured:
    lanes = args.lanes * 2
    limits = httpx.Limits(max_connections=lanes, max_keepalive_connections=lanes)
    async with httpx.AsyncClient(base_url=INGRESS, limits=limits, timeout=30) as client:

        async def one() -> None:
            key = uuid.uuid4().hex
            sent = await client.post(f"/mailApproval/{key}/run/send", json="benchmark")
            sent.raise_for_status()
            approved = await client.post(f"/mailApproval/{key}/approve", json="approve")
            approved.raise_for_status()
            done = await client.get(f"/restate/workflow/mailApproval/{key}/attach")
            done.raise_for_status()
            if done.json().get("status") != "COMPLETED":
                raise RuntimeError(f"the workflow ended {done.text}")

        return await measure_async(args, roles, one)


def main() -> None:
    in_own_network()
    args = arguments(__doc__.splitlines()[0]).parse_args()
    run(args)


if __name__ == "__main__":
    main()
