"""The image under test and containers of it, run by podman (scripts/podman sets it up).

Every container gets a network namespace of its own (slirp4netns): its ports are
published on the host's loopback only, and the host's loopback is what it reaches at
``HOST_LOOPBACK``, where the test's PostgreSQL listens. Nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
PODMAN = [str(REPO / "scripts" / "podman")]
BUILD_IMAGE = REPO / "scripts" / "build-image"
# The tag of the test's own build, one per checkout: a build replaces the image its tag
# named before (scripts/build-image), which must never be another checkout's under test.
TEST_TAG = (
    "localhost/statewright/statewrightd:image-test-"
    + hashlib.sha256(str(REPO).encode()).hexdigest()[:12]
)

# slirp4netns maps this address of the container's network to the host's 127.0.0.1.
HOST_LOOPBACK = "10.0.2.2"
NETWORK = "slirp4netns:allow_host_loopback=true,port_handler=slirp4netns"
SERVING = health_pb2.HealthCheckResponse.SERVING


def podman(
    *args: str, timeout: float = 120, check: bool = True
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*PODMAN, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and result.returncode != 0:
        raise AssertionError(
            f"podman {' '.join(args)} exited {result.returncode}:\n{result.stdout}{result.stderr}"
        )
    return result


def build_image(iidfile: Path) -> tuple[str, str]:
    """Build the image as `make image` does, on the base made from Debian's packages.

    Returns (image id, build log). The first build on a machine installs podman and
    mmdebstrap, makes the base and downloads the wheels; later ones reuse all three.
    """
    result = subprocess.run(
        [str(BUILD_IMAGE), "--base", "local", "--tag", TEST_TAG, "--iidfile", str(iidfile)],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"scripts/build-image failed:\n{log[-6000:]}"
    return iidfile.read_text(encoding="utf-8").strip(), log


def inspect_image(image: str) -> dict[str, Any]:
    (info,) = json.loads(podman("image", "inspect", image).stdout)
    config: dict[str, Any] = info["Config"]
    return config


@dataclass
class Container:
    """A detached container; ``ports`` maps each published container port to its host port."""

    name: str
    ports: dict[int, int] = field(default_factory=dict)

    @classmethod
    def start(
        cls,
        image: str,
        run_args: Sequence[str],
        *,
        publish: Sequence[int],
        command: Sequence[str] = (),
        prefix: str = "statewright-image-test",
    ) -> Container:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        published = [f"--publish=127.0.0.1::{port}" for port in publish]
        podman(
            "run",
            "--detach",
            f"--name={name}",
            f"--network={NETWORK}",
            *published,
            *run_args,
            image,
            *command,
        )
        container = cls(name)
        for port in publish:
            container.ports[port] = container._host_port(port)
        return container

    def restart(self) -> None:
        """Start the stopped container again: same volumes, possibly other host ports."""
        podman("start", self.name)
        for port in self.ports:
            self.ports[port] = self._host_port(port)

    def _host_port(self, port: int) -> int:
        # "127.0.0.1:41234": the free port podman chose on the host.
        out = podman("port", self.name, f"{port}/tcp").stdout.strip()
        return int(out.rsplit(":", 1)[1])

    def target(self, port: int) -> str:
        return f"127.0.0.1:{self.ports[port]}"

    def state(self) -> dict[str, Any]:
        (info,) = json.loads(podman("container", "inspect", self.name).stdout)
        state: dict[str, Any] = info["State"]
        return state

    def running(self) -> bool:
        return bool(self.state()["Running"])

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def exec(self, *command: str) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *command, check=False, timeout=60)

    def wait_health(self, port: int, service: str, *, within: float) -> None:
        """Until the grpc.health.v1 ``service`` on ``port`` answers SERVING, as a probe asks.

        Fails at once when the container has exited, and after ``within`` seconds.
        """
        deadline = time.monotonic() + within
        last: object = None
        with grpc.insecure_channel(self.target(port)) as channel:
            stub: Any = health_pb2_grpc.HealthStub(channel)  # the stub's methods are untyped
            while time.monotonic() < deadline:
                if not self.running():
                    raise AssertionError(f"{self.name} exited:\n{self.logs()}")
                try:
                    reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=2)
                    if reply.status == SERVING:
                        return
                    last = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
                except grpc.RpcError as err:
                    last = err.code()
                time.sleep(0.5)
        raise AssertionError(
            f"health {service!r} on port {port} not SERVING after {within:g}s (last: {last}):\n"
            + self.logs()
        )

    def stop(self, grace: int) -> int:
        """SIGTERM, then SIGKILL after ``grace`` seconds, as the kubelet does; the exit code."""
        podman("stop", f"--time={grace}", self.name, timeout=grace + 60)
        return int(self.state()["ExitCode"])

    def remove(self) -> None:
        # --volumes: the anonymous volumes of the image's VOLUME go with the container.
        podman("rm", "--force", "--volumes", self.name, check=False, timeout=60)


def run_to_exit(
    image: str, run_args: Sequence[str], *, command: Sequence[str] = (), timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run a container in the foreground until it exits (a Job's container)."""
    name = f"statewright-image-test-{uuid.uuid4().hex[:8]}"
    try:
        return podman(
            "run",
            f"--name={name}",
            f"--network={NETWORK}",
            *run_args,
            image,
            *command,
            timeout=timeout,
            check=False,
        )
    finally:
        podman("rm", "--force", "--volumes", name, check=False, timeout=60)
