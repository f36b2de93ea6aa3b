#!/usr/bin/env bash
# The security benchmark in one command: a private PostgreSQL (scripts/with-postgres) and
# statewrightd in plaintext and over TLS with JWT authentication, interleaved, all on
# 127.0.0.1. About two minutes; arguments go to bench/security_bench.py (--quick).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/security_bench.py "$@"
