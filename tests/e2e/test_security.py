"""TLS, mTLS, tokens, roles and per-caller limits, against real servers over real TLS.

The certificates, keys and signing keys are made for this module (short-lived, in a
temporary directory). Security does not depend on the storage backend: these servers run
on SQLite files.
"""

from __future__ import annotations

import functools
import hashlib
import json
import socket
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from statewright.v1 import workflow_service_pb2 as pb

from tests.support.api import Client, error_info, expect_error, uid
from tests.support.certs import ScratchCA
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess
from tests.support.tasks import Tasks

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED
ISSUER = "https://issuer.statewright.test/"
KEYS = {
    "reader": "sw-reader-4f1c2a",
    "mail-client": "sw-mail-client-88d0e1",
    "payments-worker": "sw-payments-worker-19ab33",
    "admin": "sw-admin-7e22c9",
    "mail-admin": "sw-mail-admin-5a6b7c",
    "mail-operator": "sw-mail-operator-3c9d0f",
}


@dataclass
class Setup:
    root: Path
    ca: ScratchCA
    signing_key: Any
    server: ServerProcess

    def channel(self, token: str | None = None, cert: tuple[bytes, bytes] | None = None) -> Any:
        tls = grpc.ssl_channel_credentials(
            root_certificates=self.ca.pem(),
            private_key=cert[0] if cert else None,
            certificate_chain=cert[1] if cert else None,
        )
        if token is not None:
            tls = grpc.composite_channel_credentials(tls, grpc.access_token_call_credentials(token))
        return grpc.secure_channel(self.server.target, tls)

    def client(self, token: str | None = None) -> Client:
        return Client(self.server.target, channel=self.channel(token))

    def token(self, **claims: Any) -> str:
        now = int(time.time())
        body = {"iss": ISSUER, "aud": "statewright", "sub": "alice", "iat": now, "exp": now + 600}
        body.update(claims)
        return jwt.encode(body, self.signing_key, algorithm="RS256", headers={"kid": "k1"})


def _auth_config(root: Path) -> tuple[Path, Any]:
    signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing.public_key()))
    jwk["kid"] = "k1"
    (root / "jwks.json").write_text(json.dumps({"keys": [jwk]}))

    def key(name: str, grant: str) -> str:
        digest = hashlib.sha256(KEYS[name].encode()).hexdigest()
        return f"  - {{name: {name}, sha256: {digest}, grants: [{grant}]}}\n"

    text = (
        "api_keys:\n"
        + key("reader", "{role: reader}")
        + key("mail-client", '{role: client, definitions: ["mail-*"]}')
        + key("payments-worker", "{role: worker, queues: [payments]}")
        + key("admin", "{role: admin}")
        + key("mail-admin", '{role: admin, definitions: ["mail-*"]}')
        + key("mail-operator", '{role: operator, definitions: ["mail-*"]}')
        + f"jwt:\n  issuer: {ISSUER}\n  audience: statewright\n  jwks_file: jwks.json\n"
        + "  roles_claim: roles\n"
        + "mtls:\n  - {san: 'spiffe://statewright.test/worker/*', grants: [{role: worker}]}\n"
    )
    path = root / "auth.yaml"
    path.write_text(text)
    return path, signing


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("tls")
    ca = ScratchCA(root / "ca")
    server_cert = ca.issue("server", server=True)
    auth, signing = _auth_config(root)
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    args = [
        "--tls-cert", str(server_cert.cert),
        "--tls-key", str(server_cert.key),
        "--auth-config", str(auth),
        "--health-listen", "127.0.0.1:0",
        "--rate-limit", "200",
    ]  # fmt: skip
    database = f"sqlite:///{root / 'statewright.db'}"
    with running_server(database, definitions, cwd=root, extra_args=args) as server:
        yield Setup(root, ca, signing, server)
    assert "Traceback" not in server.log(), server.log()
    for secret in KEYS.values():
        assert secret not in server.log(), "a key was logged"


def _health_port(server: ServerProcess) -> int:
    line = next(x for x in server.lines if "health checks (plaintext) on" in x)
    return int(line.rsplit(":", 1)[1])


def test_plaintext_is_refused_and_the_health_port_needs_nothing(tls: Setup) -> None:
    with grpc.insecure_channel(tls.server.target) as plain:
        health: Any = health_pb2_grpc.HealthStub(plain)
        with pytest.raises(grpc.RpcError) as refused:
            health.Check(health_pb2.HealthCheckRequest(), timeout=3)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    with grpc.insecure_channel(f"127.0.0.1:{_health_port(tls.server)}") as probe:
        health = health_pb2_grpc.HealthStub(probe)
        answer = health.Check(health_pb2.HealthCheckRequest(service="readiness"), timeout=5)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING


