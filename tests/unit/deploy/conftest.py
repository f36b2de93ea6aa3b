"""Fixtures of the deployment tests: k8s/ rendered once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.deploy.rendering import KUSTOMIZATIONS, Rendered, install_kustomize, render


@pytest.fixture(scope="session")
def kustomize() -> Path:
    return install_kustomize()


@pytest.fixture(scope="session")
def rendered(kustomize: Path) -> dict[str, Rendered]:
    return {name: render(kustomize, name) for name in KUSTOMIZATIONS}
