"""The server image, built from the Dockerfile and run: as the README runs it, and as k8s/ does.

The image is built as `make image` builds it (hermetically, on a base made from
Debian's packages) and started with podman. The Kubernetes runs take every setting from
the rendered manifests (tests/image/kubernetes.py): the migration Job's container first,
then the Deployment's, with its environment, ports, user, read-only root filesystem,
capabilities, limits and volumes, and nothing else writable. Workflows run through the
Python client from the host.
"""

from __future__ import annotations

import json
import threading
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from urllib.request import urlopen

import grpc
import psycopg
import pytest
from statewright import Client, WorkflowStatus
from statewright.v1 import workflow_service_pb2 as pb
from statewright.v1 import workflow_service_pb2_grpc as pb_grpc

from statewrightd.store.schema import latest_version, postgres_schema_version
from tests.image.containers import (
    HOST_LOOPBACK,
    REPO,
    Container,
    inspect_image,
    run_to_exit,
)
from tests.image.kubernetes import PodmanRun, podman_run, workload_container
from tests.support.api import error_info
from tests.support.databases import PostgresDatabases, read_history
from tests.unit.deploy.rendering import Rendered

GRPC_PORT = 50051
METRICS_PORT = 9464
# The image's runtime user (Dockerfile): what `--user` and the manifests must say.
RUNTIME_USER = 10001


def in_container(host_url: str) -> str:
    """The test PostgreSQL's URL as a container reaches it (the host's loopback)."""
    parts = urlsplit(host_url)
    assert parts.hostname == "127.0.0.1", host_url
    netloc = parts.netloc.replace("127.0.0.1", HOST_LOOPBACK, 1)
    return urlunsplit(parts._replace(netloc=netloc))


def run_mail_approval(target: str) -> str:
    """Start an instance, approve it, and return its id once it is COMPLETED."""
    with Client(target, timeout=15) as client:
        started = client.start("mail-approval", {"topic": "image test"}).workflow
        assert started.status is WorkflowStatus.WAITING, started
        assert started.state == "awaiting_approval"
        done = client.resume(started.name, "approve", expected_revision=started.revision)
        assert done.workflow.status is WorkflowStatus.COMPLETED, done.workflow
        assert done.workflow.context["sent"] is True
        assert client.get(started.name).status is WorkflowStatus.COMPLETED
        return started.name.removeprefix("workflows/")


def assert_runs_as_the_runtime_user_on_a_read_only_root(container: Container) -> None:
    ids = container.exec("id", "-u")
    assert ids.returncode == 0 and ids.stdout.strip() == str(RUNTIME_USER), ids
    # A control: the server's code cannot be changed at run time.
    touched = container.exec("touch", "/opt/statewright/written-at-run-time")
    assert touched.returncode != 0 and "Read-only file system" in touched.stderr, touched


# -- the image and the manifests -------------------------------------------------------------


def test_the_image_is_what_the_manifests_expect(image: str, rendered_base: Rendered) -> None:
    config = inspect_image(image)
    assert config["User"] == f"{RUNTIME_USER}:{RUNTIME_USER}"
    assert config["Entrypoint"] == ["statewrightd", "serve"]
    assert set(config.get("Volumes") or {}) == {"/var/lib/statewright"}
    exposed = {int(p.split("/")[0]) for p in config["ExposedPorts"]}
    version = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"
    ]
    for kind, name in (("Deployment", "statewright"), ("Job", "statewright-migrate")):
        pod, container = workload_container(rendered_base, kind, name)
        # The image `make image` tags (scripts/build-image) is the one the manifests name.
        assert container["image"] == f"statewright/statewrightd:{version}", (kind, container)
        assert pod["securityContext"]["runAsUser"] == RUNTIME_USER, kind
        assert pod["securityContext"]["runAsGroup"] == RUNTIME_USER, kind
        assert {p["containerPort"] for p in container.get("ports", [])} <= exposed, kind