def test_calls_without_good_credentials_are_unauthenticated(tls: Setup) -> None:
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = jwt.encode(
        {"iss": ISSUER, "aud": "statewright", "sub": "mallory", "exp": int(time.time()) + 60},
        stranger,
        algorithm="RS256",
        headers={"kid": "k1"},
    )
    tokens = {
        "missing": None,
        "unknown key": "sw-not-a-key",
        "expired": tls.token(exp=int(time.time()) - 3600, roles=["admin"]),
        "wrong audience": tls.token(aud="another-service", roles=["admin"]),
        "wrong signature": forged,
    }
    for case, token in tokens.items():
        with tls.client(token) as c:
            call = functools.partial(c.get, uid("any"))
            info = expect_error(call, UNAUTHENTICATED, "UNAUTHENTICATED")
            assert info.domain == "statewright.dev", case


@pytest.mark.parametrize(
    ("claim", "value"),
    [
        ("roles", {"admin": True, "client": True}),
        ("roles", 42),
        ("roles", "admin"),
        ("roles", [{"role": "admin"}]),
        ("sub", {"id": "alice"}),
        ("sub", 7),
        ("exp", "never"),
        ("aud", {"statewright": True}),
    ],
)
def test_a_token_claim_of_the_wrong_type_is_unauthenticated_naming_it(
    tls: Setup, claim: str, value: Any
) -> None:
    # Signed with the trusted key: only the claim's type is wrong.
    with tls.client(tls.token(**{claim: value})) as holder:
        info = expect_error(lambda: holder.get(uid("any")), UNAUTHENTICATED, "TOKEN_CLAIM_INVALID")
        assert info.metadata["claim"] == claim
        # Nothing was granted: a map's keys never become roles.
        info = expect_error(holder.diagnostics, UNAUTHENTICATED, "TOKEN_CLAIM_INVALID")
        assert info.metadata["claim"] == claim


def test_roles_and_scopes_are_enforced_without_saying_what_exists(tls: Setup) -> None:
    with tls.client(KEYS["admin"]) as admin:
        mail = admin.start("mail-approval", input={"topic": "t"}).workflow.workflow_id
        order = admin.start(
            "order-fulfilment", input={"items": ["a"], "price": 1.0}
        ).workflow.workflow_id
    with tls.client(KEYS["reader"]) as reader:
        assert reader.get(mail).workflow_id == mail
        expect_error(lambda: reader.start("mail-approval"), DENIED, "PERMISSION_DENIED")
        expect_error(reader.diagnostics, DENIED, "PERMISSION_DENIED")
    with tls.client(KEYS["mail-client"]) as scoped:
        assert scoped.start("mail-approval", input={"topic": "x"}).workflow.state
        expect_error(lambda: scoped.start("order-fulfilment"), DENIED, "PERMISSION_DENIED")
        expect_error(lambda: scoped.get(order), DENIED, "PERMISSION_DENIED")
        # An instance that does not exist is refused the same way: no existence leaks.
        expect_error(lambda: scoped.get(uid("nothing")), DENIED, "PERMISSION_DENIED")
        names = {d.definition for d in scoped.definitions().definitions}
        assert names == {"mail-approval"}
    with tls.client(KEYS["payments-worker"]) as worker:
        tasks = Tasks(worker.channel)
        (charge,) = tasks.poll("payments", wait=5)
        assert charge.workflow == f"workflows/{order}"
        expect_error(lambda: tasks.poll("shipping", wait=0), DENIED, "PERMISSION_DENIED")
        expect_error(lambda: worker.get(order), DENIED, "PERMISSION_DENIED")
        tasks.complete(charge, {"id": "ch-1"})


def test_a_jwt_with_roles_is_a_principal(tls: Setup) -> None:
    with tls.client(tls.token(roles=["client"])) as alice:
        started = alice.start("mail-approval", input={"topic": "jwt"}).workflow
        assert alice.resume(started.workflow_id, "approve").workflow.status
        expect_error(alice.diagnostics, DENIED, "PERMISSION_DENIED")


