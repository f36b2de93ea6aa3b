"""The auth config, the authenticator and the role rules, without a server."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from statewrightd.errors import Unauthenticated
from statewrightd.security.auth_config import AuthConfigInvalid, parse_auth_config
from statewrightd.security.authn import Authenticator
from statewrightd.security.roles import (
    METHOD_RULES,
    Grant,
    MethodRule,
    Principal,
    Role,
    Scope,
    allows,
    unscoped,
)

KEY = "sw_test_key_0123456789"
ISSUER = "https://issuer.test/"


def _jwks(tmp_path: Path) -> tuple[Path, Any, Any]:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    entries = []
    for kid, key in (("rsa-1", rsa_key), ("ec-1", ec_key)):
        jwk = json.loads(
            jwt.algorithms.get_default_algorithms()[
                "RS256" if kid.startswith("rsa") else "ES256"
            ].to_jwk(key.public_key())
        )
        jwk["kid"] = kid
        entries.append(jwk)
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps({"keys": entries}))
    return path, rsa_key, ec_key


def _config(tmp_path: Path, jwks: Path) -> str:
    digest = hashlib.sha256(KEY.encode()).hexdigest()
    return f"""
api_keys:
  - name: ci-bot
    sha256: {digest}
    grants: [{{role: client, definitions: ["mail-*"]}}]
jwt:
  issuer: {ISSUER}
  audience: statewright
  jwks_file: {jwks.name}
  roles_claim: roles
principals:
  - name: "jwt:payments-*"
    grants: [{{role: worker, queues: [payments]}}]
