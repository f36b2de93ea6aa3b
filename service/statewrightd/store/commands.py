"""``statewrightd migrate``: apply pending migrations and report what was done."""

from __future__ import annotations

import os
import sys

from statewrightd.errors import StatewrightError
from statewrightd.store.schema import latest_version, migrate

DEFAULT_DATABASE_URL = "sqlite:///statewright.db"


def resolve_database_url(url: str | None) -> str:
    return url or os.environ.get("STATEWRIGHT_DATABASE_URL") or DEFAULT_DATABASE_URL


def migrate_command(url: str | None) -> int:
    target = resolve_database_url(url)
    try:
        applied = migrate(target)
    except StatewrightError as exc:
        print(f"statewrightd migrate: {exc.message}", file=sys.stderr)
        return 1
    shown = _redact(target)
    if applied:
        print(f"{shown}: applied migrations {', '.join(str(v) for v in applied)}")
    else:
        print(f"{shown}: schema already at version {_latest(target)}")
    return 0


def _latest(url: str) -> int:
    return latest_version("postgres" if url.startswith("postgres") else "sqlite")


def _redact(url: str) -> str:
    # Never print a password that came in the URL.
    scheme, sep, rest = url.partition("://")
    if "@" not in rest:
        return url
    creds, _, host = rest.rpartition("@")
    user = creds.split(":", 1)[0]
    return f"{scheme}{sep}{user}@{host}"
