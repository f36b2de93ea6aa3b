#!/usr/bin/env bash
# What the session cache costs in memory (bench/cache_memory.py): one server process's
# resident size with N instances waiting on large contexts, under the default byte budget
# and with it lifted, on a private PostgreSQL on 127.0.0.1, stopped at the end. Arguments go
# to the script (--instances N --context-bytes S --budget B). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/cache_memory.py "$@"
