#!/usr/bin/env bash
# The runtime benchmark in one command: a private PostgreSQL (scripts/with-postgres),
# statewrightd, two echo servers and several load processes, all on 127.0.0.1, all stopped at
# the end. Takes about three minutes; arguments go to bench/runtime_bench.py, e.g.
#   bench/run.sh --quick            a smoke run (about a minute)
#   bench/run.sh --out DIR          also write DIR/results.md and DIR/results.json
#   bench/run.sh --profile DIR      py-spy profiles of the server under scenarios (a) and (b)
#   bench/run.sh --loadgen python   load processes in Python (grpc.aio) instead of the default,
#                                   bench/goload in Go (built into .cache/ with `go build`), which
#                                   spends far less client CPU on the cores the server needs
#   bench/run.sh --server-processes 2   two statewrightd replicas, each on its own port; the load
#                                   processes route each workflow to one of them (--shared-port:
#                                   one port shared with SO_REUSEPORT instead)
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# A hard ceiling, so a wedged server or load process cannot hold the machine.
exec timeout --kill-after=30 1500 scripts/with-postgres \
  "$PY" bench/runtime_bench.py "$@"
