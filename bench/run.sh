#!/usr/bin/env bash
# The runtime benchmark in one command: a private PostgreSQL (scripts/with-postgres),
# statewrightd, two echo servers, the load process and the peers, all on 127.0.0.1, all
# stopped at the end. By default the goal run (bench/goals.py, about ten minutes): every
# goal measured in the same run, printed as a table marked met / not met, then the peers
# side by side. Arguments go to bench/goals.py (--quick, --out DIR, --no-peers,
# --server-patch NAME). With --classic first, the older sequence instead
# (bench/runtime_bench.py: closed and open loops, A/B of patches, profiles), e.g.
#   bench/run.sh --classic --quick  a smoke run (about a minute)
#   bench/run.sh --classic --compare-patch NAME --only start   an A/B of a patch, same run
#   bench/run.sh --classic --out DIR   also write DIR/results.md and DIR/results.json
#   bench/run.sh --profile DIR      py-spy profiles of the server under scenarios (a) and (b)
#   bench/run.sh --loadgen python   load processes in Python (grpc.aio) instead of the default,
#                                   bench/goload in Go (built into .cache/ with `go build`), which
#                                   spends far less client CPU on the cores the server needs
#   bench/run.sh --server-processes 2   two statewrightd replicas, each on its own port; the load
#                                   processes route each workflow to one of them (--shared-port:
#                                   one port instead, as one `serve --processes 2`)
#   PY=PATH bench/run.sh            the benchmark and every Python role of it (the servers, the
#                                   echo, Python load and workers) under another venv's python,
#                                   e.g. of a PGO + LTO build of CPython, as the image's
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
script=bench/goals.py
if [ "${1:-}" = "--classic" ]; then
  script=bench/runtime_bench.py
  shift
else
  bench/peers/install.sh
fi
# A hard ceiling, so a wedged server or load process cannot hold the machine.
exec timeout --kill-after=30 1500 scripts/with-postgres \
  "$PY" "$script" "$@"
