#!/usr/bin/env bash
# The fan-out benchmark in one command: a private PostgreSQL (scripts/with-postgres), one
# statewrightd and in-process pollers on 127.0.0.1: a `map` of --items items against as
# many single-task workflows, in the same run. Arguments go to bench/fan_out_bench.py
# (--items N --concurrency N --pollers N --repeat N). Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 1200 scripts/with-postgres "$PY" bench/fan_out_bench.py "$@"
