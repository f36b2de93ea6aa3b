"""Fixtures for client unit tests: a scripted fake server and a client connected to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from statewright import Client

from tests.fakes import FakeServer


@pytest.fixture(autouse=True)
def _no_connection_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # A shell with STATEWRIGHT_TLS_CA or _TOKEN set (as the clients' conformance run sets
    # them) must not turn these tests' plaintext fakes into TLS or token servers.
    for suffix in ("ADDRESS", "TARGET", "TOKEN", "TLS_CA", "TLS_CERT", "TLS_KEY"):
        monkeypatch.delenv(f"STATEWRIGHT_{suffix}", raising=False)


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def client(fake: FakeServer) -> Iterator[Client]:
    with Client(fake.target) as c:
        yield c
