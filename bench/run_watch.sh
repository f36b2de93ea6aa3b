#!/usr/bin/env bash
# The WatchWorkflow benchmark of issue 6 in one command: a private PostgreSQL, statewrightd,
# watcher and signal processes, all on 127.0.0.1, all stopped at the end (a few minutes).
# Arguments go to bench/watch_bench.py. Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 600 scripts/with-postgres "$PY" bench/watch_bench.py "$@"
