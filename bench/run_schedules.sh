#!/usr/bin/env bash
# The schedule benchmark in one command: a private PostgreSQL (scripts/with-postgres) and
# statewrightd, all on 127.0.0.1, all stopped at the end. About three minutes; arguments go
# to bench/schedule_bench.py (--schedules N --minutes M --replicas 1|2; --idle-effect for
# what N schedules that are not due cost start-to-complete throughput).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/schedule_bench.py "$@"
