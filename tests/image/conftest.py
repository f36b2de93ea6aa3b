"""Fixtures of the image test: the image built once per session, k8s/ rendered, PostgreSQL.

Nothing here skips: a machine without podman gets it installed (scripts/podman), and a
run without the test PostgreSQL fails.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from tests.image.containers import build_image
from tests.support.databases import ENV, PostgresDatabases
from tests.unit.deploy.rendering import Rendered, install_kustomize, render


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The id of the image, built from this tree."""
    started = time.monotonic()
    image_id, log = build_image(tmp_path_factory.mktemp("image") / "iid")
    summary = [line for line in log.splitlines() if line.startswith("build-image: built")]
    print(f"\n{summary[-1] if summary else 'built'} ({time.monotonic() - started:.0f} s)")
    return image_id


@pytest.fixture(scope="session")
def rendered_base() -> Rendered:
    return render(install_kustomize(), "base")


@pytest.fixture(scope="session")
def postgres_databases() -> Iterator[PostgresDatabases]:
    url = os.environ.get(ENV)
    if not url:
        pytest.fail(
            f"{ENV} is not set: the image test runs the image against a real PostgreSQL. "
            "Run it as `scripts/with-postgres .venv/bin/pytest tests/image` (or make test).",
            pytrace=False,
        )
    databases = PostgresDatabases(url)
    yield databases
    databases.drop_all()