def test_only_an_admin_may_delete_an_instance(tls: Setup) -> None:
    with tls.client(KEYS["mail-client"]) as scoped:
        started = scoped.start("mail-approval", input={"topic": "erase"}).workflow.workflow_id
        request = pb.DeleteWorkflowRequest(name=f"workflows/{started}", force=True)
        # A client may cancel what its grant covers, but erasing is an admin's.
        expect_error(
            lambda: scoped.stub.DeleteWorkflow(request, timeout=10), DENIED, "PERMISSION_DENIED"
        )
        assert scoped.get(started).workflow_id == started
        cancelled = scoped.cancel(started, reason="no longer needed")
        expect_error(
            lambda: scoped.stub.DeleteWorkflow(request, timeout=10), DENIED, "PERMISSION_DENIED"
        )
    with tls.client(KEYS["admin"]) as admin:
        removed = admin.stub.DeleteWorkflow(request, timeout=10)
        assert removed.workflow.revision == cancelled.revision and not removed.cancelled
        expect_error(lambda: admin.get(started), grpc.StatusCode.NOT_FOUND, "WORKFLOW_NOT_FOUND")


def test_an_operator_repairs_instances_of_its_definitions_only(tls: Setup) -> None:
    with tls.client(KEYS["admin"]) as admin:
        mail = admin.start("mail-approval", input={"topic": "repair"}).workflow
        order = admin.start("order-fulfilment", input={"items": ["a"], "price": 1.0}).workflow
    reset = pb.ResetWorkflowRequest(name=mail.name, to_revision=1, reason="ops", dry_run=True)
    with tls.client(KEYS["mail-operator"]) as operator:
        assert operator.stub.ResetWorkflow(reset, timeout=10).dry_run
        assert operator.get(mail.workflow_id).revision == mail.revision  # an operator reads
        other = pb.ResetWorkflowRequest(name=order.name, to_revision=1)
        expect_error(
            lambda: operator.stub.ResetWorkflow(other, timeout=10), DENIED, "PERMISSION_DENIED"
        )
        # Repairing is not starting: an operator starts nothing.
        expect_error(lambda: operator.start("mail-approval"), DENIED, "PERMISSION_DENIED")
        pause = pb.PauseWorkflowRequest(name=mail.name, reason="ops")
        assert operator.stub.PauseWorkflow(pause, timeout=10).workflow.pause.actor
        unpause = pb.UnpauseWorkflowRequest(name=mail.name)
        assert not operator.stub.UnpauseWorkflow(unpause, timeout=10).workflow.paused
        other_pause = pb.PauseWorkflowRequest(name=order.name)
        expect_error(
            lambda: operator.stub.PauseWorkflow(other_pause, timeout=10),
            DENIED,
            "PERMISSION_DENIED",
        )
    with tls.client(KEYS["mail-client"]) as client:
        expect_error(
            lambda: client.stub.ResetWorkflow(reset, timeout=10), DENIED, "PERMISSION_DENIED"
        )
        expect_error(
            lambda: client.stub.PauseWorkflow(pause, timeout=10), DENIED, "PERMISSION_DENIED"
        )


def test_a_caller_over_its_rate_gets_resource_exhausted_with_retry_info(tls: Setup) -> None:
    with tls.client(tls.token(sub="hasty", roles=["reader"])) as hasty:
        stub = hasty.stub
        # Sent together, not one after another: how fast a loaded machine answers each
        # call must not decide whether the caller goes over its rate.
        calls = [
            stub.ListDefinitions.future(pb.ListDefinitionsRequest(), timeout=30)
            for _ in range(1000)
        ]
        refused = None
        for call in calls:
            error = call.exception()
            if refused is None and isinstance(error, grpc.RpcError):
                refused = error
        assert refused is not None, "1,000 calls at once never met a rate of 200/s"
        assert refused.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert error_info(refused).reason == "RATE_LIMITED"
        status = rpc_status.from_call(refused)  # type: ignore[arg-type]
        assert status is not None
        delays = []
        for detail in status.details:
            retry = error_details_pb2.RetryInfo()
            if detail.Unpack(retry):
                delays.append(retry.retry_delay.ToTimedelta().total_seconds())
        assert len(delays) == 1 and 0 < delays[0] <= 1.0


