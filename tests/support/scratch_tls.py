"""A TLS and token set-up for a test run, written to a directory, as shell assignments.

    eval "$(.venv/bin/python -m tests.support.scratch_tls DIR)"

sets STATEWRIGHT_TEST_TLS_CERT and _KEY (the server's certificate, for 127.0.0.1), the
STATEWRIGHT_TEST_AUTH_CONFIG file (one API key with the admin role), and the client side
every Statewright client reads: STATEWRIGHT_TLS_CA and STATEWRIGHT_TOKEN. Everything is
made now and lives an hour.
"""

from __future__ import annotations

import hashlib
import secrets
import shlex
import sys
from pathlib import Path

from tests.support.certs import ScratchCA


def main(argv: list[str]) -> int:
    directory = Path(argv[1])
    ca = ScratchCA(directory)
    server = ca.issue("server", server=True)
    token = "sw_" + secrets.token_urlsafe(24)
    auth = directory / "auth.yaml"
    digest = hashlib.sha256(token.encode()).hexdigest()
    auth.write_text(
        f"api_keys:\n  - {{name: conformance, sha256: {digest}, grants: [{{role: admin}}]}}\n"
    )
    values = {
        "STATEWRIGHT_TEST_TLS_CERT": server.cert,
        "STATEWRIGHT_TEST_TLS_KEY": server.key,
        "STATEWRIGHT_TEST_AUTH_CONFIG": auth,
        "STATEWRIGHT_TLS_CA": ca.cert,
        "STATEWRIGHT_TOKEN": token,
    }
    for name, value in values.items():
        print(f"export {name}={shlex.quote(str(value))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
