"""End-to-end fixtures: real server processes against the databases the test command starts."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "definitions"


def postgres_url() -> str:
    url = os.environ.get("STATEWRIGHT_TEST_POSTGRES_URL")
    if not url:
        raise RuntimeError(
            "STATEWRIGHT_TEST_POSTGRES_URL is not set: run the tests with `make test`, which "
            "starts a private PostgreSQL (scripts/with-postgres)"
        )
    return url


@pytest.fixture(params=["postgresql", "sqlite"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'statewright.db'}"
    else:
        yield postgres_url()
