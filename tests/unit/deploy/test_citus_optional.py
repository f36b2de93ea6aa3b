"""`make test` on a machine without Citus: the Citus suites are skipped and the run says so,
while a Citus source named in STATEWRIGHT_CITUS_SOURCE stays required."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support.deployment import REPO

SCRIPTS = REPO / "scripts"


def _pgbin_without_citus(tmp_path: Path) -> Path:
    """A PostgreSQL bin directory whose lib/ has no citus.so."""
    pgbin = tmp_path / "pg" / "bin"
    pgbin.mkdir(parents=True)
    (tmp_path / "pg" / "lib").mkdir()
    postgres = pgbin / "postgres"
    postgres.write_text("#!/bin/sh\necho 'postgres (PostgreSQL) 15.99'\n", encoding="utf-8")
    postgres.chmod(0o755)
    return pgbin


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STATEWRIGHT_", "PYTEST_"))}
    env.update(PGBIN=str(_pgbin_without_citus(tmp_path)), STATEWRIGHT_CACHE=str(tmp_path / "c"))
    env.update(extra)
    return env


def test_without_citus_the_suites_run_with_the_citus_tests_deselected(tmp_path: Path) -> None:
    phases = tmp_path / "phases"
    phases.write_text("", encoding="utf-8")
    done = subprocess.run(
        [str(SCRIPTS / "with-citus"), "--optional", "sh", "-c", 'echo "$PYTEST_ADDOPTS"; exit 7'],
        env=_env(tmp_path, STATEWRIGHT_PHASES=str(phases)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 7, done.stderr  # the command's own status
    assert done.stdout.strip() == "-m 'not citus'"
    assert "citus suites: SKIPPED" in done.stderr
    assert phases.read_text(encoding="utf-8").startswith("== citus suites: SKIPPED")


def test_a_named_source_that_is_missing_fails_even_when_optional(tmp_path: Path) -> None:
    missing = tmp_path / "citus-13.2.2.tar.gz"
    done = subprocess.run(
        [str(SCRIPTS / "install-citus"), "--optional"],
        env=_env(tmp_path, STATEWRIGHT_CITUS_SOURCE=str(missing)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert f"STATEWRIGHT_CITUS_SOURCE={missing}: no such file" in done.stderr
