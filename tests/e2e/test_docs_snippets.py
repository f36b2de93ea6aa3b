"""Every Python snippet the documentation marks runnable, run as written against a real
server, on PostgreSQL and SQLite (see tests/unit/docs/blocks.py for the markers).

The server has the examples loaded, and the definitions the pages with snippets declare
(a tutorial's own workflow). A page's snippets run in its order, in one directory of their
own, with the page's default target replaced by the server's: a snippet marked background
(a worker) runs until the page's last snippet is done, then gets Ctrl-C. A snippet must
exit 0, and print what the page's output block under it shows.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.deployment import definitions_dir, example_definitions, running_server
from tests.support.server import ServerProcess
from tests.unit.docs.blocks import REPO, Snippet, page_blocks, pages, runnable_snippets

DEFAULT_TARGET = "127.0.0.1:50051"
SNIPPET_TIMEOUT = 120.0
PAGES = [page for page in pages() if runnable_snippets(page)]


def _page_definitions() -> dict[str, str]:
    """The valid definitions of the pages with snippets, but the examples' own names."""
    examples = {path.stem for path in example_definitions()}
    files: dict[str, str] = {}
    for page in PAGES:
        for block in page_blocks(page):
            if not block.is_definition or block.marker or block.source is not None:
                continue
            name = re.search(r"^name:\s*(\S+)", block.text, re.M)
            if name is None or name.group(1) in examples:
                continue
            stem = page.stem.replace("/", "-")
            files[f"{stem}-{block.line}.{'json' if block.language == 'json' else 'yaml'}"] = (
                block.text
            )
    return files


@pytest.fixture(scope="module")
def docs_server(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("docs-server")
    definitions = definitions_dir(
        root / "definitions", test_definitions=False, extra=_page_definitions()
    )
    with running_server(module_database_url, definitions, cwd=root) as server:
        yield server
    assert "Traceback" not in server.log(), server.log()


def _matches(expected: str, line: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("…"))
    return re.fullmatch(pattern, line) is not None


def _check_output(snippet: Snippet, stdout: str) -> None:
    if snippet.output is None:
        return
    expected = [line.rstrip() for line in snippet.output.text.splitlines() if line.strip()]
    got = [line.rstrip() for line in stdout.splitlines() if line.strip()]
    assert len(got) == len(expected) and all(map(_matches, expected, got)), (
        f"{snippet.block.where} printed\n{stdout}\nbut {snippet.output.where} shows\n"
        + "\n".join(expected)
    )


def test_the_docs_have_runnable_snippets() -> None:
    # Guards the test below against finding nothing to run.
    names = {page.relative_to(REPO).as_posix() for page in PAGES}
    assert {
        "docs/tutorial.md",
        "docs/tutorial-escalation.md",
        "docs/tutorial-worker.md",
        "docs/clients/python.md",
    } <= names


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(REPO).as_posix() for p in PAGES])
def test_every_runnable_snippet_runs_as_written(
    page: Path, docs_server: ServerProcess, tmp_path: Path
) -> None:
    env = {**os.environ, "STATEWRIGHT_ADDRESS": docs_server.target, "PYTHONUNBUFFERED": "1"}
    background: list[tuple[Snippet, subprocess.Popen[str]]] = []
    try:
        for snippet in runnable_snippets(page):
            script = tmp_path / f"snippet_{snippet.block.line}.py"
            script.write_text(
                snippet.block.text.replace(DEFAULT_TARGET, docs_server.target), encoding="utf-8"
            )
            command = [sys.executable, str(script)]
            if snippet.background:
                background.append((snippet, _spawn(command, tmp_path, env)))
                continue
            done = subprocess.run(
                command,
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=SNIPPET_TIMEOUT,
                check=False,
            )
            assert done.returncode == 0, f"{snippet.block.where} failed:\n{done.stderr}"
            _check_output(snippet, done.stdout)
    finally:
        ended = [(snippet, _interrupt(proc)) for snippet, proc in background]
    for snippet, (status, output) in ended:
        assert status == 0, f"{snippet.block.where} ended with {status} on Ctrl-C:\n{output}"


def _spawn(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def _interrupt(proc: subprocess.Popen[str]) -> tuple[int, str]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        output, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate(timeout=10)
        return -1, output
    return proc.returncode, output
