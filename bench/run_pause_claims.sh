#!/usr/bin/env bash
# The pause check's cost to the timer claim and the task lease (bench/pause_claims.py), on a
# private PostgreSQL on 127.0.0.1, stopped at the end. Arguments go to the script
# (--instances N --paused P --rounds R). Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/pause_claims.py "$@"
