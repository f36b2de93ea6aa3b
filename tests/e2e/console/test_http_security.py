"""The console's API is the gRPC API's security: TLS with client certificates, bearer
tokens, roles and scopes, and the audit trail, over HTTPS against a real server."""

from __future__ import annotations

import hashlib
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.certs import Issued, ScratchCA
from tests.support.console import Http, console_url
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess, wait_until

KEYS = {
    "reader": "sw-reader-c0ffee",
    "mail-client": "sw-mail-client-beef01",
    "admin": "sw-admin-d00d42",
}
CONSOLE_SAN = "spiffe://statewright.test/console/ops"
W = "/api/v1/workflows"


@dataclass
class Setup:
    server: ServerProcess
    ca: ScratchCA
    base: str
    known: Issued  # a client certificate whose SAN is a configured identity
    stranger: Issued  # one the CA signed, naming no identity

    def http(self, token: str | None = None, cert: Issued | None = None) -> Http:
        context = ssl.create_default_context(cafile=str(self.ca.cert))
        chosen = cert or self.stranger
        context.load_cert_chain(chosen.cert, chosen.key)
        return Http(self.base, token=token, context=context)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("console-tls")
    ca = ScratchCA(root / "ca")
    server_cert = ca.issue("server", server=True)
    known = ca.issue("console", uri=CONSOLE_SAN)
    stranger = ca.issue("stranger", uri="spiffe://statewright.test/elsewhere/x")

    def key(name: str, grant: str) -> str:
        digest = hashlib.sha256(KEYS[name].encode()).hexdigest()
        return f"  - {{name: {name}, sha256: {digest}, grants: [{grant}]}}\n"

    auth = root / "auth.yaml"
    auth.write_text(
        "api_keys:\n"
        + key("reader", "{role: reader}")
        + key("mail-client", '{role: client, definitions: ["mail-*"]}')
        + key("admin", "{role: admin}")
        + f"mtls:\n  - {{san: '{CONSOLE_SAN}', grants: [{{role: client}}]}}\n"
    )
    args = [
        "--tls-cert", str(server_cert.cert),
        "--tls-key", str(server_cert.key),
        "--tls-client-ca", str(ca.cert),
        "--auth-config", str(auth),
        "--http-listen", "127.0.0.1:0",
    ]  # fmt: skip
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    database = f"sqlite:///{root / 'statewright.db'}"
    with running_server(database, definitions, cwd=root, extra_args=args) as server:
        base = console_url(server)
        assert base.startswith("https://")
        yield Setup(server, ca, base, known, stranger)
    assert "Traceback" not in server.log(), server.log()
    for secret in KEYS.values():
        assert secret not in server.log(), "a key was logged"


def test_a_connection_without_a_client_certificate_is_refused(secured: Setup) -> None:
    context = ssl.create_default_context(cafile=str(secured.ca.cert))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        Http(secured.base, context=context).get("/api/v1/definitions")


def test_calls_without_good_credentials_are_unauthenticated(secured: Setup) -> None:
    for http in (
        secured.http(),  # a certificate naming no identity, and no token
        secured.http("sw-not-a-key"),
    ):
        answer = http.get("/api/v1/definitions")
        assert answer.status == 401 and answer.error == ("UNAUTHENTICATED", "UNAUTHENTICATED")
    garbled = secured.http()
    garbled.headers["Authorization"] = "Basic dXNlcjpwYXNz"
    assert garbled.get(W).status == 401
    # The pages themselves are public: only the API behind them needs credentials.
    assert secured.http().get("/workflows").status == 200


