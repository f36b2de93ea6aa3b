#!/usr/bin/env bash
# The signal-with-start benchmark in one command: a private PostgreSQL
# (scripts/with-postgres) and statewrightd, all on 127.0.0.1, all stopped at the end. About
# two minutes; arguments go to bench/signal_with_start_bench.py (--quick: a smoke run).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 600 scripts/with-postgres "$PY" bench/signal_with_start_bench.py "$@"
