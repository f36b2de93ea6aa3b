"""``statewrightd auth``: make an API key, and check an auth config file."""

from __future__ import annotations

import hashlib
import secrets
import sys
from pathlib import Path

from statewrightd.security.auth_config import AuthConfigInvalid, load_auth_config
from statewrightd.security.roles import Role

KEY_PREFIX = "sw_"


def new_key_command(name: str, role: str, definitions: list[str], queues: list[str]) -> int:
    """Print a new random key, once, and the auth config entry that stores only its hash."""
    Role(role)  # argparse's choices already checked it; this keeps the two in step
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    digest = hashlib.sha256(key.encode()).hexdigest()
    grant = f"role: {role}"
    if definitions:
        grant += ", definitions: [" + ", ".join(f'"{d}"' for d in definitions) + "]"
    if queues:
        grant += ", queues: [" + ", ".join(f'"{q}"' for q in queues) + "]"
    print(f"# The key (give it to the caller; it is not shown again):\n{key}\n")
    print("# Its entry under api_keys: in the auth config file:")
    print(f"  - name: {name}\n    sha256: {digest}\n    grants: [{{{grant}}}]")
    return 0


def check_command(path: str) -> int:
    """Check an auth config file as the server would at start."""
    try:
        config = load_auth_config(Path(path))
    except AuthConfigInvalid as exc:
        for problem in exc.problems:
            print(
                f"{path}: error: {problem.path or '<document>'}: {problem.message}", file=sys.stderr
            )
        return 1
    kinds = [
        f"{len(config.api_keys)} API key(s)",
        "JWTs" if config.jwt is not None else "no JWTs",
        f"{len(config.mtls)} mTLS identit{'y' if len(config.mtls) == 1 else 'ies'}",
    ]
    print(f"{path}: ok ({', '.join(kinds)})")
    return 0
