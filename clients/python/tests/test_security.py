"""Connection security in the Python client: the options and the environment, TLS and mTLS
against the fake server (certificates made for the test, living an hour), and bearer
tokens, static or from a provider, on every call of both services."""

from __future__ import annotations

import asyncio
import io
import itertools
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from certs import ScratchCA
from statewright import (
    AccessToken,
    AsyncClient,
    AsyncWorker,
    Client,
    InsecureTokenError,
    PermissionDenied,
    RateLimited,
    Unauthenticated,
    Unavailable,
    Worker,
    _security,
    cli,
)
from statewright.v1 import workflow_pb2
from statewright.v1 import workflow_service_pb2 as pb

from tests.fakes import FakeServer, FakeTasks, ServerTls, abort, workflow

SAN = "spiffe://statewright.test/worker/payments"
COMPLETED = workflow_pb2.WORKFLOW_STATUS_COMPLETED


@dataclass
class Pki:
    directory: Path
    ca: ScratchCA
    server: ServerTls  # the fake's certificate, and the CA it asks client certificates of
    client_cert: Path
    client_key: Path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca = ScratchCA(directory)
    server = ca.issue("server", server=True)
    client = ca.issue("client", uri=SAN)
    key, cert = server.pem()
    return Pki(directory, ca, ServerTls(key, cert, ca.pem()), client.cert, client.key)


@pytest.fixture
def mtls_fake(pki: Pki) -> Iterator[FakeServer]:
    with FakeServer(tls=pki.server) as server:
        server.service.behaviours["GetWorkflow"] = _get
        yield server


@pytest.fixture
def tls_fake(pki: Pki) -> Iterator[FakeServer]:
    server_only = ServerTls(pki.server.key, pki.server.cert)
    with FakeServer(tls=server_only) as server:
        server.service.behaviours["GetWorkflow"] = _get
        yield server


def _get(request: Any, context: grpc.ServicerContext) -> pb.GetWorkflowResponse:
    return pb.GetWorkflowResponse(workflow=workflow(request.name.rpartition("/")[2]))


def _settle(**given: Any) -> _security.Connection:
    options: dict[str, Any] = {
        "target": None,
        "tls": None,
        "tls_ca": None,
        "tls_cert": None,
        "tls_key": None,
        "token": None,
        "insecure": False,
        "credentials": None,
        "own_channel": True,
        "environ": {},
    }
    options.update(given)
    return _security.settle(**options)


# --- the options and the environment ----------------------------------------------------


def test_the_address_is_address_then_the_older_target_then_the_default() -> None:
    both = {"STATEWRIGHT_ADDRESS": "10.0.0.1:1", "STATEWRIGHT_TARGET": "10.0.0.2:2"}
    assert _settle(environ=both).target == "10.0.0.1:1"
    assert _settle(environ={"STATEWRIGHT_TARGET": "10.0.0.2:2"}).target == "10.0.0.2:2"
    assert _settle(environ={"STATEWRIGHT_ADDRESS": "", "STATEWRIGHT_TARGET": "h:3"}).target == "h:3"
    assert _settle().target == "127.0.0.1:50051"
    assert _settle(target="h:4", environ=both).target == "h:4"


def test_any_tls_variable_means_tls(pki: Pki) -> None:
    assert _settle().credentials is None
    assert _settle(environ={"STATEWRIGHT_TLS_CA": ""}).credentials is None
    assert _settle(environ={"STATEWRIGHT_TLS_CA": str(pki.ca.cert)}).credentials is not None
    pair = {
        "STATEWRIGHT_TLS_CERT": str(pki.client_cert),
        "STATEWRIGHT_TLS_KEY": str(pki.client_key),
    }
    assert _settle(environ=pair).credentials is not None
    assert _settle(tls=True).credentials is not None  # the system's roots
    # tls=False is plaintext whatever the environment says.
    assert _settle(tls=False, environ={"STATEWRIGHT_TLS_CA": str(pki.ca.cert)}).credentials is None


