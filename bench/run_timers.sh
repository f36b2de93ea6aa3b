#!/usr/bin/env bash
# The timer benchmark in one command: a private PostgreSQL (scripts/with-postgres) and
# statewrightd, all on 127.0.0.1, all stopped at the end. About three minutes; arguments go
# to bench/timer_bench.py (--quick: a smoke run; --rate N --seconds S).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/timer_bench.py "$@"
