#!/usr/bin/env bash
# The web console benchmark in one command: a private PostgreSQL (scripts/with-postgres),
# statewrightd with its console, the pages and the load, all on 127.0.0.1. About three
# minutes; arguments go to bench/console_bench.py (--quick for one short round).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/console_bench.py "$@"