def _served_certificate(target: str, ca: Path) -> x509.Certificate:
    host, port = target.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(["h2"])
    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as wrapped,
    ):
        der = wrapped.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def test_a_rotated_certificate_is_served_without_a_restart(tmp_path: Path) -> None:
    ca = ScratchCA(tmp_path / "ca")
    first = ca.issue("server", server=True, common="first")
    definitions = definitions_dir(tmp_path / "definitions", test_definitions=False)
    args = ["--tls-cert", str(first.cert), "--tls-key", str(first.key)]
    database = f"sqlite:///{tmp_path / 'statewright.db'}"
    with running_server(database, definitions, cwd=tmp_path, extra_args=args) as server:
        before = _served_certificate(server.target, ca.cert)
        assert before.subject.rfc4514_string() == "CN=first"
        second = ca.issue("next", server=True, common="second")
        # Replace the files in place, as a Secret update does.
        first.key.write_bytes(second.key.read_bytes())
        first.cert.write_bytes(second.cert.read_bytes())
        after = _served_certificate(server.target, ca.cert)
        assert after.subject.rfc4514_string() == "CN=second"
        assert "TLS certificate reloaded" in server.log()


def test_mtls_needs_a_client_certificate_and_names_the_principal(tmp_path: Path) -> None:
    ca = ScratchCA(tmp_path / "ca")
    served = ca.issue("server", server=True)
    worker = ca.issue("worker", uri="spiffe://statewright.test/worker/payments")
    stranger_ca = ScratchCA(tmp_path / "other", name="another CA")
    stranger = stranger_ca.issue("stranger", uri="spiffe://statewright.test/worker/x")
    auth, _ = _auth_config(tmp_path)
    definitions = definitions_dir(tmp_path / "definitions", test_definitions=False)
    args = [
        "--tls-cert", str(served.cert),
        "--tls-key", str(served.key),
        "--tls-client-ca", str(ca.cert),
        "--auth-config", str(auth),
    ]  # fmt: skip
    database = f"sqlite:///{tmp_path / 'statewright.db'}"
    with running_server(database, definitions, cwd=tmp_path, extra_args=args) as server:
        setup = Setup(tmp_path, ca, None, server)
        for cert in (None, stranger.pem()):
            with setup.channel(cert=cert) as channel:
                with pytest.raises(grpc.RpcError) as refused:
                    Tasks(channel).poll("payments", wait=0)
                assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        with setup.channel(cert=worker.pem()) as channel:
            assert Tasks(channel).poll("payments", wait=0) == []
            client = Client(server.target, channel=channel)
            expect_error(lambda: client.get(uid("x")), DENIED, "PERMISSION_DENIED")


def test_history_and_diagnostics_record_each_steps_principal(tls: Setup) -> None:
    with tls.client(KEYS["mail-client"]) as scoped:
        wid = scoped.start("mail-approval", input={"topic": "audit"}).workflow.workflow_id
    with tls.client(tls.token(sub="bob", roles=["client"])) as bob:
        bob.resume(wid, "approve")
        request = pb.WatchWorkflowRequest(name=f"workflows/{wid}", after_revision=0)
        steps = list(bob.stub.WatchWorkflow(request, timeout=10))
    assert [(m.revision, m.actor) for m in steps] == [(1, "key:mail-client"), (2, "jwt:bob")]
    assert {t.actor for t in steps[1].transitions} == {"jwt:bob"}
    with tls.client(KEYS["admin"]) as admin:
        recent = admin.workflow_diagnostics(wid).diagnostics.recent_transitions
        # A finished instance's session may be gone; what is shown names its principal.
        assert all(t.actor in ("key:mail-client", "jwt:bob") for t in recent)


# -- a scoped caller never reads, nor learns of, an instance out of its scope ---------------

RETURN_EXISTING = pb.IF_EXISTS_POLICY_RETURN_EXISTING
RESTART = pb.IF_EXISTS_POLICY_RESTART


def _refusal(call: Any) -> str:
    """The details of the PERMISSION_DENIED ``call`` must get, with no metadata."""
    with pytest.raises(grpc.RpcError) as caught:
        result = call()
        if hasattr(result, "__next__"):
            next(result)  # a stream: its first message, or its refusal
    err: Any = caught.value
    info = error_info(err)
    assert (err.code(), info.reason, dict(info.metadata)) == (DENIED, "PERMISSION_DENIED", {})
    return str(err.details())


