#!/usr/bin/env bash
# The tracing benchmark in one command: a private PostgreSQL (scripts/with-postgres), two
# statewrightd servers (tracing off; tracing on, exporting by OTLP to the benchmark's own
# collector), all on 127.0.0.1, all stopped at the end. About three minutes with the
# defaults; arguments go to bench/tracing_bench.py (--seconds S --rounds N --pollers N
# --population N --concurrency N).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/tracing_bench.py "$@"
