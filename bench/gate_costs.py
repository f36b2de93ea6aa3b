"""CPU per call of the call gate's decision, with and without a verified token.

Not a test. Every call to statewrightd passes the one interceptor (security/interceptor.py,
``CallGate``): plaintext or not, it finds the principal, checks the method's role and
scopes and charges the caller's rate. With authentication configured it also reads the
bearer token, whose verification is cached: the benchmark tells what that adds to a call,
apart from the TLS records gRPC writes (bench/security_bench.py --engine go measures
those, with the bare echo).

    .venv/bin/python bench/gate_costs.py [calls-per-slice]   # default 20000

It times, in one process on one asyncio loop, CPU time, best of several slices:
``admit`` for a StartWorkflow with no authentication (how a plaintext server runs), with a
cached RS256 JWT, and with a cached API key; and an empty ``await`` (the floor).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from statewright.v1 import workflow_service_pb2 as pb

from statewrightd.app.wiring import Application
from statewrightd.security.auth_config import parse_auth_config
from statewrightd.security.authn import Authenticator
from statewrightd.security.interceptor import CallerLimits, CallGate
from statewrightd.security.roles import METHOD_RULES

METHOD = "/statewright.v1.WorkflowService/StartWorkflow"
ISSUER = "https://bench.statewright.test/"
API_KEY = "bench-api-key-0123456789"
SLICES = 5


def _jwt_config(root: Path) -> tuple[str, str]:
    """An auth config that accepts RS256 JWTs from a JWKS file and one API key, and a
    token for it (the same role, ``client``, either way)."""
    signing = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(signing.public_key()))
    jwk["kid"] = "bench"
    (root / "jwks.json").write_text(json.dumps({"keys": [jwk]}))
    digest = hashlib.sha256(API_KEY.encode()).hexdigest()
    text = (
        f"jwt:\n  issuer: {ISSUER}\n  audience: statewright\n  jwks_file: jwks.json\n"
        "  roles_claim: roles\n"
        f"api_keys:\n  - name: bench\n    sha256: {digest}\n    grants: [{{role: client}}]\n"
    )
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": "statewright", "sub": "bench", "roles": ["client"]}
    token = jwt.encode(
        {**claims, "iat": now, "exp": now + 3600},
        signing,
        algorithm="RS256",
        headers={"kid": "bench"},
    )
    return text, token


def _gate(authenticator: Authenticator | None) -> CallGate:
    # A StartWorkflow of a caller whose grants reach every definition never asks the
    # application anything: the gate is measured alone.
    return CallGate(cast(Application, None), authenticator, CallerLimits())


def _cpu_per_call(run: Callable[[], Awaitable[Any]], calls: int) -> float:
    async def slices() -> float:
        best = float("inf")
        for _ in range(SLICES):
            began = time.process_time()
            for _ in range(calls):
                await run()
            best = min(best, (time.process_time() - began) / calls)
        return best

    return asyncio.run(slices())


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20_000
    # The JWKS file stays while the calls run: the authenticator watches it.
    with tempfile.TemporaryDirectory(prefix="gate-costs-") as root:
        text, token = _jwt_config(Path(root))
        authenticated = Authenticator(parse_auth_config(text, "bench", base=Path(root)))
        authenticated.preload()
        figures = _measure(authenticated, token, calls)
    width = max(map(len, figures))
    for name, micros in figures.items():
        print(f"{name:<{width}}  {micros:6.2f} us of CPU a call")
    extra = figures["admit, a cached JWT"] - figures["admit, no authentication"]
    print(f"a cached JWT adds {extra:.2f} us a call to the gate's decision")


def _measure(authenticated: Authenticator, token: str, calls: int) -> dict[str, float]:
    rule = METHOD_RULES[METHOD]
    request = pb.StartWorkflowRequest(definition="order-pricing", version=1)
    open_gate, closed_gate = _gate(None), _gate(authenticated)

    def admit(gate: CallGate, metadata: tuple[tuple[str, str], ...]) -> Callable[[], Any]:
        return lambda: gate.admit(rule, "StartWorkflow", request, metadata, {})

    async def nothing() -> None:
        return None

    cases = {
        "an empty await (the floor)": nothing,
        "admit, no authentication": admit(open_gate, ()),
        "admit, a cached JWT": admit(closed_gate, (("authorization", f"Bearer {token}"),)),
        "admit, a cached API key": admit(closed_gate, (("authorization", f"Bearer {API_KEY}"),)),
    }
    # The first call of each verifies its token (RS256) and caches it; the slices then
    # measure what every later call pays.
    for case in cases.values():
        asyncio.run(case())
    return {name: _cpu_per_call(case, calls) * 1e6 for name, case in cases.items()}


if __name__ == "__main__":
    main()