def test_a_start_never_answers_with_or_reveals_an_instance_out_of_scope(tls: Setup) -> None:
    with tls.client(KEYS["admin"]) as admin:
        review = admin.start("review-loop", input={"document": "secret"}).workflow.workflow_id
    with tls.client(KEYS["mail-client"]) as scoped:
        absent = uid("absent")
        answers = {
            _refusal(
                functools.partial(
                    scoped.start, "mail-approval", workflow_id=review, if_exists=policy
                )
            )
            for policy in (RETURN_EXISTING, pb.IF_EXISTS_POLICY_UNSPECIFIED, RESTART)
        }
        # The same answer as for an id that names nothing at all (a start on which would
        # create it), so the refusal tells nothing of what the id is used for.
        assert answers == {"not allowed to call StartWorkflow on this target"}
        assert scoped.start("mail-approval", workflow_id=absent).workflow.workflow_id == absent
        # Its own instances answer as ever.
        again = scoped.start("mail-approval", workflow_id=absent, if_exists=RETURN_EXISTING)
        assert again.workflow.workflow_id == absent and not again.created
        expect_error(
            lambda: scoped.start("mail-approval", workflow_id=absent),
            grpc.StatusCode.ALREADY_EXISTS,
            "WORKFLOW_ALREADY_EXISTS",
        )
    with tls.client(KEYS["admin"]) as admin:
        assert admin.get(review).revision == 1  # untouched


def test_a_replayed_request_id_never_answers_with_an_instance_out_of_scope(tls: Setup) -> None:
    wid, rid = uid("reused"), uid("rid")
    with tls.client(KEYS["mail-client"]) as scoped:
        first = scoped.start("mail-approval", workflow_id=wid, request_id=rid).workflow
        # A retry within the window gets the original answer...
        retried = scoped.start("mail-approval", workflow_id=wid, request_id=rid).workflow
        assert retried == first
    with tls.client(KEYS["admin"]) as admin:
        admin.stub.DeleteWorkflow(pb.DeleteWorkflowRequest(name=f"workflows/{wid}", force=True))
        admin.start("review-loop", workflow_id=wid, input={"document": "not yours"})
    with tls.client(KEYS["mail-client"]) as scoped:
        # ...but never one that now stands for an instance it may not see.
        refused = _refusal(lambda: scoped.start("mail-approval", workflow_id=wid, request_id=rid))
        assert refused == "not allowed to call StartWorkflow on this target"


def _instance_calls(client: Client, wid: str) -> dict[str, Any]:
    stub, name = client.stub, f"workflows/{wid}"
    watch = pb.WatchWorkflowRequest(name=name, after_revision=0)
    delete = pb.DeleteWorkflowRequest(name=name, force=True)
    return {
        "get": lambda: client.get(wid),
        "watch": lambda: stub.WatchWorkflow(watch, timeout=10),
        "resume": lambda: client.resume(wid, "approve"),
        "signal": lambda: client.signal(wid, "score", {"score": 1}),
        "cancel": lambda: client.cancel(wid),
        "diagnostics": lambda: client.workflow_diagnostics(wid),
        "delete": lambda: stub.DeleteWorkflow(delete, timeout=10),
    }


def test_every_call_naming_an_out_of_scope_instance_is_refused_as_an_absent_one(
    tls: Setup,
) -> None:
    with tls.client(KEYS["admin"]) as admin:
        review = admin.start("review-loop").workflow.workflow_id
    absent = uid("absent")
    for key in ("mail-client", "mail-admin"):
        with tls.client(KEYS[key]) as scoped:
            for (what, present), absent_call in zip(
                _instance_calls(scoped, review).items(),
                _instance_calls(scoped, absent).values(),
                strict=True,
            ):
                if key == "mail-client" and what in ("diagnostics", "delete"):
                    continue  # refused for want of the admin role, before any lookup
                assert _refusal(present) == _refusal(absent_call), (key, what)
    with tls.client(KEYS["admin"]) as admin:
        assert admin.get(review).revision == 1  # nothing reached it
    with tls.client(KEYS["mail-admin"]) as scoped_admin:
        own = scoped_admin.start("mail-approval", input={"topic": "mine"}).workflow.workflow_id
        assert scoped_admin.workflow_diagnostics(own).diagnostics.name == f"workflows/{own}"


def test_a_task_out_of_a_workers_queues_is_refused_as_an_absent_one(tls: Setup) -> None:
    with tls.client(KEYS["admin"]) as admin:
        drafting = admin.start("mail-approval", input={"topic": "t", "drafter": "worker"})
        wid = drafting.workflow.workflow_id
        (draft,) = Tasks(admin.channel).list(workflow=f"workflows/{wid}")
        assert draft.queue == "mail.drafts"
    with tls.client(KEYS["payments-worker"]) as worker:
        tasks = Tasks(worker.channel)
        other_queue = _refusal(lambda: tasks.get(draft.name))
        no_such_task = _refusal(lambda: tasks.get(f"workflows/{wid}/tasks/999"))
        no_such_instance = _refusal(lambda: tasks.get(f"workflows/{uid('absent')}/tasks/1"))
        assert other_queue == no_such_task == no_such_instance
