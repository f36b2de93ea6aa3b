#!/usr/bin/env bash
# The WatchWorkflow benchmark in one command: a private PostgreSQL, statewrightd
# (--server-processes N: N replicas, each on its own port), and the load, all on 127.0.0.1,
# all stopped at the end (a few minutes). By default the load is one bench/goload process
# (built with `go build` into .cache/goload/) that holds every watch stream and sends the
# signals, so that the server keeps the machine's cores; --loadgen python uses Python watcher
# and signal processes instead. The idle-memory phase uses Python watchers on replica 0
# (--idle-watchers 0 skips it). Arguments go to bench/watch_bench.py, e.g.
#   bench/run_watch.sh --duration 5 --idle-watchers 0 --server-processes 2
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
exec timeout --kill-after=30 600 scripts/with-postgres "$PY" bench/watch_bench.py "$@"
