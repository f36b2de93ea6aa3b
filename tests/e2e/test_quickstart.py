"""The README's quick start, run as written against a real server: the Python client
driving mail-approval, and the worker that charges and ships order-fulfilment."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.support.api import COMPLETED, Client, context_of
from tests.support.deployment import REPO
from tests.support.server import ServerProcess, wait_until

README = REPO / "README.md"
DEFAULT_TARGET = "127.0.0.1:50051"


def _python_blocks(target: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [
        b.replace(DEFAULT_TARGET, target) for b in re.findall(r"```python\n(.*?)```", text, re.S)
    ]


def _cli(server: ServerProcess, *args: str) -> dict[str, object]:
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        [str(bin_dir / "statewright"), "--target", server.target, *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_the_client_example_completes_a_mail_approval(module_server: ServerProcess) -> None:
    client_block = next(b for b in _python_blocks(module_server.target) if "Worker(" not in b)
    done = subprocess.run(
        [sys.executable, "-c", client_block],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["WAITING", "awaiting_approval", "COMPLETED", "2"]


def test_the_worker_example_charges_ships_and_declines(
    module_server: ServerProcess, tmp_path: Path
) -> None:
    worker_block = next(b for b in _python_blocks(module_server.target) if "Worker(" in b)
    script = tmp_path / "worker.py"
    script.write_text(worker_block, encoding="utf-8")
    worker = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ},
    )
    try:
        order = _cli(
            module_server,
            "start",
            "order-fulfilment",
            "--input",
            '{"items": ["book", "pen"], "price": 12.5}',
        )
        declined = _cli(
            module_server,
            "start",
            "order-fulfilment",
            "--input",
            '{"items": ["book", "pen"], "price": 600}',
        )
        with Client(module_server.target) as client:
            ids = [str(w["workflow"]["workflow_id"]) for w in (order, declined)]  # type: ignore[index]

            def ended() -> bool:
                return all(client.get(w).status == COMPLETED for w in ids)

            assert wait_until(ended, 30), [client.get(w) for w in ids]
            shipped, refused = (client.get(w) for w in ids)
        assert shipped.state == "shipped"
        context = context_of(shipped)
        assert context["charge_id"] == f"ch-{ids[0]}"
        assert context["tracking"] == f"TRK-{ids[0][:8]}"
        assert refused.state == "declined"
        assert context_of(refused)["failure"]["type"] == "CARD_DECLINED"
    finally:
        worker.send_signal(signal.SIGINT)
        output = worker.communicate(timeout=30)[0]
    assert worker.returncode == 0, output
    # It says what it works: each task as it starts and as it ends, at INFO.
    shipped_id, declined_id = ids
    for line in (
        f"task workflows/{shipped_id}/tasks/1 (queue payments, attempt 1): working",
        f"task workflows/{shipped_id}/tasks/1 (queue payments): completed in ",
        f"task workflows/{shipped_id}/tasks/2 (queue shipping, attempt 1): working",
        f"task workflows/{shipped_id}/tasks/2 (queue shipping): completed in ",
        f"task workflows/{declined_id}/tasks/1 (queue payments, attempt 1): working",
        f"task workflows/{declined_id}/tasks/1 attempt 1 failed: TaskFailure('CARD_DECLINED'",
    ):
        assert line in output, output
