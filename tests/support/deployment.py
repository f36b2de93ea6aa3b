"""Definitions directories and server processes for end-to-end tests."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from statewrightd.definitions.files import is_definition_file
from tests.support.server import STATEWRIGHTD, ServerProcess

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "definitions"
TEST_DEFINITIONS = REPO / "tests" / "e2e" / "definitions"


def example_definitions() -> list[Path]:
    """The example definitions (not the scenario files beside them)."""
    return sorted(p for p in EXAMPLES.glob("*.yaml") if is_definition_file(p))


def definitions_dir(
    target: Path,
    *,
    examples: bool = True,
    test_definitions: bool = True,
    extra: Mapping[str, str] | None = None,
) -> Path:
    """A fresh directory with the chosen definition files (``extra``: file name -> text)."""
    target.mkdir(parents=True, exist_ok=False)
    sources = ([EXAMPLES] if examples else []) + ([TEST_DEFINITIONS] if test_definitions else [])
    for source in sources:
        for path in sorted(source.glob("*.yaml")):
            if is_definition_file(path):
                shutil.copy(path, target / path.name)
    for name, text in (extra or {}).items():
        (target / name).write_text(text, encoding="utf-8")
    return target


def api_keys_file(path: Path, keys: Mapping[str, tuple[str, str]]) -> Path:
    """An --auth-config file of API keys: name -> (the key, its grant as YAML flow)."""
    path.write_text(
        "api_keys:\n"
        + "".join(
            f"  - {{name: {name}, sha256: {hashlib.sha256(key.encode()).hexdigest()}, "
            f"grants: [{grant}]}}\n"
            for name, (key, grant) in keys.items()
        ),
        encoding="utf-8",
    )
    return path


@contextlib.contextmanager
def running_server(
    database_url: str,
    definitions: Path | None,
    *,
    cwd: Path,
    extra_args: Sequence[str] = (),
    grace: float = 2.0,
    env: Mapping[str, str] | None = None,
) -> Iterator[ServerProcess]:
    """A started server, stopped with SIGTERM (then killed) when the block ends."""
    server = ServerProcess(
        database_url=database_url,
        definitions=definitions,
        grace=grace,
        cwd=cwd,
        extra_args=["--log-level", "INFO", *extra_args],
        env=dict(env) if env else None,
    )
    server.start()
    try:
        yield server
    finally:
        try:
            if server.proc.poll() is None:
                server.stop(timeout=15)
        except subprocess.TimeoutExpired:
            pass
        finally:
            server.kill()


def run_server_to_exit(
    database_url: str,
    definitions: Path,
    *,
    cwd: Path,
    timeout: float = 30.0,
    processes: int = 1,
) -> subprocess.CompletedProcess[str]:
    """Run ``statewrightd serve`` expecting it to refuse to start; return how it ended."""
    args = [
        *STATEWRIGHTD,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database",
        database_url,
        "--definitions",
        str(definitions),
        "--processes",
        str(processes),
    ]
    proc = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
        raise AssertionError(f"server kept running although it should refuse:\n{out}") from None
    return subprocess.CompletedProcess(args, proc.returncode, out, "")
