"""Fixtures for client unit tests: a scripted fake server and a client connected to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from statewright import Client

from tests.unit.client.fakes import FakeServer


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


@pytest.fixture
def client(fake: FakeServer) -> Iterator[Client]:
    with Client(fake.target) as c:
        yield c
