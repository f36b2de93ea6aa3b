"""How many server processes ``serve`` runs, and the pod health a process serves."""

from __future__ import annotations

import argparse
import asyncio
import math
import os
from pathlib import Path

import pytest
from grpc_health.v1 import health_pb2

from statewrightd.config import ConfigError, ServerConfig, add_server_arguments, config_from
from statewrightd.health import LIVENESS, READINESS
from statewrightd.pod import (
    PodHealth,
    PodVerdict,
    ProcessStatus,
    SupervisorLink,
    config_from_env,
    config_to_env,
    parse_status,
)
from statewrightd.supervisor import cgroup_cpus, default_processes, process_count

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    return parser.parse_args(list(argv))


PG = {"STATEWRIGHT_DATABASE_URL": "postgresql://u@h/db"}


def test_processes_default_to_auto_and_take_a_count_or_auto() -> None:
    assert config_from(parse(), env=PG).processes is None
    assert config_from(parse("--processes", "3"), env=PG).processes == 3
    assert config_from(parse(), env={**PG, "STATEWRIGHT_PROCESSES": "2"}).processes == 2
    assert config_from(parse("--processes", "auto"), env=PG).processes is None
    base = ServerConfig(processes=1)
    assert config_from(parse(), env=PG, base=base).processes == 1


@pytest.mark.parametrize("value", ["0", "-1", "many", "1.5", "257"])
def test_bad_process_counts_are_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="processes"):
        config_from(parse("--processes", value), env=PG)


def test_sqlite_takes_one_process() -> None:
    with pytest.raises(ConfigError, match="needs PostgreSQL"):
        config_from(parse("--processes", "2", "--database", "sqlite:///x.db"), env={})
    assert config_from(parse("--processes", "1", "--database", "sqlite:///x.db"), env={})
    # Left to the default, SQLite runs one process whatever the cores.
    assert process_count(ServerConfig(database_url="sqlite:///x.db")) == (
        1,
        "SQLite is served by one process",
    )
    assert process_count(ServerConfig(database_url="postgresql://h/d", processes=4))[0] == 4


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cgroup_v2_quota_is_the_tightest_of_the_ancestors(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    write(root / "cpu.max", "max 100000\n")
    write(root / "kubepods" / "cpu.max", "300000 100000\n")
    write(root / "kubepods" / "pod" / "cpu.max", "150000 100000\n")
    write(root / "kubepods" / "pod" / "ctr" / "cpu.max", "max 100000\n")
    self_cgroup = tmp_path / "self"
    self_cgroup.write_text("0::/kubepods/pod/ctr\n")
    assert cgroup_cpus(root, self_cgroup) == 1.5
    # Inside a cgroup namespace the container's own cgroup is the root.
    write(tmp_path / "ns" / "cpu.max", "200000 100000\n")
    self_cgroup.write_text("0::/\n")
    assert cgroup_cpus(tmp_path / "ns", self_cgroup) == 2.0


def test_cgroup_v1_quota_and_no_quota(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "250000\n")
    write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n")
    self_cgroup = tmp_path / "self"
    self_cgroup.write_text("12:memory:/\n4:cpu,cpuacct:/\n")
    assert cgroup_cpus(root, self_cgroup) == 2.5
    write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n")
    assert cgroup_cpus(root, self_cgroup) == math.inf
    assert cgroup_cpus(tmp_path / "missing", tmp_path / "missing-self") == math.inf


def test_default_processes_round_the_quota_up_within_the_cpus() -> None:
    cpus = len(os.sched_getaffinity(0))
    assert default_processes(math.inf) == cpus
    assert default_processes(0.5) == 1
    assert default_processes(1.0) == 1
    assert default_processes(1.5) == min(2, cpus)
    assert default_processes(1000.0) == cpus


def test_a_server_process_gets_its_configuration_whole() -> None:
    config = ServerConfig(
        listen="0.0.0.0:7", database_url="postgresql://u:secret@h/db", processes=1
    )
    assert config_from_env(config_to_env(config)) == config
    assert config_from_env(config_to_env(ServerConfig(definitions_dir=Path("/d")))) == (
        ServerConfig(definitions_dir=Path("/d"))
    )


def test_status_lines_round_trip_and_garbage_is_ignored() -> None:
    status = ProcessStatus(alive=True, ready=False, draining=True)
    assert parse_status(status.line().split()[1:]) == status
    assert parse_status(["1", "2", "0"]) is None
    assert parse_status(["1"]) is None


async def _status(health: PodHealth, service: str) -> int:
    request = health_pb2.HealthCheckRequest(service=service)
    response = await health.servicer.Check(request, None)  # type: ignore[arg-type]
    return int(response.status)


def test_a_process_serves_the_pods_verdict_and_reports_its_own() -> None:
    async def scenario() -> None:
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        link = SupervisorLink(0, down_r, up_w)
        health = PodHealth(link)
        await health.starting()
        await health.ready(True)
        assert await _status(health, READINESS) == SERVING
        # Another process of the pod is not ready: so is the pod, from this process too.
        health.verdict(PodVerdict(alive=True, ready=False))
        await asyncio.sleep(0.05)
        assert await _status(health, READINESS) == NOT_SERVING
        assert await _status(health, LIVENESS) == SERVING
        health.verdict(PodVerdict(alive=False, ready=True))
        await asyncio.sleep(0.05)
        assert await _status(health, LIVENESS) == NOT_SERVING
        assert await _status(health, READINESS) == SERVING
        await health.draining()
        assert await _status(health, READINESS) == NOT_SERVING
        reported = os.read(up_r, 4096).decode().splitlines()
        assert reported == ["status 1 0 0", "status 1 1 0", "status 1 1 1"]
        link.close()
        for fd in (down_w, up_r):
            os.close(fd)

    asyncio.run(scenario())
