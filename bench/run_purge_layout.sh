#!/usr/bin/env bash
# The storage-layout measurement in one command: a private PostgreSQL
# (scripts/with-postgres), stopped at the end. A minute or two; arguments go to
# bench/purge_layout.py (--workflows N, --out DIR). Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/purge_layout.py "$@"
