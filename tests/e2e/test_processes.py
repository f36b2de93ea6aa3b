"""``serve --processes 2`` on PostgreSQL: one port, two server processes, one supervisor.

Real gRPC on a free loopback port, real processes, a real PostgreSQL database: both
processes take connections, health and metrics answer for the pod, a killed process is
restarted, and SIGTERM drains both and exits 0.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from prometheus_client.parser import text_string_to_metric_families

from tests.support.api import Client
from tests.support.databases import PostgresDatabases
from tests.support.deployment import definitions_dir, run_server_to_exit, running_server
from tests.support.server import STATEWRIGHTD, ServerProcess, wait_until

SERVING = health_pb2.HealthCheckResponse.SERVING
# Each new channel is a new connection, which the kernel hashes to one of the processes:
# with two processes, 64 connections all landing on one would happen once in 2**63 runs.
MAX_CONNECTIONS = 64
METRICS = ["--metrics-listen", "127.0.0.1:0"]


@pytest.fixture
def pod(postgres_databases: PostgresDatabases, tmp_path: Path) -> Iterator[ServerProcess]:
    url = postgres_databases.create()
    server = ServerProcess(
        database_url=url,
        definitions=definitions_dir(tmp_path / "definitions"),
        grace=3.0,
        cwd=tmp_path,
        extra_args=["--processes", "2", *METRICS, "--health-listen", "127.0.0.1:0"],
    )
    server.start()
    # The pod's one "serving on" line comes once both processes listen.
    assert "2 server processes up" in server.log(), server.log()
    assert len(re.findall("serving on", server.log())) == 1, server.log()
    try:
        yield server
    finally:
        server.kill()
        postgres_databases.drop_soon(url)


def metrics_port(server: ServerProcess) -> int:
    match = re.search(r"\[supervisor\] \S+: metrics on http://[\d.]+:(\d+)/", server.log())
    assert match, server.log()
    return int(match.group(1))


def scrape(server: ServerProcess) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(
        f"http://127.0.0.1:{metrics_port(server)}/metrics", timeout=10
    ) as r:
        text = r.read().decode()
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def starts_by_process(server: ServerProcess) -> dict[str, float]:
    found: dict[str, float] = {}
    for (name, labels), value in scrape(server).items():
        named = dict(labels)
        if name == "grpc_server_started_total" and named.get("grpc_method") == "StartWorkflow":
            found[named["process"]] = found.get(named["process"], 0.0) + value
    return found


def child_pids(server: ServerProcess) -> dict[int, int]:
    """Process index -> pid, from the supervisor's log (the latest start of each)."""
    pids: dict[int, int] = {}
    for index, pid in re.findall(r"server process (\d+) started: pid (\d+)", server.log()):
        pids[int(index)] = int(pid)
    return pids


def health(target: str, service: str) -> int:
    with grpc.insecure_channel(target) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)  # the stubs' types lack Check
        return int(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)


def run_hitl(target: str) -> None:
    with Client(target) as client:
        started = client.start("mail-approval", input={"topic": "pod"}).workflow
        assert started.state == "awaiting_approval"
        done = client.resume(started.workflow_id, "approve", expected_revision=started.revision)
        assert done.workflow.revision == 2


def spread_over_both(server: ServerProcess) -> dict[str, float]:
    """Start workflows on new connections until both processes have served one."""
    for _ in range(MAX_CONNECTIONS):
        run_hitl(server.target)
        counts = starts_by_process(server)
        if len(counts) == 2 and all(counts.values()):
            return counts
    raise AssertionError(f"{MAX_CONNECTIONS} connections never reached both: {counts}")


def test_two_processes_serve_one_port_and_drain_on_sigterm(pod: ServerProcess) -> None:
    assert set(child_pids(pod)) == {0, 1}
    assert len(set(child_pids(pod).values())) == 2
    spread_over_both(pod)
    for service in ("", "liveness", "readiness", "statewright.v1.WorkflowService"):
        assert health(pod.target, service) == SERVING
    samples = scrape(pod)
    assert samples[("statewright_processes", frozenset())] == 2
    assert samples[("statewright_process_restarts_total", frozenset())] == 0
    # Every process's own runtime gauges are there, one series each.
    depth = [k for k in samples if k[0] == "statewright_eventloop_queue_depth"]
    assert {dict(labels)["process"] for _, labels in depth} == {"0", "1"}
    # Every line of a server process names it.
    assert re.search(r"INFO \[0\] statewrightd\.server: .*listening on", pod.log())
    assert re.search(r"INFO \[1\] statewrightd\.server: .*listening on", pod.log())

    pod.signal(signal.SIGTERM)
    assert pod.wait(30) == 0, pod.log()
    for index in (0, 1):
        assert re.search(rf"\[{index}\] statewrightd\.server: draining", pod.log()), pod.log()
        assert re.search(rf"\[{index}\] statewrightd\.server: stopped", pod.log()), pod.log()
    assert "every server process drained" in pod.log()
    assert pod.log().splitlines()[-1].endswith("[supervisor] statewrightd.supervisor: stopped")
    assert "Traceback" not in pod.log(), pod.log()


