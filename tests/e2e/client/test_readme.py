"""The client README's examples run as written against a real server: one over mTLS that
wants a token, reached through the variables the README names, as a secured deployment
runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.client.secured import Secured, secured_server

README = Path(__file__).resolve().parents[3] / "clients" / "python" / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


@pytest.fixture(scope="module")
def secured(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Secured]:
    with secured_server(tmp_path_factory.mktemp("readme"), module_database_url) as server:
        yield server


@pytest.fixture
def workdir(secured: Secured, tmp_path: Path) -> Path:
    """The files the Security example names, in the directory it runs in."""
    (tmp_path / "ca.pem").write_bytes(secured.ca.pem())
    (tmp_path / "client.pem").write_bytes(secured.worker.cert.read_bytes())
    (tmp_path / "client.key").write_bytes(secured.worker.key.read_bytes())
    (tmp_path / "token.txt").write_text(secured.keys["admin"] + "\n")
    return tmp_path


def _env(secured: Secured) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("STATEWRIGHT_")}
    return {
        **inherited,
        **secured.environ(),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }


def test_python_examples_run(secured: Secured, workdir: Path) -> None:
    # The Workers examples run until interrupted: clients/python/tests/test_worker.py runs them;
    # the Testing example is a pytest module, run by the test below.
    blocks = [b for b in _blocks("python") if "Worker(" not in b and "statewright.testing" not in b]
    assert len(blocks) == 7
    outputs = []
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block],
            env=_env(secured),
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.splitlines())
    sync_out, async_out, execute_out, start_forms_out, schedule_out, batch_out, security_out = (
        outputs
    )
    assert sync_out[0].endswith("WAITING awaiting_approval")
    assert sync_out[1] == "stale: the server is at revision 1"
    assert sync_out[2] == "COMPLETED 2 True"
    assert async_out == ["CURRENT 1 WAITING", "STEP 2 COMPLETED"]
    assert execute_out == ["WAITING awaiting_approval", "still WAITING"]
    assert schedule_out == ["True", "True 1 0"]
    assert batch_out == ["True 2", "True 2 0", "CANCELLED"]
    assert security_out == ["WAITING"]
    assert start_forms_out == ["True True improving", "False 2", "WAITING START_DELAYED"]


def test_the_testing_example_passes_as_a_pytest_module(tmp_path: Path) -> None:
    (block,) = [b for b in _blocks("python") if "statewright.testing" in b]
    module = tmp_path / "test_readme_scenarios.py"
    module.write_text(block, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(module)],
        cwd=README.parents[2],  # the example names examples/definitions from the checkout
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b(\d+) passed\b", done.stdout), done.stdout


def test_the_security_example_needs_its_files(secured: Secured, workdir: Path) -> None:
    (block,) = [b for b in _blocks("python") if "AccessToken" in b]
    (workdir / "client.key").unlink()
    done = subprocess.run(
        [sys.executable, "-c", block],
        env=_env(secured),
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "ValueError: tls_key: cannot read client.key" in done.stderr


def test_command_line_example_runs(secured: Secured) -> None:
    (block,) = [b for b in _blocks("sh") if "statewright start" in b]
    # The first four commands form the start/resume/get/history example; the rest need
    # other ids.
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    commands = [line for line in lines if line.startswith("statewright ")][:4]
    outputs = [
        subprocess.run(
            command,
            shell=True,
            env=_env(secured),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        for command in commands
    ]
    assert '"status": "WAITING"' in outputs[0]
    assert '"status": "COMPLETED"' in outputs[1]
    assert '"status":"COMPLETED"' in outputs[2]
    assert '"sent after approval by ann"' in outputs[1]
    steps = outputs[3].splitlines()
    assert [line.split()[0] for line in steps] == ["r1", "r2"]
    assert steps[0].endswith(
        "start: draft -> awaiting_approval => WAITING in awaiting_approval, accepts approve, reject"
    )
    assert "approve: awaiting_approval -approve-> send -> " in steps[1]
    assert "=> COMPLETED in " in steps[1]
