"""Rendering k8s/ offline, and reading the manifests it yields.

k8s/ is rendered by the pinned kustomize that ``scripts/install-kustomize`` builds into
.tools/ (once per machine; later runs only look the binary up).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[3]
K8S = REPO / "k8s"
KUSTOMIZATIONS = {
    "base": K8S / "base",
    "dev": K8S / "overlays" / "dev",
    "secure": K8S / "overlays" / "secure",
}

Manifest = dict[str, Any]


@dataclass(frozen=True)
class Rendered:
    name: str
    text: str
    manifests: list[Manifest]

    def all(self, kind: str) -> list[Manifest]:
        return [m for m in self.manifests if m["kind"] == kind]

    def one(self, kind: str, name: str | None = None) -> Manifest:
        found = [m for m in self.all(kind) if name is None or m["metadata"]["name"] == name]
        assert len(found) == 1, f"{self.name}: expected one {kind} {name or ''}, got {found}"
        return found[0]


def install_kustomize() -> Path:
    result = subprocess.run(
        [str(REPO / "scripts" / "install-kustomize")],
        capture_output=True,
        text=True,
        timeout=900,  # the first run on a machine builds it from the Go module proxy
        check=False,
    )
    assert result.returncode == 0, result.stderr
    path = Path(result.stdout.strip().splitlines()[-1])
    assert path.is_file(), path
    return path


def render(kustomize: Path, name: str) -> Rendered:
    result = subprocess.run(
        [str(kustomize), "build", str(KUSTOMIZATIONS[name])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    manifests = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    return Rendered(name, result.stdout, manifests)
