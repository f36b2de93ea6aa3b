"""A container of a rendered k8s/ workload, turned into the podman run that starts it alike.

Command and arguments, environment, ports, user and groups, the read-only root
filesystem, capabilities, privilege escalation, resource limits and the volumes come
from the manifest. Every field is either applied, or named here with the reason it does
not apply to one container on one machine; a field this module does not know fails the
translation, so a manifest cannot grow a setting the image test silently ignores.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.unit.deploy.rendering import Manifest, Rendered

# Pod-level fields that decide where and under which identity a pod runs in a cluster,
# not what its container does.
POD_FIELDS_NOT_APPLICABLE = {
    "serviceAccountName",  # no API server here
    "automountServiceAccountToken",  # ditto: no token to mount
    "topologySpreadConstraints",  # one machine
    "restartPolicy",  # the test decides whether a container should have exited
}
# Container fields the test applies itself rather than podman.
CONTAINER_FIELDS_BY_THE_TEST = {
    "name",  # a prefix of the container's name
    "image",  # the test runs the image it built, by id (see expected_image)
    "imagePullPolicy",  # nothing to pull: the image is local
    "startupProbe",  # the test polls the probes (probe())
    "livenessProbe",
    "readinessProbe",
    "lifecycle",  # preStop runs through podman exec (pre_stop())
}

POD_FIELDS = {"containers", "securityContext", "volumes", "terminationGracePeriodSeconds"}
CONTAINER_FIELDS = {
    "command",
    "args",
    "env",
    "ports",
    "resources",
    "securityContext",
    "volumeMounts",
}
POD_SECURITY = {"runAsNonRoot", "runAsUser", "runAsGroup", "fsGroup", "seccompProfile"}
CONTAINER_SECURITY = {
    "allowPrivilegeEscalation",
    "readOnlyRootFilesystem",
    "runAsNonRoot",
    "runAsUser",
    "runAsGroup",
    "capabilities",
}
PROBE_FIELDS = {
    "grpc",
    "periodSeconds",
    "timeoutSeconds",
    "failureThreshold",
    "successThreshold",
    "initialDelaySeconds",
}


@dataclass(frozen=True)
class PodmanRun:
    """What `podman run` needs besides the network; ``ports``: container port by name."""

    args: list[str]
    command: list[str]
    ports: dict[str, int]
    termination_grace: float
    pre_stop: list[str] | None
    container: dict[str, Any]

    def probe(self, name: str) -> tuple[int, str, float]:
        """(port, health service, seconds it may take to pass) of a gRPC probe."""
        probe = self.container[name]
        unknown = set(probe) - PROBE_FIELDS
        assert not unknown, f"{name}: the image test does not apply {sorted(unknown)}"
        # Kubernetes' defaults: every 10 s, failed after 3 failures.
        period, failures = probe.get("periodSeconds", 10), probe.get("failureThreshold", 3)
        budget = probe.get("initialDelaySeconds", 0) + period * failures
        return probe["grpc"]["port"], probe["grpc"].get("service", ""), float(budget)


def workload_container(
    rendered: Rendered, kind: str, name: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(pod spec, its one container) of a workload."""
    workload = rendered.one(kind, name)
    pod: dict[str, Any] = workload["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return pod, container


def podman_run(
    rendered: Rendered,
    pod: Mapping[str, Any],
    container: Mapping[str, Any],
    *,
    secrets: Mapping[tuple[str, str], str],
    scratch: Path,
) -> PodmanRun:
    """Translate one container; ``secrets`` stands in for Secrets: (name, key) -> value.

    ``scratch`` is an empty directory for what the kubelet would materialise (ConfigMaps).
    """
    unknown_pod = set(pod) - POD_FIELDS_NOT_APPLICABLE - POD_FIELDS
    assert not unknown_pod, f"the image test does not apply pod fields {sorted(unknown_pod)}"
    unknown = set(container) - CONTAINER_FIELDS_BY_THE_TEST - CONTAINER_FIELDS
    assert not unknown, f"the image test does not apply container fields {sorted(unknown)}"

    args: list[str] = []
    command: list[str] = []
    if "command" in container:
        # Kubernetes' command replaces the image's ENTRYPOINT, and its CMD with it.
        args.append("--entrypoint=" + json.dumps(container["command"]))
    command.extend(container.get("args", []))

    for variable in container.get("env", []):
        args.append(f"--env={variable['name']}={_env_value(variable, secrets)}")

    ports: dict[str, int] = {}
    for port in container.get("ports", []):
        assert set(port) <= {"name", "containerPort", "protocol"}, port
        assert port.get("protocol", "TCP") == "TCP", port
        ports[port.get("name", str(port["containerPort"]))] = port["containerPort"]

    args.extend(_security(pod.get("securityContext", {}), container.get("securityContext", {})))
    args.extend(_resources(container.get("resources", {})))
    args.extend(_volumes(rendered, pod, container, scratch))

    lifecycle = container.get("lifecycle", {})
    assert set(lifecycle) <= {"preStop"}, f"the image test does not apply {sorted(lifecycle)}"
    pre_stop = None
    if "preStop" in lifecycle:
        assert set(lifecycle["preStop"]) == {"exec"}, lifecycle
        pre_stop = list(lifecycle["preStop"]["exec"]["command"])
    return PodmanRun(
        args=args,
        command=command,
        ports=ports,
        termination_grace=float(pod.get("terminationGracePeriodSeconds", 30)),
        pre_stop=pre_stop,
        container=dict(container),
    )


def _env_value(variable: Mapping[str, Any], secrets: Mapping[tuple[str, str], str]) -> str:
    if "value" in variable:
        return str(variable["value"])
    source = variable["valueFrom"]
    assert set(source) == {"secretKeyRef"}, f"the image test does not apply {source}"
    ref = source["secretKeyRef"]
    key = (ref["name"], ref["key"])
    assert key in secrets, f"{variable['name']} reads Secret {key}, which the test does not provide"
    return secrets[key]


def _security(pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[str]:
    unknown_pod = set(pod) - POD_SECURITY
    assert not unknown_pod, f"the image test does not apply pod securityContext {unknown_pod}"
    unknown = set(container) - CONTAINER_SECURITY
    assert not unknown, f"the image test does not apply securityContext {sorted(unknown)}"
    merged = {**pod, **container}  # a container's own setting wins, as in Kubernetes
    args: list[str] = []
    user = merged.get("runAsUser")
    if user is not None:
        group = merged.get("runAsGroup")
        args.append(f"--user={user}" + (f":{group}" if group is not None else ""))
    if merged.get("runAsNonRoot"):
        # The kubelet refuses to start a container whose user is not a non-zero number;
        # the test checks the image's own USER the same way (see test_image.py).
        assert user is None or int(user) != 0, merged
    if "fsGroup" in pod:
        args.append(f"--group-add={pod['fsGroup']}")
    seccomp = pod.get("seccompProfile", {"type": "RuntimeDefault"})
    # podman applies its default seccomp profile unless told otherwise: RuntimeDefault.
    assert seccomp == {"type": "RuntimeDefault"}, seccomp
    if container.get("readOnlyRootFilesystem"):
        # No tmpfs podman would add on its own (/tmp, /run, ...): only declared volumes write.
        args += ["--read-only", "--read-only-tmpfs=false"]
    if container.get("allowPrivilegeEscalation") is False:
        args.append("--security-opt=no-new-privileges")
    capabilities = container.get("capabilities", {})
    assert set(capabilities) <= {"drop", "add"}, capabilities
    args += [f"--cap-drop={c.lower()}" for c in capabilities.get("drop", [])]
    args += [f"--cap-add={c.lower()}" for c in capabilities.get("add", [])]
    return args


def _resources(resources: Mapping[str, Any]) -> list[str]:
    assert set(resources) <= {"requests", "limits"}, resources
    # Requests are for the scheduler; limits are what the container lives within.
    limits = resources.get("limits", {})
    assert set(limits) <= {"cpu", "memory"}, limits
    args = []
    if "memory" in limits:
        args.append(f"--memory={_bytes(limits['memory'])}")
    if "cpu" in limits:
        args.append(f"--cpus={_cpus(limits['cpu'])}")
    return args


def _bytes(quantity: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 10**3, "M": 10**6, "G": 10**9}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * factor)
    return int(quantity)


def _cpus(quantity: str | int | float) -> float:
    text = str(quantity)
    return int(text[:-1]) / 1000 if text.endswith("m") else float(text)


def _volumes(
    rendered: Rendered, pod: Mapping[str, Any], container: Mapping[str, Any], scratch: Path
) -> list[str]:
    # Podman would make the image's own VOLUMEs writable; Kubernetes promises nothing of
    # the kind, so every path the server writes must be mounted by the manifest.
    args = ["--image-volume=ignore"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        assert set(mount) <= {"name", "mountPath", "readOnly"}, mount
        assert mount["name"] in volumes, f"{mount} names no volume of the pod"
        volume = volumes[mount["name"]]
        source = set(volume) - {"name"}
        read_only = bool(mount.get("readOnly", False))
        if source == {"configMap"}:
            directory = _config_map(rendered, volume["configMap"], scratch / mount["name"])
            # The kubelet mounts ConfigMaps read-only, whatever the mount says.
            args.append(f"--mount=type=bind,source={directory},destination={mount['mountPath']},ro")
        elif source == {"emptyDir"}:
            assert not read_only, mount
            empty = volume["emptyDir"] or {}
            assert set(empty) <= {"sizeLimit"}, empty
            size = f",tmpfs-size={_bytes(empty['sizeLimit'])}" if "sizeLimit" in empty else ""
            # The kubelet makes an emptyDir world-writable; a tmpfs of mode 1777 is that.
            args.append(
                f"--mount=type=tmpfs,destination={mount['mountPath']},tmpfs-mode=1777{size}"
            )
        else:
            raise AssertionError(f"the image test does not apply volume {volume}")
    return args


def _config_map(rendered: Rendered, ref: Mapping[str, Any], directory: Path) -> Path:
    assert set(ref) <= {"name"}, f"the image test does not apply configMap {ref}"
    config_map: Manifest = rendered.one("ConfigMap", ref["name"])
    assert set(config_map) - {"apiVersion", "kind", "metadata"} == {"data"}, config_map
    directory.mkdir(parents=True)
    for file, text in config_map["data"].items():
        (directory / file).write_text(text, encoding="utf-8")
    directory.chmod(0o755)
    return directory
