"""k8s/: offline schema validation, lint, and the conventions the server depends on.

Every manifest of the base and of the rendered dev overlay must pass
``kubernetes-validate --strict`` for the oldest and newest Kubernetes we support, and
yamllint. The convention checks tie the manifests to the code: probe service names are
the ones the server registers, the environment parses with the server's own
configuration parser, grace periods are ordered, and so on.
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from statewrightd import __version__, health
from statewrightd.cli import build_parser
from statewrightd.config import (
    add_security_arguments,
    add_server_arguments,
    config_from,
    parse_listen,
)
from statewrightd.definitions.files import is_definition_file
from statewrightd.definitions.registry import DefinitionRegistry
from statewrightd.store.backends import open_repository
from tests.unit.deploy.dockerfile import runtime_user
from tests.unit.deploy.rendering import K8S, KUSTOMIZATIONS, REPO, Manifest, Rendered

KUBERNETES_VERSIONS = ["1.27", "1.32"]
EXAMPLES = REPO / "examples" / "definitions"


def example_definitions() -> list[Path]:
    """The example definitions (not the scenario files beside them)."""
    return sorted(p for p in EXAMPLES.glob("*.yaml") if is_definition_file(p))


WORKLOADS = ("Deployment", "StatefulSet", "Job")
IMAGE = "statewright/statewrightd"


def tool(name: str) -> str:
    """A console script of this virtual environment (the test command's own tools)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    assert found, f"{name} is not installed: pip install it into the virtual environment"
    return found


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def pod_spec(workload: Manifest) -> dict[str, Any]:
    spec: dict[str, Any] = workload["spec"]["template"]["spec"]
    return spec


def containers(rendered: Rendered) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(workload name, pod spec, container) for every container of every workload."""
    return [
        (f"{w['kind']}/{w['metadata']['name']}", pod_spec(w), c)
        for kind in WORKLOADS
        for w in rendered.all(kind)
        for c in pod_spec(w)["containers"]
    ]


def server_container(rendered: Rendered) -> dict[str, Any]:
    (container,) = pod_spec(rendered.one("Deployment", "statewright"))["containers"]
    assert isinstance(container, dict)
    return container


def literal_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


# -- validation ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_every_manifest_passes_strict_schema_validation(
    rendered: dict[str, Rendered], name: str, version: str, tmp_path: Path
) -> None:
    target = tmp_path / f"{name}.yaml"
    target.write_text(rendered[name].text, encoding="utf-8")
    result = run(tool("kubernetes-validate"), "--strict", "--quiet", "-k", version, str(target))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ERROR" not in result.stdout + result.stderr


def test_the_schema_validation_rejects_an_unknown_field(
    rendered: dict[str, Rendered], tmp_path: Path
) -> None:
    # A control: the check above would be worthless if --strict let a typo through.
    deployment = rendered["base"].one("Deployment")
    pod_spec(deployment)["terminationGracePeriod"] = 30  # misspelt field
    target = tmp_path / "typo.yaml"
    target.write_text(yaml.safe_dump(deployment), encoding="utf-8")
    result = run(tool("kubernetes-validate"), "--strict", "--quiet", "-k", "1.32", str(target))
    assert result.returncode != 0
    assert "terminationGracePeriod" in result.stdout + result.stderr


def test_sources_pass_yamllint() -> None:
    result = run(tool("yamllint"), "--strict", "-c", str(K8S / ".yamllint"), str(K8S))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_rendered_output_passes_yamllint(rendered: dict[str, Rendered], name: str) -> None:
    result = run(
        tool("yamllint"), "--strict", "-c", str(K8S / ".yamllint"), "-", stdin=rendered[name].text
    )
    assert result.returncode == 0, result.stdout + result.stderr


# -- conventions -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_probes_ask_the_health_services_the_server_registers(
    rendered: dict[str, Rendered], name: str
) -> None:
    container = server_container(rendered[name])
    grpc_ports = [p["containerPort"] for p in container["ports"] if p["name"] == "grpc"]
    assert len(grpc_ports) == 1
    env = literal_env(container)
    _, listen_port = parse_listen(env["STATEWRIGHT_LISTEN"])
    assert grpc_ports == [listen_port]
    # Probes go to the plaintext health port: the API port may require TLS and tokens.
    _, health_port = parse_listen(env["STATEWRIGHT_HEALTH_LISTEN"])
    assert [p["containerPort"] for p in container["ports"] if p["name"] == "health"] == [
        health_port
    ]
    expected = {
        "livenessProbe": health.LIVENESS,
        "readinessProbe": health.READINESS,
        "startupProbe": health.LIVENESS,
    }
    for probe_name, service in expected.items():
        probe = container[probe_name]
        assert set(probe) & {"grpc", "httpGet", "exec", "tcpSocket"} == {"grpc"}, probe_name
        port = probe["grpc"]["port"]
        # Named ports are not allowed in gRPC probes: it must be the literal number.
        assert isinstance(port, int) and not isinstance(port, bool), probe_name
        assert port == health_port, probe_name
        assert probe["grpc"]["service"] == service, probe_name
        assert probe["grpc"]["service"] in health.SERVICES
    # The startup probe, not an initial delay, covers a slow start.
    assert "initialDelaySeconds" not in container["livenessProbe"]


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_the_environment_parses_with_the_server_configuration(
    rendered: dict[str, Rendered], name: str, tmp_path: Path
) -> None:
    container = server_container(rendered[name])
    env = literal_env(container)
    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    add_security_arguments(parser)
    # The files mounted from Secrets exist only in the pod: stand-ins of the same names.
    mounted: dict[str, str] = {}
    for var in (
        "STATEWRIGHT_SERVER_TLS_CERT",
        "STATEWRIGHT_SERVER_TLS_KEY",
        "STATEWRIGHT_AUTH_CONFIG",
    ):
        if var in env:
            stand_in = tmp_path / var
            stand_in.write_text("")
            mounted[var] = str(stand_in)
    # The URL itself comes from the Secret; a placeholder of the right scheme stands in.
    config = config_from(
        parser.parse_args([]),
        env={**env, **mounted, "STATEWRIGHT_DATABASE_URL": "postgresql://x@h/db"},
    )
    assert config.listen.startswith("0.0.0.0:")  # reachable from the kubelet and Service
    assert config.log_format == "json"
    assert config.metrics_listen is not None
    _, metrics_port = parse_listen(config.metrics_listen)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == metrics_port
    annotations = rendered[name].one("Deployment")["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(metrics_port)
    volume_paths = {m["mountPath"] for m in container["volumeMounts"]}
    assert str(config.definitions_dir) in volume_paths
    # Debug hooks must never reach a deployment.
    assert not any(k.startswith("STATEWRIGHT_DEBUG") for k in env)


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_termination_grace_outlasts_pre_stop_and_drain(
    rendered: dict[str, Rendered], name: str
) -> None:
    deployment = rendered[name].one("Deployment")
    container = server_container(rendered[name])
    grace = float(literal_env(container)["STATEWRIGHT_GRACE"])
    command = container["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "sleep" and len(command) == 2
    pre_stop = float(command[1])
    assert pre_stop > 0  # endpoints are removed while the pod still serves
    termination = pod_spec(deployment)["terminationGracePeriodSeconds"]
    # The kubelet's clock starts with preStop; the drain begins only after it.
    assert termination > pre_stop + grace, (termination, pre_stop, grace)


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_every_container_has_requests_limits_and_a_locked_down_security_context(
    rendered: dict[str, Rendered], name: str
) -> None:
    found = containers(rendered[name])
    assert {w.split("/")[0] for w, _, _ in found} >= {"Deployment", "Job"}
    for workload, pod, container in found:
        where = f"{name}: {workload}/{container['name']}"
        resources = container["resources"]
        for part in ("requests", "limits"):
            assert set(resources[part]) >= {"cpu", "memory"}, where
        assert pod["securityContext"]["runAsNonRoot"] is True, where
        assert pod["automountServiceAccountToken"] is False, where
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, where
        assert security["allowPrivilegeEscalation"] is False, where
        assert security["runAsNonRoot"] is True, where
        assert security["capabilities"]["drop"] == ["ALL"], where
        assert "add" not in security["capabilities"], where


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_server_and_migration_run_the_image_of_this_version_as_its_user(
    rendered: dict[str, Rendered], name: str
) -> None:
    deployment = rendered[name].one("Deployment")
    job = rendered[name].one("Job")
    assert deployment["spec"]["replicas"] == 2
    for workload in (deployment, job):
        (container,) = pod_spec(workload)["containers"]
        assert container["image"] == f"{IMAGE}:{__version__}"
        assert pod_spec(workload)["securityContext"]["runAsUser"] == runtime_user()
        assert pod_spec(workload)["serviceAccountName"] == "statewright"
        env = {e["name"]: e for e in container["env"]}
        # The database URL (it holds a password) only ever comes from a Secret.
        ref = env["STATEWRIGHT_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
        assert ref["name"].startswith("statewright-database") and ref["key"] == "url"
    (migrate,) = pod_spec(job)["containers"]
    assert migrate["command"] == ["statewrightd", "migrate"]
    assert build_parser().parse_args(migrate["command"][1:]).command == "migrate"
    assert pod_spec(job)["restartPolicy"] == "Never"
    rendered[name].one("ServiceAccount", "statewright")


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_service_and_disruption_budget_select_the_server_pods(
    rendered: dict[str, Rendered], name: str
) -> None:
    deployment = rendered[name].one("Deployment")
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    service = rendered[name].one("Service", "statewright")
    assert service["spec"]["selector"].items() <= pod_labels.items()
    ports = {p["name"] for p in server_container(rendered[name])["ports"]}
    for port in service["spec"]["ports"]:
        assert port["targetPort"] in ports
    grpc_port = next(p for p in service["spec"]["ports"] if p["name"] == "grpc")
    assert grpc_port["appProtocol"] == "grpc"
    budget = rendered[name].one("PodDisruptionBudget")
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    # A budget that allows no disruption at all would block every node drain.
    assert 0 < budget["spec"]["minAvailable"] < deployment["spec"]["replicas"]


@pytest.mark.parametrize("name", list(KUSTOMIZATIONS))
def test_definitions_config_map_holds_exactly_the_examples(
    rendered: dict[str, Rendered], name: str
) -> None:
    config_map = next(
        m
        for m in rendered[name].all("ConfigMap")
        if m["metadata"]["name"].startswith("statewright-definitions")
    )
    examples = {p.name: p.read_text(encoding="utf-8") for p in example_definitions()}
    assert config_map["data"] == examples, "k8s/base/definitions drifted from examples/"
    volumes = {v["name"]: v for v in pod_spec(rendered[name].one("Deployment"))["volumes"]}
    assert volumes["definitions"]["configMap"]["name"] == config_map["metadata"]["name"]


def test_definition_copies_are_identical_to_the_examples() -> None:
    copies = {p.name: p.read_bytes() for p in (K8S / "base" / "definitions").iterdir()}
    examples = {p.name: p.read_bytes() for p in example_definitions()}
    assert copies == examples, "copy examples/definitions/*.yaml to k8s/base/definitions/"


def test_the_mounted_config_map_loads_as_the_definitions_directory(
    rendered: dict[str, Rendered], tmp_path: Path
) -> None:
    # The kubelet mounts a ConfigMap as symlinks into a hidden, timestamped directory:
    #   name.yaml -> ..data/name.yaml,  ..data -> ..2024_01_01_00_00_00.1, ...
    config_map = next(
        m
        for m in rendered["base"].all("ConfigMap")
        if m["metadata"]["name"].startswith("statewright-definitions")
    )
    mount = tmp_path / "definitions"
    payload = mount / "..2024_01_01_00_00_00.000000001"
    payload.mkdir(parents=True)
    for file, text in config_map["data"].items():
        (payload / file).write_text(text, encoding="utf-8")
        os.symlink(f"..data/{file}", mount / file)
    os.symlink(payload.name, mount / "..data")
    repo = open_repository(f"sqlite:///{tmp_path / 'statewright.db'}")
    try:
        loaded = DefinitionRegistry(repo).load_directory(mount).loaded
    finally:
        repo.close()
    assert sorted(item.definition.name for item in loaded) == sorted(
        Path(file).stem for file in config_map["data"]
    )


def test_dev_overlay_runs_one_postgres_with_a_volume_and_points_the_server_at_it(
    rendered: dict[str, Rendered],
) -> None:
    dev = rendered["dev"]
    statefulset = dev.one("StatefulSet")
    assert statefulset["spec"]["replicas"] == 1
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    (postgres,) = pod_spec(statefulset)["containers"]
    assert claim["metadata"]["name"] in {m["name"] for m in postgres["volumeMounts"]}
    service = dev.one("Service", statefulset["spec"]["serviceName"])
    assert service["spec"]["selector"].items() <= (
        statefulset["spec"]["template"]["metadata"]["labels"].items()
    )
    # The generated Secret the server reads is the one its reference was rewritten to.
    env = {e["name"]: e for e in server_container(dev)["env"]}
    ref = env["STATEWRIGHT_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    secret = dev.one("Secret", ref["name"])
    url = urlsplit(_secret_value(secret, "url"))
    assert url.scheme == "postgresql"
    assert url.hostname == service["metadata"]["name"]
    assert url.port == service["spec"]["ports"][0]["port"]
    credentials = dev.one("Secret", postgres["envFrom"][0]["secretRef"]["name"])
    assert url.username == _secret_value(credentials, "POSTGRES_USER")
    assert url.password == _secret_value(credentials, "POSTGRES_PASSWORD")
    assert url.path.lstrip("/") == _secret_value(credentials, "POSTGRES_DB")
    # Everything lands in the overlay's namespace.
    namespace = dev.one("Namespace")["metadata"]["name"]
    assert all(
        m["metadata"].get("namespace") == namespace
        for m in dev.manifests
        if m["kind"] != "Namespace"
    )


def _secret_value(secret: Manifest, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


def test_the_secure_overlay_mounts_tls_and_auth_from_secrets_and_fences_the_api(
    rendered: dict[str, Rendered],
) -> None:
    secure = rendered["secure"]
    container = server_container(secure)
    env = literal_env(container)
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for var in (
        "STATEWRIGHT_SERVER_TLS_CERT",
        "STATEWRIGHT_SERVER_TLS_KEY",
        "STATEWRIGHT_AUTH_CONFIG",
    ):
        directory = str(Path(env[var]).parent)
        assert directory in mounts, var
        # A subPath mount is never updated in place: a renewed certificate would not show.
        assert "subPath" not in mounts[directory] and mounts[directory]["readOnly"], var
    volumes = {v["name"]: v for v in pod_spec(secure.one("Deployment"))["volumes"]}
    assert volumes[mounts["/etc/statewright/tls"]["name"]]["secret"]["secretName"] == (
        "statewright-tls"
    )
    auth_secret = volumes[mounts["/etc/statewright/auth"]["name"]]["secret"]["secretName"]
    (generated,) = [s for s in secure.all("Secret") if s["metadata"]["name"] == auth_secret]
    auth_text = base64.b64decode(generated["data"]["auth.yaml"]).decode()
    from statewrightd.security.auth_config import parse_auth_config

    assert parse_auth_config(auth_text).api_keys  # the server would accept it at start
    policy = secure.one("NetworkPolicy")
    api = [rule for rule in policy["spec"]["ingress"] if rule["ports"][0]["port"] == 50051]
    assert api and api[0]["from"][0]["podSelector"]["matchLabels"] == {
        "statewright.dev/client": "true"
    }
    certificate = yaml.safe_load((K8S / "overlays" / "secure" / "certificate.yaml").read_text())
    assert certificate["spec"]["secretName"] == "statewright-tls"
