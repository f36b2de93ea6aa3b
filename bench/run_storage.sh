#!/usr/bin/env bash
# Bytes per workflow in one command: a private PostgreSQL (scripts/with-postgres) and
# statewrightd, all on 127.0.0.1, all stopped at the end. A few minutes; arguments go to
# bench/storage_bytes.py (--workflows N, --scenario start|hitl, --out DIR).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 1200 scripts/with-postgres "$PY" bench/storage_bytes.py "$@"
