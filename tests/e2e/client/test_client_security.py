"""The Python client, its workers and its command line against a real server over mTLS,
with API keys and a client-certificate identity, roles and a rate limit.

The CA, certificates and keys are made for this module and live an hour; the server runs
on a SQLite file (security does not depend on the storage backend).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from statewright import (
    AccessToken,
    AsyncClient,
    Client,
    PermissionDenied,
    RateLimited,
    Unauthenticated,
    Unavailable,
    Worker,
    WorkflowStatus,
)

from tests.e2e.client.secured import RATE, Secured, secured_server


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("secured")
    with secured_server(root, f"sqlite:///{root / 'statewright.db'}") as server:
        yield server


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_the_default_client_connects_from_the_environment(secured: Secured) -> None:
    with Client(environ=secured.environ()) as client:
        started = client.start("mail-approval", {"topic": "tls"}, workflow_id=_id("mail"))
        assert started.workflow.status is WorkflowStatus.WAITING
        events = client.watch(started.workflow.name)
        assert next(events).revision == 1  # a stream carries the token too
        done = client.resume(started.workflow.name, "approve", expected_revision=1)
        assert done.workflow.status is WorkflowStatus.COMPLETED
        assert [e.revision for e in events] == [2]


async def test_the_async_client_with_explicit_options(secured: Secured) -> None:
    async with AsyncClient(
        secured.server.target,
        tls_ca=secured.ca.pem(),
        tls_cert=secured.worker.cert,
        tls_key=secured.worker.key,
        token=secured.keys["admin"],
        environ={},
    ) as client:
        started = await client.start("mail-approval", {"topic": "aio"})
        assert (await client.get(started.workflow.name)).revision == 1


def test_a_worker_is_known_by_its_certificate_alone(secured: Secured) -> None:
    with Client(environ=secured.environ()) as admin:
        order = admin.start("order-fulfilment", {"items": ["book"], "price": 12.5}).workflow
    with Client(environ=secured.environ(token=None)) as client:
        with pytest.raises(PermissionDenied):  # the certificate's identity is a worker's
            client.get(order.name)
        worker = Worker(client, poll_wait=1.0)
        worker.register("payments", lambda task: {"id": "ch-" + task.input["order"]})
        worker.register("shipping", lambda task: {"tracking": "TRK-1"})
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            with Client(environ=secured.environ(token="reader")) as reader:
                final = None
                for event in reader.watch(order.name, timeout=60):
                    final = event.workflow
        finally:
            worker.stop()
            thread.join(30)
    assert not thread.is_alive()
    assert final is not None and final.status is WorkflowStatus.COMPLETED
    assert final.context["tracking"] == "TRK-1"


def test_refusals_are_typed(secured: Secured) -> None:
    with Client(environ=secured.environ(token="reader")) as reader:
        with pytest.raises(PermissionDenied) as denied:
            reader.start("mail-approval")
        assert denied.value.reason == "PERMISSION_DENIED"
        assert reader.definition("mail-approval").name.startswith("definitions/mail-approval")
    stranger = secured.environ(token=None, cert=secured.unknown)
    with Client(environ=stranger) as client, pytest.raises(Unauthenticated) as unknown:
        client.get(_id("any"))
    assert unknown.value.reason == "UNAUTHENTICATED"
    with (
        Client(environ={**secured.environ(), "STATEWRIGHT_TOKEN": "sw-no-such-key"}) as client,
        pytest.raises(Unauthenticated),
    ):
        client.get(_id("any"))


def test_without_a_client_certificate_the_connection_is_refused(secured: Secured) -> None:
    environ = secured.environ()
    del environ["STATEWRIGHT_TLS_CERT"], environ["STATEWRIGHT_TLS_KEY"]
    with Client(environ=environ, timeout=5) as client, pytest.raises(Unavailable):
        client.get(_id("any"))
    with (
        Client(secured.server.target, tls=False, timeout=5) as plain,
        pytest.raises(Unavailable),
    ):
        plain.get(_id("any"))


def test_a_refused_token_is_replaced_by_the_providers_next(secured: Secured) -> None:
    answers = iter(
        [AccessToken("sw-revoked-key"), AccessToken.expiring_in(secured.keys["admin"], 600)]
    )
    asked = 0

    def provider() -> AccessToken:
        nonlocal asked
        asked += 1
        return next(answers)

    environ = {k: v for k, v in secured.environ().items() if k != "STATEWRIGHT_TOKEN"}
    with Client(token=provider, environ=environ) as client:
        with pytest.raises(Unauthenticated):
            client.definition("mail-approval")
        for _ in range(3):
            client.definition("mail-approval")
    assert asked == 2


def test_a_caller_over_its_rate_learns_when_to_come_back(secured: Secured) -> None:
    refused: RateLimited | None = None
    with Client(environ=secured.environ(token="hasty")) as client:
        for _ in range(RATE * 10):
            try:
                client.definition("mail-approval")
            except RateLimited as exc:
                refused = exc
                break
    assert refused is not None, f"{RATE * 10} calls in a row never met a rate of {RATE}/s"
    assert refused.reason == "RATE_LIMITED"
    assert refused.retry_delay is not None and 0 < refused.retry_delay <= 1 / RATE + 1e-3


def test_the_command_line_reads_the_same_variables(secured: Secured, tmp_path: Path) -> None:
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("STATEWRIGHT_")},
        **secured.environ(),
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
    }
    started = subprocess.run(
        ["statewright", "start", "mail-approval", "--compact"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    assert '"status":"WAITING"' in started.stdout
    refused = subprocess.run(
        ["statewright", "definitions", "--token", "sw-no-such-key"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1
    assert '"reason": "UNAUTHENTICATED"' in refused.stderr
