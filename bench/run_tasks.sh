#!/usr/bin/env bash
# The task benchmark in one command: a private PostgreSQL (scripts/with-postgres), two
# statewrightd replicas and four worker processes, all on 127.0.0.1, all stopped at the
# end. About three minutes; arguments go to bench/task_bench.py (--quick: a smoke run;
# --replicas N --workers N --population N --seconds S --repeat N; --server-patch NAME, a
# patch of bench/patched_server.py; --worker-engine go, java, several comma-separated or
# all: the workers in Go or Java, or those languages in turn in each round; --fail-first
# with Go workers: each task's first attempt is failed and retried at once, so that
# FailTask is measured too).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 900 scripts/with-postgres "$PY" bench/task_bench.py "$@"
