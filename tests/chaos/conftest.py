"""The fault suite's binary, built once per session from chaos/ (a Go module)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODULE = REPO / "chaos"


@pytest.fixture(scope="session")
def chaos_binary() -> Path:
    target = REPO / ".cache" / "chaos" / "chaos"
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}
    built = subprocess.run(
        ["go", "build", "-o", str(target), "."],
        cwd=MODULE,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return target
