"""A new user's first `make dev` and `make test`: the prerequisites checked at once, one
line each; every phase named and timed as it ends; the install saying what it does; and the
Python client's editable install free of setuptools' warning."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from tests.support.deployment import REPO

SCRIPTS = REPO / "scripts"
# What the scripts run besides the tools they check.
SHELL_TOOLS = ("bash", "env", "id", "sort", "head", "grep", "awk", "sed", "date", "dirname", "cat")


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _bare_path(tmp_path: Path) -> Path:
    """A PATH directory with the shell's own tools and nothing else."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in SHELL_TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return bin_dir


def _check(bin_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": str(bin_dir),
        "PYTHON": sys.executable,
        "PGBIN": str(tmp_path / "no-postgres"),
        "STATEWRIGHT_CHROMIUM": str(tmp_path / "no-chromium"),
        "STATEWRIGHT_CHROMEDRIVER": str(tmp_path / "no-chromedriver"),
    }
    return subprocess.run(
        [str(SCRIPTS / "check-prerequisites")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_missing_or_old_tool_gets_one_line_saying_how_to_install_it(tmp_path: Path) -> None:
    bin_dir = _bare_path(tmp_path)
    _fake(bin_dir, "go", "echo go1.21.0")  # older than clients/go/go.mod asks
    _fake(bin_dir, "node", "echo v18.19.1")
    _fake(bin_dir, "npm", "echo 9.2.0")
    _fake(bin_dir, "javac", "echo javac 11.0.22 >&2")
    # No mvn, no psql, no podman, no apt-get: nothing can be installed for the user.
    done = _check(bin_dir, tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "make test: checking prerequisites"
    missing = {
        line.split(":")[0].split("MISSING")[1].strip(): line for line in lines if "MISSING" in line
    }
    assert set(missing) == {
        "Go 1.26.0 or newer",
        "Node.js 20 or newer",
        "JDK (javac) 17 or newer",
        "Maven 3.6.3 or newer",
        "PostgreSQL 15 server binaries",
        "psql",
        "Chromium and its driver",
        "podman (the image test)",
        *(("runuser (PostgreSQL runs as the postgres user)",) if os.getuid() == 0 else ()),
        *(("useradd (PostgreSQL runs as the postgres user)",) if os.getuid() == 0 else ()),
    }
    assert "found 1.21.0" in missing["Go 1.26.0 or newer"]
    assert "found 18.19.1" in missing["Node.js 20 or newer"]
    assert "found 11.0.22" in missing["JDK (javac) 17 or newer"]
    assert "apt-get install -y maven" in missing["Maven 3.6.3 or newer"]
    assert "apt-get install -y postgresql-15" in missing["PostgreSQL 15 server binaries"]
    assert "apt-get install -y chromium chromium-driver" in missing["Chromium and its driver"]
    for line in missing.values():
        assert "install" in line, line  # each says how
    assert re.search(r"^  ok       Python 3\.\d+\.\d+ ", done.stdout, re.M)
    assert re.search(r"^  ok       npm 9\.2\.0 ", done.stdout, re.M)
    assert "prerequisite(s) missing" in done.stderr


def test_tools_that_make_test_installs_as_root_count_as_present(tmp_path: Path) -> None:
    bin_dir = _bare_path(tmp_path)
    _fake(bin_dir, "id", "echo 0")
    for tool in ("apt-get", "runuser", "useradd"):
        _fake(bin_dir, tool, "exit 0")
    done = _check(bin_dir, tmp_path)
    for what in ("PostgreSQL 15 server binaries", "psql", "Chromium and chromium-driver", "podman"):
        assert re.search(
            rf"^  ok       {re.escape(what)}.*installed .*by make test", done.stdout, re.M
        ), what


def test_this_machine_has_what_make_test_needs(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPTS / "check-prerequisites")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MISSING" not in done.stdout
    assert len([line for line in done.stdout.splitlines() if line.startswith("  ok ")]) >= 10


def test_make_test_checks_the_prerequisites_before_it_installs_anything() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    target = re.search(r"^test:(.*)\n((?:\t.*\n)+)", makefile, re.M)
    assert target is not None
    assert target.group(1).strip() == "", "no prerequisite (the install) runs before the check"
    recipe = target.group(2)
    assert recipe.splitlines()[0].strip() == "@scripts/check-prerequisites"
    for phase in ("install", "buf lint", "ruff", "mypy"):
        assert f'$(PHASE) "{phase}"' in recipe or f"$(PHASE) {phase} " in recipe, phase
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for tool in ("Go", "Node.js", "JDK", "Maven", "PostgreSQL", "Chromium", "podman"):
        assert re.search(rf"^\| {re.escape(tool)}", readme, re.M), tool
    assert "scripts/check-prerequisites" in readme


def test_a_phase_says_its_name_outcome_and_duration_as_it_ends(tmp_path: Path) -> None:
    record = tmp_path / "phases"
    env = {**os.environ, "STATEWRIGHT_PHASES": str(record)}
    passed = subprocess.run(
        [str(SCRIPTS / "phase"), "ruff", "true"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    failed = subprocess.run(
        [str(SCRIPTS / "phase"), "mypy", "sh", "-c", "echo checking; exit 3"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert passed.returncode == 0 and failed.returncode == 3
    assert re.fullmatch(r"== ruff: passed in \d+s\n", passed.stdout)
    assert re.fullmatch(r"checking\n== mypy: FAILED \(exit 3\) after \d+s\n", failed.stdout)
    summary = subprocess.run(
        [str(SCRIPTS / "phase"), "--summary", str(record)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert summary[0] == "== phases of this run:"
    assert [line.split(":")[0].strip() for line in summary[1:]] == ["ruff", "mypy"]


def test_the_install_says_what_it_is_doing(tmp_path: Path) -> None:
    # A stand-in interpreter whose venv's pip prints what pip prints: the script's own
    # lines are what a user sees during the minutes of a first install.
    bin_dir = _bare_path(tmp_path)
    venv = tmp_path / "venv"
    pip = "\n".join(
        [
            'if [ "$2" = "--quiet" ]; then exit 0; fi',
            'for i in $(seq 1 45); do echo "Collecting package$i==1.0"; done',
            "echo 'Installing collected packages: a, b, c'",
            "echo 'Successfully installed a-1 b-1 c-1'",
            "echo 'WARNING: something pip wants said' >&2",
        ]
    )
    venv_maker = (
        f"mkdir -p {venv}/bin && cp {bin_dir}/fake-pip {venv}/bin/pip"
        f" && ln -s {sys.executable} {venv}/bin/python"
    )
    _fake(bin_dir, "fake-pip", pip)
    _fake(
        bin_dir,
        "fake-python",
        f'case "$1" in -c) exit 0;; --version) echo "Python 3.11.9";; -m) {venv_maker};; esac',
    )
    (bin_dir / "seq").symlink_to(shutil.which("seq") or "/usr/bin/seq")
    (bin_dir / "mkdir").symlink_to(shutil.which("mkdir") or "/bin/mkdir")
    (bin_dir / "cp").symlink_to(shutil.which("cp") or "/bin/cp")
    (bin_dir / "ln").symlink_to(shutil.which("ln") or "/bin/ln")
    done = subprocess.run(
        [str(SCRIPTS / "install-venv")],
        env={"PATH": str(bin_dir), "PYTHON": "fake-python", "VENV": str(venv)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        lines[0]
        == f"install: creating the virtual environment {venv} with fake-python (Python 3.11.9)"
    )
    assert "install:   20 packages found" in lines and "install:   40 packages found" in lines
    assert "install:   installing 3 new or changed package(s)" in lines
    assert "install:   3 package(s) installed" in lines
    assert re.fullmatch(
        rf"install: done in 0m \d+s: {venv}/bin has statewrightd and statewright", lines[-1]
    )
    assert "WARNING: something pip wants said" in done.stderr, "pip's warnings pass through"


def test_the_python_clients_editable_install_warns_of_nothing(tmp_path: Path) -> None:
    source = tmp_path / "python"
    shutil.copytree(
        REPO / "clients/python",
        source,
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
    )
    out = tmp_path / "out"
    out.mkdir()
    build = "from setuptools import build_meta; import sys; build_meta.build_editable(sys.argv[1])"
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", build, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "Warning" not in said and "careful" not in said, said[-3000:]
    (wheel,) = out.glob("statewright-*.whl")
    assert wheel.name.startswith("statewright-0")