def test_roles_scopes_and_the_audit_trail(secured: Setup) -> None:
    admin = secured.http(KEYS["admin"])
    order = admin.post(
        W, {"definition": "order-fulfilment", "input": {"items": ["a"], "price": 1.0}}
    )
    assert order.status == 200, order.body
    order_id = order.body["workflow"]["workflowId"]
    assert admin.get("/api/v1/diagnostics").status == 200

    reader = secured.http(KEYS["reader"])
    assert reader.get(f"{W}/{order_id}").status == 200
    refused = reader.post(W, {"definition": "mail-approval"})
    assert refused.status == 403 and refused.error == ("PERMISSION_DENIED", "PERMISSION_DENIED")
    assert reader.get("/api/v1/diagnostics").status == 403
    diagnostics = reader.events("/api/v1/diagnostics:watch")
    assert diagnostics.status == 403
    diagnostics.close()

    scoped = secured.http(KEYS["mail-client"])
    mail = scoped.post(W, {"definition": "mail-approval", "input": {"topic": "t"}})
    assert mail.status == 200
    mail_id = mail.body["workflow"]["workflowId"]
    assert scoped.post(W, {"definition": "order-fulfilment"}).status == 403
    assert scoped.get(f"{W}/{order_id}").status == 403
    # Out of scope and absent look alike: a refusal never says what exists.
    assert scoped.get(f"{W}/no-such-instance").error == ("PERMISSION_DENIED", "PERMISSION_DENIED")
    assert scoped.get(W).status == 403  # a scoped caller names the definition it lists
    assert scoped.get(W, definition="mail-approval").status == 200
    names = {d["definition"] for d in scoped.get("/api/v1/definitions").body["definitions"]}
    assert names == {"mail-approval"}
    watch = scoped.events(f"{W}/{order_id}/watch")
    assert watch.status == 403
    watch.close()
    resumed = scoped.post(f"{W}/{mail_id}/resume", {"event": "approve"})
    assert resumed.status == 200

    # The mTLS identity is a principal of its own, with the client role it was given.
    console = secured.http(cert=secured.known)
    loop = console.post(W, {"definition": "review-loop"})
    assert loop.status == 200, loop.body
    loop_id = loop.body["workflow"]["workflowId"]
    assert console.post(f"{W}/{loop_id}/cancel", {"reason": "audit"}).status == 200

    # History records who stepped, as over gRPC.
    stream = admin.events(f"{W}/{mail_id}/watch?afterRevision=0")
    actors = [stream.until("step").data["actor"] for _ in range(2)]
    stream.close()
    assert actors == ["key:mail-client", "key:mail-client"]
    stream = admin.events(f"{W}/{loop_id}/watch?afterRevision=0")
    actors = [stream.until("step").data["actor"] for _ in range(2)]
    stream.close()
    assert actors == [f"mtls:{CONSOLE_SAN}"] * 2


def test_a_rotated_certificate_is_served_to_new_connections(secured: Setup) -> None:
    def served() -> bytes:
        context = ssl.create_default_context(cafile=str(secured.ca.cert))
        context.load_cert_chain(secured.stranger.cert, secured.stranger.key)
        url = urlsplit(secured.base)
        with (
            socket.create_connection((url.hostname, url.port), timeout=5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
        ):
            der = tls.getpeercert(binary_form=True)
        assert der is not None
        return der

    before = served()
    rotated = secured.ca.issue("server-rotated", server=True)
    current = Path(secured.server.args[secured.server.args.index("--tls-cert") + 1])
    key = Path(secured.server.args[secured.server.args.index("--tls-key") + 1])
    # As a Secret's files change: the key and its certificate, each replaced whole.
    key.write_bytes(rotated.key.read_bytes())
    current.write_bytes(rotated.cert.read_bytes())
    assert wait_until(lambda: served() != before, timeout=20, interval=0.5)
    assert secured.http(KEYS["reader"]).get("/api/v1/definitions").status == 200


def test_a_scoped_start_over_https_never_answers_with_an_instance_out_of_scope(
    secured: Setup,
) -> None:
    admin = secured.http(KEYS["admin"])
    loop = admin.post(W, {"definition": "review-loop", "input": {"document": "secret"}})
    assert loop.status == 200, loop.body
    loop_id = loop.body["workflow"]["workflowId"]
    scoped = secured.http(KEYS["mail-client"])
    absent = scoped.get(f"{W}/no-such-instance-{loop_id}")
    for policy in ("IF_EXISTS_POLICY_RETURN_EXISTING", "IF_EXISTS_POLICY_UNSPECIFIED"):
        start = {"definition": "mail-approval", "workflowId": loop_id, "ifExists": policy}
        refused = scoped.post(W, start)
        assert refused.status == 403, refused.body
        assert refused.error == ("PERMISSION_DENIED", "PERMISSION_DENIED")
        assert refused.metadata == {} and "secret" not in str(refused.body)
    # Reading it is refused exactly as reading an id that names nothing.
    known = scoped.get(f"{W}/{loop_id}")
    assert (known.status, known.body) == (absent.status, absent.body)
    assert admin.get(f"{W}/{loop_id}").body["workflow"]["revision"] == "1"


def test_credentials_do_not_let_a_foreign_host_or_a_form_through(secured: Setup) -> None:
    # A token in a page's storage does not help a rebound name or another site's form.
    admin = secured.http(KEYS["admin"])
    started = admin.post(W, {"definition": "review-loop"})
    assert started.status == 200, started.body
    path = f"{W}/{started.body['workflow']['workflowId']}"
    rebound = admin.request("GET", path, headers={"Host": "attacker.example"})
    assert rebound.error == ("PERMISSION_DENIED", "HOST_NOT_ALLOWED")
    form = admin.request("POST", f"{path}/cancel", b"", headers={"Content-Type": "text/plain"})
    assert form.error == ("INVALID_ARGUMENT", "UNSUPPORTED_MEDIA_TYPE")
    assert admin.get(path).body["workflow"]["status"] != "WORKFLOW_STATUS_CANCELLED"
