"""The gRPC API's limits hold over HTTP too: a caller's rate, its open watches, and the
size of what it sends, each refused with the gRPC API's code and reason."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.console import Http, console_url
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import wait_until

W = "/api/v1/workflows"
RATE_CALLS = 40  # far more than the burst, sent back to back


@contextlib.contextmanager
def _console(root: Path, *flags: str) -> Iterator[Http]:
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    database = f"sqlite:///{root / 'statewright.db'}"
    args = ["--http-listen", "127.0.0.1:0", *flags]
    with running_server(database, definitions, cwd=root, extra_args=args) as server:
        yield Http(console_url(server))
        assert "Traceback" not in server.log(), server.log()


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Http]:
    flags = ["--max-watches", "1", "--max-request-size", "4096", "--max-string-size", "64"]
    with _console(tmp_path_factory.mktemp("console-limits"), *flags) as http:
        yield http


def test_a_caller_s_rate_is_limited_with_a_delay_to_wait(tmp_path: Path) -> None:
    with _console(tmp_path, "--rate-limit", "1", "--rate-burst", "3") as http:
        answers = [http.get("/api/v1/definitions") for _ in range(RATE_CALLS)]
        assert answers[0].status == 200
        refused = [a for a in answers if a.status != 200]
        assert refused, "no call was refused"
        assert {a.status for a in refused} == {429}
        first = refused[0]
        assert first.error == ("RESOURCE_EXHAUSTED", "RATE_LIMITED")
        assert first.body["retryDelay"].endswith("s") and float(first.body["retryDelay"][:-1]) > 0
        assert int(first.headers["retry-after"]) >= 1
        # Streams count against the same bucket: refused before they open.
        stream = http.events("/api/v1/diagnostics:watch")
        assert stream.status == 429
        stream.close()


def test_open_watches_per_caller_are_capped(limited: Http) -> None:
    started = limited.post(W, {"definition": "review-loop"})
    assert started.status == 200, started.body
    path = f"{W}/{started.body['workflow']['workflowId']}/watch"
    first = limited.events(path)
    try:
        assert first.until("current").id == "1"
        second = limited.events(path)
        assert second.status == 429
        body = second.response.read()
        second.close()
        assert b'"TOO_MANY_WATCHES"' in body and b'"RESOURCE_EXHAUSTED"' in body
    finally:
        first.close()

    def reopened() -> bool:
        again = limited.events(path)
        try:
            return again.status == 200
        finally:
            again.close()

    # The server sees the dropped connection and gives the watch back.
    assert wait_until(reopened, timeout=10, interval=0.2)


def test_what_a_caller_sends_is_bounded(limited: Http) -> None:
    huge = limited.post(W, {"definition": "review-loop", "input": {"document": "x" * 8000}})
    assert huge.status == 400 and huge.error == ("INVALID_ARGUMENT", "REQUEST_TOO_LARGE")
    long = limited.post(W, {"definition": "review-loop", "input": {"document": "x" * 100}})
    assert long.status == 400 and long.error == ("INVALID_ARGUMENT", "VALUE_TOO_LARGE")
    fits = limited.post(W, {"definition": "review-loop", "input": {"document": "x" * 60}})
    assert fits.status == 200, fits.body
