#!/usr/bin/env bash
# The child-workflow benchmark in one command: a private PostgreSQL (scripts/with-postgres), one
# statewrightd on 127.0.0.1: parents with one child each against twice as many
# independent starts, and a map of children, in one run. Arguments go to bench/child_bench.py
# (--pairs N --children N --repeat N). Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 1200 scripts/with-postgres "$PY" bench/child_bench.py "$@"
