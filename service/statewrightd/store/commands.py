"""``statewrightd migrate``: apply pending migrations and report what was done."""

from __future__ import annotations

import os
import sys

from statewrightd.errors import StatewrightError
from statewrightd.store.schema import latest_version, migrate_database

DEFAULT_DATABASE_URL = "sqlite:///statewright.db"


def resolve_database_url(url: str | None) -> str:
    return url or os.environ.get("STATEWRIGHT_DATABASE_URL") or DEFAULT_DATABASE_URL


def migrate_command(url: str | None) -> int:
    target = resolve_database_url(url)
    try:
        done = migrate_database(target)
    except StatewrightError as exc:
        print(f"statewrightd migrate: {exc.message}", file=sys.stderr)
        return 1
    shown = _redact(target)
    if done.versions:
        print(f"{shown}: applied migrations {', '.join(str(v) for v in done.versions)}")
    else:
        print(f"{shown}: schema already at version {_latest(target)}")
    if done.citus:
        if done.distributed:
            print(f"{shown}: distributed by workflow id on Citus: {', '.join(done.distributed)}")
        else:
            print(f"{shown}: Citus coordinator, schema already distributed")
        if done.citus_versions:
            applied = ", ".join(str(v) for v in done.citus_versions)
            print(f"{shown}: applied Citus migrations {applied}")
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