def test_explicit_tls_options_replace_the_environments(pki: Pki) -> None:
    # A certificate with no key in the environment would be refused; the explicit CA wins.
    half = {"STATEWRIGHT_TLS_CERT": str(pki.client_cert)}
    assert _settle(tls_ca=pki.ca.pem(), environ=half).credentials is not None
    with pytest.raises(ValueError, match=r"STATEWRIGHT_TLS_CERT: mTLS needs .* no key"):
        _settle(environ=half)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"tls_cert": "c.pem"}, "tls_cert: mTLS needs a client certificate and its key: no key"),
        ({"tls_key": "k.pem"}, "tls_key: mTLS needs .* no certificate"),
        ({"tls": False, "tls_ca": b"-----BEGIN X"}, "tls_ca: TLS files given with tls=False"),
        ({"tls_ca": b"x", "credentials": grpc.ssl_channel_credentials()}, "not both"),
        ({"tls_ca": b"x", "own_channel": False}, "not with a ready channel"),
        ({"tls": True, "insecure": True}, "does not turn off certificate checks"),
        ({"tls_ca": b"not a certificate"}, "tls_ca: not PEM"),
        ({"tls_ca": "/nonexistent/ca.pem"}, "tls_ca: cannot read /nonexistent/ca.pem"),
        ({"environ": {"STATEWRIGHT_TLS_CA": "/no/ca.pem"}}, "STATEWRIGHT_TLS_CA: cannot read"),
        ({"token": ""}, "token must be non-empty"),
        ({"token": "abc\n"}, "no surrounding space or line breaks"),
    ],
)
def test_contradictions_and_unreadable_files_are_refused_at_once(
    given: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        _settle(**given)


def test_the_token_comes_from_the_environment_unless_given() -> None:
    tokens = _settle(environ={"STATEWRIGHT_TOKEN": "from-env"}).tokens
    assert tokens is not None and tokens.get() == "from-env"
    tokens = _settle(token="given", environ={"STATEWRIGHT_TOKEN": "from-env"}).tokens
    assert tokens is not None and tokens.get() == "given"
    assert _settle(environ={"STATEWRIGHT_TOKEN": ""}).tokens is None
    # A ready channel is the caller's: nothing comes from the environment then.
    ready = _settle(own_channel=False, environ={"STATEWRIGHT_TOKEN": "from-env"})
    assert ready.tokens is None


def test_a_client_reads_the_process_environment(
    monkeypatch: pytest.MonkeyPatch, fake: FakeServer
) -> None:
    fake.service.behaviours["GetWorkflow"] = _get
    monkeypatch.setenv("STATEWRIGHT_ADDRESS", fake.target)
    monkeypatch.setenv("STATEWRIGHT_TARGET", "127.0.0.1:1")
    monkeypatch.setenv("STATEWRIGHT_TOKEN", "env-token")
    with Client() as client:
        assert client.target == fake.target
        client.get("w")
    with Client(environ={}) as client:
        assert client.target == "127.0.0.1:50051"
    assert fake.service.authorizations() == [("GetWorkflow", "Bearer env-token")]


@pytest.mark.parametrize(
    ("target", "local"),
    [
        ("127.0.0.1:50051", True),
        ("127.8.9.10:1", True),
        ("localhost:50051", True),
        ("LOCALHOST", True),
        ("[::1]:50051", True),
        ("::1", True),
        ("dns:///localhost:50051", True),
        ("ipv4:127.0.0.1:50051", True),
        ("unix:/run/statewright.sock", True),
        ("10.0.0.5:50051", False),
        ("statewright.example.com:443", False),
        ("localhost.example.com:50051", False),
        ("[2001:db8::1]:50051", False),
        ("dns:///statewright:50051", False),
    ],
)
def test_loopback_is_what_the_address_says(target: str, local: bool) -> None:
    assert _security.is_loopback(target) is local


def test_a_token_never_goes_in_plaintext_to_another_machine_unless_asked(pki: Pki) -> None:
    with pytest.raises(InsecureTokenError, match=r"in plaintext to 10\.0\.0\.5:50051.*insecure"):
        Client("10.0.0.5:50051", token="secret")
    with pytest.raises(InsecureTokenError):
        Client("10.0.0.5:50051", environ={"STATEWRIGHT_TOKEN": "secret"})
    # Each of these is allowed (and connects lazily: nothing is sent here).
    Client("10.0.0.5:50051", token="secret", insecure=True).close()
    Client("10.0.0.5:50051", token="secret", tls_ca=pki.ca.pem()).close()
    Client("localhost:50051", token="secret").close()
    Client("10.0.0.5:50051", insecure=True).close()  # no token, nothing to protect


def test_a_token_and_an_authorization_entry_do_not_mix() -> None:
    with pytest.raises(ValueError, match="not both"):
        Client(token="a", metadata=[("Authorization", "Bearer b")])


def test_a_coroutine_provider_needs_the_async_client() -> None:
    async def provider() -> str:
        return "t"

    with pytest.raises(TypeError, match="AsyncClient"):
        Client(token=provider)


# --- TLS and mTLS ---------------------------------------------------------------------------


def test_tls_with_a_ca_file_or_pem_bytes_or_from_the_environment(
    pki: Pki, tls_fake: FakeServer
) -> None:
    with Client(tls_fake.target, tls_ca=pki.ca.cert) as client:
        assert client.get("a").workflow_id == "a"
    with Client(tls_fake.target, tls_ca=pki.ca.pem()) as client:
        assert client.get("b").workflow_id == "b"
    environ = {"STATEWRIGHT_ADDRESS": tls_fake.target, "STATEWRIGHT_TLS_CA": str(pki.ca.cert)}
    with Client(environ=environ) as client:
        assert client.get("c").workflow_id == "c"
    assert [m for m, _ in tls_fake.service.metadata] == ["GetWorkflow"] * 3


def test_tls_fails_against_a_server_its_ca_did_not_sign(
    tmp_path: Path, tls_fake: FakeServer
) -> None:
    stranger = ScratchCA(tmp_path, name="another CA")
    with (
        Client(tls_fake.target, tls_ca=stranger.pem(), timeout=3) as client,
        pytest.raises(Unavailable),
    ):
        client.get("a")
    with Client(tls_fake.target, tls=False, timeout=3) as plain, pytest.raises(Unavailable):
        plain.get("a")
    assert tls_fake.service.metadata == []


def test_mtls_presents_the_client_certificate(pki: Pki, mtls_fake: FakeServer) -> None:
    with Client(
        mtls_fake.target, tls_ca=pki.ca.cert, tls_cert=pki.client_cert, tls_key=pki.client_key
    ) as client:
        assert client.get("a").workflow_id == "a"
    environ = {
        "STATEWRIGHT_ADDRESS": mtls_fake.target,
        "STATEWRIGHT_TLS_CA": str(pki.ca.cert),
        "STATEWRIGHT_TLS_CERT": str(pki.client_cert),
        "STATEWRIGHT_TLS_KEY": str(pki.client_key),
        "STATEWRIGHT_TOKEN": "with-a-token-too",
    }
    with Client(environ=environ) as client:
        assert client.get("b").workflow_id == "b"
    assert mtls_fake.service.peers == [("GetWorkflow", [SAN])] * 2
    assert mtls_fake.service.authorizations()[1] == ("GetWorkflow", "Bearer with-a-token-too")


def test_mtls_without_a_client_certificate_is_refused(pki: Pki, mtls_fake: FakeServer) -> None:
    with (
        Client(mtls_fake.target, tls_ca=pki.ca.cert, timeout=3) as client,
        pytest.raises(Unavailable),
    ):
        client.get("a")
    assert mtls_fake.service.metadata == []


async def test_the_async_client_speaks_mtls_with_a_token(pki: Pki, mtls_fake: FakeServer) -> None:
    async with AsyncClient(
        mtls_fake.target,
        tls_ca=pki.ca.pem(),
        tls_cert=pki.client_cert.read_bytes(),
        tls_key=pki.client_key.read_bytes(),
        token="async-token",
    ) as client:
        assert (await client.get("a")).workflow_id == "a"
    assert mtls_fake.service.peers == [("GetWorkflow", [SAN])]
    assert mtls_fake.service.authorizations() == [("GetWorkflow", "Bearer async-token")]


def test_the_cli_takes_tls_options_and_a_token(pki: Pki, mtls_fake: FakeServer) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(
        [
            "get",
            "cli-1",
            "--address",
            mtls_fake.target,
            "--tls-ca",
            str(pki.ca.cert),
            "--tls-cert",
            str(pki.client_cert),
            "--tls-key",
            str(pki.client_key),
            "--token",
            "cli-token",
            "--json",
        ],
        stdout=out,
        stderr=err,
    )
    assert status == 0, err.getvalue()
    assert json.loads(out.getvalue())["workflow_id"] == "cli-1"
    assert mtls_fake.service.peers == [("GetWorkflow", [SAN])]
    assert mtls_fake.service.authorizations() == [("GetWorkflow", "Bearer cli-token")]


def test_the_cli_reads_the_same_variables(
    pki: Pki, mtls_fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STATEWRIGHT_ADDRESS", mtls_fake.target)
    monkeypatch.setenv("STATEWRIGHT_TLS_CA", str(pki.ca.cert))
    monkeypatch.setenv("STATEWRIGHT_TLS_CERT", str(pki.client_cert))
    monkeypatch.setenv("STATEWRIGHT_TLS_KEY", str(pki.client_key))
    monkeypatch.setenv("STATEWRIGHT_TOKEN", "env-token")
    out = io.StringIO()
    assert cli.main(["get", "cli-2", "--compact"], stdout=out) == 0
    assert json.loads(out.getvalue())["workflow_id"] == "cli-2"
    assert mtls_fake.service.authorizations() == [("GetWorkflow", "Bearer env-token")]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--address", "10.1.2.3:50051", "--token", "t", "get", "w"],
            "refusing to send a token in plaintext to 10.1.2.3:50051: turn TLS on (--tls, "
            "--tls-ca or $STATEWRIGHT_TLS_CA), or give --insecure",
        ),
        (["--tls-ca", "/nonexistent/ca.pem", "get", "w"], "tls_ca: cannot read"),
        (["get", "w", "--tls-cert", "/tmp/c.pem"], "mTLS needs a client certificate and its key"),
        (["--tls", "--insecure", "get", "w"], "does not turn off certificate checks"),
    ],
)
def test_the_cli_refuses_bad_connection_options_as_usage_errors(
    argv: list[str], message: str
) -> None:
    err = io.StringIO()
    assert cli.main(argv, stdout=io.StringIO(), stderr=err) == 2
    assert message in err.getvalue()


