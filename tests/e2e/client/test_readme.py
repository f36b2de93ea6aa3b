"""The client README's examples run as written against a real server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.server import ServerProcess

README = Path(__file__).resolve().parents[3] / "clients" / "python" / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _env(server: ServerProcess) -> dict[str, str]:
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "STATEWRIGHT_TARGET": server.target,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }


def test_python_examples_run(module_server: ServerProcess) -> None:
    # The Workers examples run until interrupted: tests/unit/client/test_worker.py runs them.
    blocks = [b for b in _blocks("python") if "Worker(" not in b]
    assert len(blocks) == 2
    outputs = []
    for block in blocks:
        done = subprocess.run(
            [sys.executable, "-c", block],
            env=_env(module_server),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.splitlines())
    sync_out, async_out = outputs
    assert sync_out[0].endswith("WAITING awaiting_approval")
    assert sync_out[1] == "stale: the server is at revision 1"
    assert sync_out[2] == "COMPLETED 2 True"
    assert async_out == ["CURRENT 1 WAITING", "STEP 2 COMPLETED"]


def test_command_line_example_runs(module_server: ServerProcess) -> None:
    (block,) = [b for b in _blocks("sh") if "statewright start" in b]
    # The first four commands form the start/resume/get/history example; the rest need
    # other ids.
    lines = [line.split("#")[0].strip() for line in block.splitlines()]
    commands = [line for line in lines if line.startswith("statewright ")][:4]
    outputs = [
        subprocess.run(
            command,
            shell=True,
            env=_env(module_server),
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