"""


def _token(key: Any, alg: str, kid: str, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": "statewright", "sub": "alice", "exp": now + 300, "iat": now}
    body.update(claims)
    # Signed as given: PyJWT's own encode refuses some of the wrong types tested here.
    payload = json.dumps(body).encode()
    return jwt.PyJWS().encode(payload, key, algorithm=alg, headers={"kid": kid, "typ": "JWT"})


def _authenticate(authn: Authenticator, token: str | None) -> Any:
    metadata = [("authorization", f"Bearer {token}")] if token is not None else []
    return asyncio.run(authn.authenticate(metadata, {}))


def test_keys_and_tokens_become_principals_with_their_grants(tmp_path: Path) -> None:
    jwks, rsa_key, ec_key = _jwks(tmp_path)
    config = parse_auth_config(_config(tmp_path, jwks), base=tmp_path)
    authn = Authenticator(config)
    authn.preload()
    bot = _authenticate(authn, KEY)
    assert bot.name == "key:ci-bot"
    assert bot.grants == (Grant(Role.CLIENT, definitions=("mail-*",)),)
    alice = _authenticate(authn, _token(rsa_key, "RS256", "rsa-1", roles=["reader", "bogus"]))
    assert alice.name == "jwt:alice" and alice.grants == (Grant(Role.READER),)
    worker = _authenticate(authn, _token(ec_key, "ES256", "ec-1", sub="payments-7"))
    assert worker.grants == (Grant(Role.WORKER, queues=("payments",)),)


@pytest.mark.parametrize(
    ("case", "claims", "message"),
    [
        ("expired", {"exp": int(time.time()) - 3600}, "expired"),
        ("wrong audience", {"aud": "someone-else"}, "audience"),
        ("wrong issuer", {"iss": "https://evil.test/"}, "issuer"),
    ],
)
def test_bad_tokens_are_unauthenticated(
    tmp_path: Path, case: str, claims: dict[str, Any], message: str
) -> None:
    jwks, rsa_key, _ = _jwks(tmp_path)
    authn = Authenticator(parse_auth_config(_config(tmp_path, jwks), base=tmp_path))
    with pytest.raises(Unauthenticated) as refused:
        _authenticate(authn, _token(rsa_key, "RS256", "rsa-1", **claims))
    assert message in refused.value.message, case


WRONG_TYPES = [
    ("roles", {"admin": True}),
    ("roles", 7),
    ("roles", "admin"),
    ("roles", [["admin"]]),
    ("roles", [{"role": "admin"}]),
    ("sub", {"name": "alice"}),
    ("sub", 42),
    ("sub", ""),
    ("sub", "line\nbreak"),
    ("sub", "x" * 300),
    ("exp", "tomorrow"),
    ("exp", [1]),
    ("nbf", {"at": 1}),
    ("iat", True),
    ("exp", float("nan")),
    ("nbf", float("inf")),
    ("aud", {"aud": "statewright"}),
    ("aud", 5),
    ("iss", ["https://issuer.test/"]),
]


@pytest.mark.parametrize(("claim", "value"), WRONG_TYPES)
def test_a_claim_of_the_wrong_type_is_unauthenticated_naming_the_claim(
    tmp_path: Path, claim: str, value: Any
) -> None:
    jwks, rsa_key, _ = _jwks(tmp_path)
    authn = Authenticator(parse_auth_config(_config(tmp_path, jwks), base=tmp_path))
    with pytest.raises(Unauthenticated) as refused:
        _authenticate(authn, _token(rsa_key, "RS256", "rsa-1", **{claim: value}))
    assert refused.value.reason == "TOKEN_CLAIM_INVALID", refused.value
    assert refused.value.metadata == {"claim": claim}
    assert f"'{claim}' claim" in refused.value.message


def test_absent_or_null_roles_give_no_role_and_a_missing_subject_is_named(tmp_path: Path) -> None:
    jwks, rsa_key, _ = _jwks(tmp_path)
    authn = Authenticator(parse_auth_config(_config(tmp_path, jwks), base=tmp_path))
    assert _authenticate(authn, _token(rsa_key, "RS256", "rsa-1", roles=None)).grants == ()
    assert _authenticate(authn, _token(rsa_key, "RS256", "rsa-1", sub="bob")).grants == ()
    body = {"iss": ISSUER, "aud": "statewright", "exp": int(time.time()) + 300}
    token = jwt.encode(body, rsa_key, algorithm="RS256", headers={"kid": "rsa-1"})
    with pytest.raises(Unauthenticated) as refused:
        _authenticate(authn, token)
    assert (refused.value.reason, refused.value.metadata) == (
        "TOKEN_CLAIM_INVALID",
        {"claim": "sub"},
    )


def test_a_forged_signature_an_unknown_key_and_no_credentials_are_refused(tmp_path: Path) -> None:
    jwks, _, _ = _jwks(tmp_path)
    authn = Authenticator(parse_auth_config(_config(tmp_path, jwks), base=tmp_path))
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(Unauthenticated, match="signature"):
        _authenticate(authn, _token(stranger, "RS256", "rsa-1"))
    with pytest.raises(Unauthenticated, match="key the server does not know"):
        _authenticate(authn, _token(stranger, "RS256", "rsa-9"))
    with pytest.raises(Unauthenticated, match="needs credentials"):
        _authenticate(authn, None)
    with pytest.raises(Unauthenticated):
        _authenticate(authn, "not-a-key")


def test_every_problem_of_a_bad_config_is_reported_with_its_path() -> None:
    text = """
api_keys:
  - name: bot
    sha256: nothex
    grants: [{role: superuser}]
jwt:
  issuer: https://x/
  jwks_file: a.json
  jwks_url: https://x/jwks