# --- tokens on every call -----------------------------------------------------------------


def _script_every_kind_of_call(fake: FakeServer) -> None:
    fake.service.behaviours["StartWorkflow"] = lambda r, c: pb.StartWorkflowResponse(
        workflow=workflow(), created=True
    )
    fake.service.behaviours["GetWorkflow"] = _get
    fake.service.behaviours["WatchWorkflow"] = lambda r, c: iter(
        [
            pb.WatchWorkflowResponse(
                type=pb.WATCH_EVENT_TYPE_CURRENT,
                revision=2,
                workflow=workflow(revision=2, status=COMPLETED),
            )
        ]
    )
    FakeTasks(fake.service)


def test_a_static_token_goes_with_every_call_of_both_services(fake: FakeServer) -> None:
    _script_every_kind_of_call(fake)
    with Client(fake.target, token="sw_static") as client:
        client.start("mail-approval")
        client.get("w")
        assert [e.revision for e in client.watch("w")] == [2]
        assert client.poll_tasks("payments", wait=0) == ()
    calls = fake.service.authorizations()
    assert [m for m, _ in calls] == ["StartWorkflow", "GetWorkflow", "WatchWorkflow", "PollTasks"]
    assert {a for _, a in calls} == {"Bearer sw_static"}


async def test_the_async_client_sends_it_on_every_call_too(fake: FakeServer) -> None:
    _script_every_kind_of_call(fake)
    async with AsyncClient(fake.target, token="sw_static") as client:
        await client.start("mail-approval")
        assert [e.revision async for e in client.watch("w")] == [2]
        assert await client.poll_tasks("payments", wait=0) == ()
    calls = fake.service.authorizations()
    assert [m for m, _ in calls] == ["StartWorkflow", "WatchWorkflow", "PollTasks"]
    assert {a for _, a in calls} == {"Bearer sw_static"}