def test_a_manifest_setting_the_test_cannot_apply_fails_it(
    rendered_base: Rendered, tmp_path: Path
) -> None:
    pod, container = workload_container(rendered_base, "Deployment", "statewright")
    secrets = {("statewright-database", "url"): "postgresql://x@h/db"}
    podman_run(rendered_base, pod, container, secrets=secrets, scratch=tmp_path / "ok")
    changes = [
        {**container, "workingDir": "/srv"},
        {
            **container,
            "volumeMounts": [*container["volumeMounts"], {"name": "x", "mountPath": "/x"}],
        },
        {**container, "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "a"}}}]},
        {**container, "securityContext": {**container["securityContext"], "privileged": True}},
    ]
    for i, changed in enumerate(changes):
        with pytest.raises(AssertionError):
            podman_run(rendered_base, pod, changed, secrets=secrets, scratch=tmp_path / str(i))
    with pytest.raises(AssertionError, match="does not provide"):
        podman_run(rendered_base, pod, container, secrets={}, scratch=tmp_path / "no-secret")


# -- SQLite: the image on its own ------------------------------------------------------------


def test_on_sqlite_it_serves_and_runs_a_workflow_writing_only_its_volume(image: str) -> None:
    # As the README runs it, locked down as the manifests demand. Nothing but the image's
    # own VOLUME is writable: no tmpfs of podman's.
    container = Container.start(
        image,
        ["--read-only", "--read-only-tmpfs=false", f"--user={RUNTIME_USER}"],
        publish=[GRPC_PORT],
    )
    try:
        container.wait_health(GRPC_PORT, "readiness", within=60)
        workflow_id = run_mail_approval(container.target(GRPC_PORT))
        assert_runs_as_the_runtime_user_on_a_read_only_root(container)
        listed = container.exec("ls", "/var/lib/statewright")
        assert "statewright.db" in listed.stdout.split(), listed
        assert container.stop(grace=30) == 0, container.logs()
        # The volume outlives the process: started again, the server has the instance.
        container.restart()
        container.wait_health(GRPC_PORT, "readiness", within=60)
        with Client(container.target(GRPC_PORT), timeout=15) as client:
            assert client.get(workflow_id).status is WorkflowStatus.COMPLETED
        assert container.stop(grace=30) == 0, container.logs()
    finally:
        container.remove()


# -- PostgreSQL: the migration Job, then the Deployment ------------------------------------


@dataclass
class Deployed:
    container: Container
    run: PodmanRun
    database_url: str  # as the host reaches it


@pytest.fixture
def deployed(
    image: str, rendered_base: Rendered, postgres_databases: PostgresDatabases, tmp_path: Path
) -> Iterator[Deployed]:
    """A fresh database migrated by the Job's container, then the Deployment's container."""
    host_url = postgres_databases.create()
    secrets = {("statewright-database", "url"): in_container(host_url)}

    pod, job = workload_container(rendered_base, "Job", "statewright-migrate")
    migrate = podman_run(rendered_base, pod, job, secrets=secrets, scratch=tmp_path / "job")
    result = run_to_exit(image, migrate.args, command=migrate.command)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "applied migrations" in result.stdout, result.stdout
    with psycopg.connect(host_url, connect_timeout=10) as conn:
        assert postgres_schema_version(conn) == latest_version("postgres")

    pod, server = workload_container(rendered_base, "Deployment", "statewright")
    run = podman_run(rendered_base, pod, server, secrets=secrets, scratch=tmp_path / "server")
    container = Container.start(
        image, run.args, command=run.command, publish=sorted(run.ports.values())
    )
    try:
        for probe in ("startupProbe", "readinessProbe"):
            port, service, budget = run.probe(probe)
            container.wait_health(port, service, within=budget + 30)
        yield Deployed(container, run, host_url)
    finally:
        container.remove()
        postgres_databases.drop_soon(host_url)


def test_on_postgres_migrated_by_the_job_the_deployment_runs_a_workflow(
    deployed: Deployed,
) -> None:
    container = deployed.container
    target = container.target(deployed.run.ports["grpc"])
    workflow_id = run_mail_approval(target)
    rows = read_history(deployed.database_url, workflow_id)
    assert [row.status for row in rows][-1] == "COMPLETED", rows
    assert_runs_as_the_runtime_user_on_a_read_only_root(container)
    # The metrics port of the manifest is the one the server listens on.
    metrics = container.target(deployed.run.ports["metrics"])
    with urlopen(f"http://{metrics}/metrics", timeout=10) as response:
        text = response.read().decode()
    assert "grpc_server_handled_total" in text
    # The server logs one JSON object per line, as the manifest asks.
    assert "statewrightd 0.1.0 serving on 0.0.0.0:50051" in json_messages(container.logs())


def json_messages(logs: str) -> list[str]:
    """The message of every log line; fails on a line that is not a JSON object."""
    messages = []
    for line in logs.splitlines():
        if line.strip():
            entry = json.loads(line)
            assert isinstance(entry, dict), line
            messages.append(str(entry["message"]))
    return messages


def test_on_sigterm_the_deployment_drains_and_exits_0_within_its_grace(
    deployed: Deployed,
) -> None:
    container = deployed.container
    target = container.target(deployed.run.ports["grpc"])
    with Client(target, timeout=15) as client:
        waiting = client.start("mail-approval", {"topic": "drain"}).workflow
    assert waiting.status is WorkflowStatus.WAITING

    # A watch is in flight when the signal comes: the drain must end it, not wait for it.
    ended: list[grpc.RpcError] = []
    first = threading.Event()

    def watch() -> None:
        with grpc.insecure_channel(target) as channel:
            stream = pb_grpc.WorkflowServiceStub(channel).WatchWorkflow(
                pb.WatchWorkflowRequest(name=waiting.name), timeout=120
            )
            try:
                for _ in stream:
                    first.set()
            except grpc.RpcError as err:
                ended.append(err)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    assert first.wait(15), "the watch delivered nothing"

    run = deployed.run
    assert run.pre_stop is not None
    # The kubelet runs preStop first, inside the container, and its clock is already going.
    hook_started = time.monotonic()
    hook = container.exec(*run.pre_stop)
    assert hook.returncode == 0, hook
    # podman takes whole seconds: the grace left, rounded down, is the stricter one.
    remaining = int(run.termination_grace - (time.monotonic() - hook_started))
    exit_code = container.stop(grace=remaining)
    watcher.join(30)
    logs = container.logs()
    assert exit_code == 0, logs  # 137 would mean it was still running when the grace ran out
    messages = json_messages(logs)
    assert any(m.startswith("draining: readiness NOT_SERVING") for m in messages), logs
    assert messages[-1] == "stopped", logs
    assert len(ended) == 1 and ended[0].code() is grpc.StatusCode.UNAVAILABLE, ended
    assert error_info(ended[0]).reason == "SHUTTING_DOWN"
