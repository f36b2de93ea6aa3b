#!/usr/bin/env bash
# The search benchmark in one command: a private PostgreSQL (scripts/with-postgres) and two
# statewrightd servers, all on 127.0.0.1, all stopped at the end. Arguments go to
# bench/search_bench.py (--instances N, --queries N, --rounds N, --duration S, --engine).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 3600 scripts/with-postgres "$PY" bench/search_bench.py "$@"