def test_without_a_token_no_authorization_is_sent(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = _get
    with Client(fake.target) as client:
        client.get("w")
    assert fake.service.authorizations() == [("GetWorkflow", None)]


def test_a_provider_of_strings_is_asked_before_every_call(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = _get
    counter = itertools.count(1)
    with Client(fake.target, token=lambda: f"t{next(counter)}") as client:
        for _ in range(3):
            client.get("w")
    assert [a for _, a in fake.service.authorizations()] == ["Bearer t1", "Bearer t2", "Bearer t3"]


def test_an_access_token_is_kept_until_shortly_before_it_expires(fake: FakeServer) -> None:
    fake.service.behaviours["GetWorkflow"] = _get
    asked: list[str] = []

    def lasting() -> AccessToken:
        asked.append("lasting")
        return AccessToken.expiring_in(f"long-{len(asked)}", 3600)

    def ending() -> AccessToken:
        asked.append("ending")
        return AccessToken.expiring_in(f"short-{len(asked)}", 0.0)  # inside the margin

    def forever() -> AccessToken:
        asked.append("forever")
        return AccessToken("no-expiry")

    for provider in (lasting, ending, forever):
        with Client(fake.target, token=provider) as client:
            for _ in range(3):
                client.get("w")
    assert asked == ["lasting", "ending", "ending", "ending", "forever"]
    sent = [a for _, a in fake.service.authorizations()]
    assert sent[:3] == ["Bearer long-1"] * 3
    assert sent[3:6] == ["Bearer short-2", "Bearer short-3", "Bearer short-4"]
    assert sent[6:] == ["Bearer no-expiry"] * 3


def test_a_refused_token_is_not_used_again(fake: FakeServer) -> None:
    def get(request: Any, context: grpc.ServicerContext) -> Any:
        if dict(context.invocation_metadata()).get("authorization") == "Bearer revoked":
            abort(context, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")
        return _get(request, context)

    fake.service.behaviours["GetWorkflow"] = get
    answers = iter([AccessToken("revoked"), AccessToken("renewed")])
    with Client(fake.target, token=lambda: next(answers)) as client:
        with pytest.raises(Unauthenticated) as refused:
            client.get("w")
        assert refused.value.reason == "UNAUTHENTICATED"
        client.get("w")
        client.get("w")
    sent = [a for _, a in fake.service.authorizations()]
    assert sent == ["Bearer revoked", "Bearer renewed", "Bearer renewed"]


def test_a_failing_provider_fails_the_call_as_unavailable(fake: FakeServer) -> None:
    def broken() -> str:
        raise ConnectionError("identity provider down")

    with Client(fake.target, token=broken) as client, pytest.raises(Unavailable) as caught:
        client.get("w")
    assert "the token provider failed: ConnectionError: identity provider down" in str(caught.value)
    assert isinstance(caught.value.__cause__, ConnectionError)
    assert fake.service.requests == []


def test_a_provider_answering_nonsense_is_a_type_error(fake: FakeServer) -> None:
    nonsense: Any = lambda: 42  # noqa: E731
    with Client(fake.target, token=nonsense) as client, pytest.raises(TypeError):
        client.get("w")
    naive = datetime.now() + timedelta(hours=1)  # no time zone: the point
    with (
        Client(fake.target, token=lambda: AccessToken("t", naive)) as client,
        pytest.raises(ValueError, match="time zone"),
    ):
        client.get("w")


async def test_the_async_client_awaits_a_coroutine_provider_once_for_many_calls(
    fake: FakeServer,
) -> None:
    fake.service.behaviours["GetWorkflow"] = _get
    asked = 0

    async def provider() -> AccessToken:
        nonlocal asked
        asked += 1
        await asyncio.sleep(0)
        return AccessToken.expiring_in("async-1", 3600)

    async with AsyncClient(fake.target, token=provider) as client:
        await asyncio.gather(*(client.get("w") for _ in range(5)))
    assert asked == 1
    assert {a for _, a in fake.service.authorizations()} == {"Bearer async-1"}


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_worker_sends_the_token_and_outlasts_a_failing_provider(
    kind: str, fake: FakeServer
) -> None:
    tasks = FakeTasks(fake.service)
    name = tasks.add("t1", {"order": "o-1"})
    lock = threading.Lock()
    failures = iter([True, False])

    def provider() -> AccessToken:
        with lock:
            if next(failures, False):
                raise ConnectionError("identity provider down")
        return AccessToken.expiring_in("worker-token", 3600)

    def handler(task: Any) -> dict[str, object]:
        return {"id": "ch-" + task.input["order"]}

    if kind == "sync":
        client = Client(fake.target, token=provider)
        worker = Worker(client)
        worker.register("payments", handler)
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
        thread.start()
        try:
            assert tasks.wait_until(lambda: name in tasks.completed)
        finally:
            worker.stop(immediately=True)
            thread.join(15)
            client.close()
    else:

        async def main() -> None:
            async with AsyncClient(fake.target, token=provider) as client:
                worker = AsyncWorker(client)
                worker.register("payments", handler)
                run = asyncio.create_task(worker.run(handle_signals=False))
                done = await asyncio.to_thread(tasks.wait_until, lambda: name in tasks.completed)
                worker.stop(immediately=True)
                await asyncio.wait_for(run, 15)
                assert done

        asyncio.run(main())
    calls = fake.service.authorizations()
    assert {m for m, _ in calls} >= {"PollTasks", "CompleteTask"}
    assert {a for _, a in calls} == {"Bearer worker-token"}


# --- refusals: typed errors, and the server's delay ---------------------------------------


def test_refusals_are_typed_and_rate_limits_say_when_to_come_back(fake: FakeServer) -> None:
    def refuse(request: Any, context: grpc.ServicerContext) -> Any:
        match request.name:
            case "workflows/denied":
                abort(context, grpc.StatusCode.PERMISSION_DENIED, "PERMISSION_DENIED")
            case "workflows/hasty":
                abort(
                    context,
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "RATE_LIMITED",
                    {"limit": "5/s"},
                    retry_delay=0.25,
                )
        abort(context, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED")

    fake.service.behaviours["GetWorkflow"] = refuse
    with Client(fake.target, token="t") as client:
        with pytest.raises(PermissionDenied) as denied:
            client.get("denied")
        with pytest.raises(RateLimited) as limited:
            client.get("hasty")
        with pytest.raises(Unauthenticated):
            client.get("anyone")
    assert denied.value.code is grpc.StatusCode.PERMISSION_DENIED
    assert denied.value.retry_delay is None
    assert limited.value.retry_delay == 0.25
    assert limited.value.metadata == {"limit": "5/s"}
    assert limited.value.to_dict()["retry_delay"] == 0.25


def test_a_rate_limited_watch_opens_again_after_the_servers_delay(fake: FakeServer) -> None:
    opened = itertools.count()

    def watch(request: Any, context: grpc.ServicerContext) -> Any:
        if next(opened) == 0:
            abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED", retry_delay=0.05)
        return iter(
            [
                pb.WatchWorkflowResponse(
                    type=pb.WATCH_EVENT_TYPE_CURRENT,
                    revision=3,
                    workflow=workflow(revision=3, status=COMPLETED),
                )
            ]
        )

    fake.service.behaviours["WatchWorkflow"] = watch
    with Client(fake.target) as client:
        assert [e.revision for e in client.watch("w", reconnect_budget=10)] == [3]
    assert len(fake.service.calls("WatchWorkflow")) == 2
