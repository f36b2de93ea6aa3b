"""A real server over mTLS that wants credentials, for the Python client's end-to-end tests.

Its CA, certificates and keys are made when it starts and live an hour; its API keys are
random. ``--tls-client-ca`` makes every connection present a certificate, so a client
connects with the CA, a certificate and, unless the certificate's identity is enough, a
token: what ``environ()`` gives, as the ``STATEWRIGHT_*`` variables the client reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.certs import Issued, ScratchCA
from tests.support.deployment import definitions_dir, running_server
from tests.support.server import ServerProcess

WORKER_SAN = "spiffe://statewright.test/worker/fulfilment"
RATE = 50  # requests per second and caller, with as many at once


def _keys() -> dict[str, str]:
    return {name: f"sw-e2e-{name}-{uuid.uuid4().hex}" for name in ("admin", "reader", "hasty")}


@dataclass
class Secured:
    server: ServerProcess
    ca: ScratchCA
    worker: Issued  # a client certificate the server maps to the worker role
    unknown: Issued  # one its CA signed, but for no identity the server knows
    keys: dict[str, str] = field(default_factory=dict)  # role name -> API key

    def environ(self, token: str | None = "admin", cert: Issued | None = None) -> dict[str, str]:
        """The address, the CA, a client certificate and the named key's token."""
        chosen = cert or self.worker
        environ = {
            "STATEWRIGHT_ADDRESS": self.server.target,
            "STATEWRIGHT_TLS_CA": str(self.ca.cert),
            "STATEWRIGHT_TLS_CERT": str(chosen.cert),
            "STATEWRIGHT_TLS_KEY": str(chosen.key),
        }
        if token is not None:
            environ["STATEWRIGHT_TOKEN"] = self.keys[token]
        return environ


@contextlib.contextmanager
def secured_server(root: Path, database_url: str) -> Iterator[Secured]:
    """The server, with the example definitions, stopped when the block ends; its log must
    hold no traceback and no key."""
    ca = ScratchCA(root / "ca")
    served = ca.issue("server", server=True)
    worker = ca.issue("worker", uri=WORKER_SAN)
    unknown = ca.issue("unknown", uri="spiffe://statewright.test/stranger")
    keys = _keys()

    def key(name: str, grant: str) -> str:
        digest = hashlib.sha256(keys[name].encode()).hexdigest()
        return f"  - {{name: {name}, sha256: {digest}, grants: [{grant}]}}\n"

    auth = root / "auth.yaml"
    auth.write_text(
        "api_keys:\n"
        + key("admin", "{role: admin}")
        + key("reader", "{role: reader}")
        + key("hasty", "{role: reader}")
        + f"mtls:\n  - {{san: '{WORKER_SAN}', grants: [{{role: worker}}]}}\n"
    )
    definitions = definitions_dir(root / "definitions", test_definitions=False)
    args = [
        "--tls-cert", str(served.cert),
        "--tls-key", str(served.key),
        "--tls-client-ca", str(ca.cert),
        "--auth-config", str(auth),
        "--rate-limit", str(RATE),
        "--rate-burst", str(RATE),
    ]  # fmt: skip
    with running_server(database_url, definitions, cwd=root, extra_args=args) as server:
        yield Secured(server, ca, worker, unknown, keys)
    log = server.log()
    assert "Traceback" not in log, log
    for secret in keys.values():
        assert secret not in log, "a key was logged"
