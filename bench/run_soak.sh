#!/usr/bin/env bash
# The retention soak in one command: a private PostgreSQL (scripts/with-postgres) and
# statewrightd, all on 127.0.0.1, all stopped at the end. About 24 minutes; arguments go to
# bench/soak.py (--minutes M, --out DIR). Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 2400 scripts/with-postgres "$PY" bench/soak.py "$@"