unknown: 1
"""
    with pytest.raises(AuthConfigInvalid) as bad:
        parse_auth_config(text)
    paths = sorted(p.path for p in bad.value.problems)
    assert paths == [
        "api_keys[0].grants[0].role",
        "api_keys[0].sha256",
        "jwt",
        "jwt.audience",
        "unknown",
    ]


def test_every_rpc_has_a_rule_and_scopes_match_globs() -> None:
    from statewright.v1 import (
        batch_service_pb2,
        schedule_service_pb2,
        task_service_pb2,
        workflow_service_pb2,
    )

    for module, service in (
        (batch_service_pb2, "BatchService"),
        (workflow_service_pb2, "WorkflowService"),
        (task_service_pb2, "TaskService"),
        (schedule_service_pb2, "ScheduleService"),
    ):
        for method in module.DESCRIPTOR.services_by_name[service].methods:
            assert f"/statewright.v1.{service}/{method.name}" in METHOD_RULES, method.name
    grants = [Grant(Role.CLIENT, definitions=("mail-*",))]
    assert grants[0].covers(Role.READER) and not grants[0].covers(Role.WORKER)
    assert allows(grants, Scope.DEFINITION, "mail-approval")
    assert not allows(grants, Scope.DEFINITION, "order-fulfilment")
    assert not unscoped(grants, Scope.DEFINITION) and unscoped(grants, Scope.NONE)
    assert Grant(Role.ADMIN).covers(Role.WORKER)


def test_readers_see_schedules_and_only_admins_change_them() -> None:
    service = "/statewright.v1.ScheduleService/"
    for method in ("GetSchedule", "ListSchedules"):
        assert METHOD_RULES[service + method] == MethodRule(Role.READER, Scope.NONE)
    for method in ("CreateSchedule", "UpdateSchedule", "DeleteSchedule", "PauseSchedule",
                   "UnpauseSchedule", "TriggerSchedule", "BackfillSchedule"):  # fmt: skip
        assert METHOD_RULES[service + method] == MethodRule(Role.ADMIN, Scope.NONE)
    # A client, even of the schedule's definition, does not reach them: the starts a
    # schedule makes are the server's own, at times to come.
    assert not Grant(Role.CLIENT, definitions=("mail-*",)).covers(Role.ADMIN)


def test_operators_repair_instances_of_their_definitions_and_start_none() -> None:
    service = "/statewright.v1.WorkflowService/"
    for method in (
        "RetryWorkflow",
        "ResetWorkflow",
        "MigrateWorkflow",
        "PauseWorkflow",
        "UnpauseWorkflow",
    ):
        rule = METHOD_RULES[service + method]
        assert rule == MethodRule(Role.OPERATOR, Scope.DEFINITION)
        operator = Principal("key:ops", (Grant(Role.OPERATOR, definitions=("mail-*",)),))
        grants = operator.grants_for(rule)
        assert allows(grants, Scope.DEFINITION, "mail-approval")
        assert not allows(grants, Scope.DEFINITION, "order-fulfilment")
        # A client starts and signals instances; repairing them is not its to do.
        assert not Principal("key:app", (Grant(Role.CLIENT),)).grants_for(rule)
        assert Principal("key:root", (Grant(Role.ADMIN),)).grants_for(rule)
    grant = Grant(Role.OPERATOR)
    assert grant.covers(Role.READER) and not grant.covers(Role.CLIENT)


def test_new_key_prints_a_key_whose_entry_authenticates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from statewrightd.cli import main

    assert main(["auth", "new-key", "ci-bot", "--role", "worker", "--queues", "payments"]) == 0
    lines = capsys.readouterr().out.splitlines()
    key = lines[1]
    entry = "\n".join(
        lines[lines.index("# Its entry under api_keys: in the auth config file:") + 1 :]
    )
    path = tmp_path / "auth.yaml"
    path.write_text("api_keys:\n" + entry + "\n")
    assert main(["auth", "check", str(path)]) == 0
    principal = _authenticate(Authenticator(parse_auth_config(path.read_text())), key)
    assert principal.name == "key:ci-bot"
    assert principal.grants == (Grant(Role.WORKER, queues=("payments",)),)
    path.write_text("api_keys: [{name: x}]\n")
    assert main(["auth", "check", str(path)]) == 1
    assert "api_keys[0].sha256" in capsys.readouterr().err