def test_a_killed_process_is_restarted_and_the_pod_keeps_serving(pod: ServerProcess) -> None:
    killed = child_pids(pod)[1]
    os.kill(killed, signal.SIGKILL)
    assert wait_until(lambda: child_pids(pod)[1] != killed, 30), pod.log()
    assert re.search(r"server process 1 \(pid \d+\) exited with -9", pod.log()), pod.log()
    assert wait_until(lambda: scrape(pod).get(("statewright_processes", frozenset())) == 2, 30), (
        pod.log()
    )
    assert scrape(pod)[("statewright_process_restarts_total", frozenset())] == 1
    # The restarted process serves again, on the same port, with the same database.
    spread_over_both(pod)
    assert health(pod.target, "readiness") == SERVING
    pod.signal(signal.SIGTERM)
    assert pod.wait(30) == 0, pod.log()


def test_a_process_that_cannot_start_fails_the_pod_start(
    postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    # What only a process can find: its file gives a version the database recorded new
    # content (the supervisor checks the files alone, before any process starts).
    url = postgres_databases.create()
    recorded = (
        "name: pinned\nversion: 1\nstates: {a: {}}\ntransitions: [{from: a, to: __finish__}]\n"
    )
    first = definitions_dir(tmp_path / "first", examples=False, extra={"pinned.yaml": recorded})
    with running_server(url, first, cwd=tmp_path):
        pass
    edited = recorded.replace("states: {a: {}}", "states: {a: {}, b: {}}").replace(
        "to: __finish__}]", "to: b}, {from: b, to: __finish__}]"
    )
    second = definitions_dir(tmp_path / "second", examples=False, extra={"pinned.yaml": edited})
    ended = run_server_to_exit(url, second, cwd=tmp_path, processes=2)
    assert ended.returncode == 2, ended.stdout
    assert "statewrightd cannot start" in ended.stdout
    assert "a server process could not start" in ended.stdout
    postgres_databases.drop_soon(url)


def test_sqlite_refuses_several_processes(tmp_path: Path) -> None:
    ended = run_server_to_exit(
        f"sqlite:///{tmp_path / 'one.db'}",
        definitions_dir(tmp_path / "definitions"),
        cwd=tmp_path,
        processes=2,
    )
    assert ended.returncode == 2, ended.stdout
    assert "needs PostgreSQL" in ended.stdout


def test_only_the_pods_own_processes_share_its_port(
    pod: ServerProcess, postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    port = pod.port
    other = postgres_databases.create()
    children = {int(pid) for pid in re.findall(r"server process \d started: pid (\d+)", pod.log())}
    (health,) = set(re.findall(r"health checks \(plaintext\) on 127\.0\.0\.1:(\d+)", pod.log()))
    held = [("--listen", port, []), ("--health-listen", int(health), ["--listen", "127.0.0.1:0"])]
    for (flag, port, more), processes in itertools.product(held, (2, 1)):
        # Another supervisor, or a server on its own, each with a database of its own.
        ended = subprocess.run(
            [*STATEWRIGHTD, "serve", flag, f"127.0.0.1:{port}", *more, "--database", other,
             "--processes", str(processes), "--grace", "1"],
            capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert ended.returncode == 2, ended.stderr
        assert "Traceback" not in ended.stderr, ended.stderr
        (line,) = [x for x in ended.stderr.splitlines() if "cannot start" in x]
        if processes > 1:  # a supervisor first waits a moment for a port to be let go
            assert "waiting up to" in ended.stderr, ended.stderr
        assert f"port {port} (127.0.0.1:{port}) is already in use by pid" in line, line
        holder = int(line.split("by pid ")[1].split()[0])
        assert holder in children, (holder, children)
        assert f"{flag} HOST:PORT" in line, line
        assert "server process 0 started" not in ended.stderr  # refused before any started
    # The pod still serves every call, from its own database.
    spread_over_both(pod)
    postgres_databases.drop_soon(other)


def test_a_pod_restarted_after_its_supervisor_was_killed_waits_for_the_old_processes(
    pod: ServerProcess, postgres_databases: PostgresDatabases, tmp_path: Path
) -> None:
    port, old = pod.port, set(child_pids(pod).values())
    pod.kill()  # SIGKILL: the supervisor alone; its processes drain, then let the port go
    url = postgres_databases.create()
    again = ServerProcess(
        database_url=url,
        definitions=definitions_dir(tmp_path / "again"),
        grace=3.0,
        cwd=tmp_path,
        extra_args=["--processes", "2", "--listen", f"127.0.0.1:{port}", *METRICS],
    )
    # ServerProcess always asks for a free port first; the last --listen is the one taken.
    try:
        again.start(timeout=60)
        assert again.port == port, again.log()
        assert not set(child_pids(again).values()) & old
        spread_over_both(again)
    finally:
        again.kill()
        postgres_databases.drop_soon(url)
