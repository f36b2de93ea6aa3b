#!/usr/bin/env bash
# The flow-control benchmark in one command: a private PostgreSQL (scripts/with-postgres),
# one statewrightd and in-process pollers on 127.0.0.1, then the claim at a large backlog
# on the repository. A few minutes; arguments go to bench/flow_bench.py (--part steps|claim,
# --tasks N --keys N --pollers N --repeat N --backlog N --backlog-keys N).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# --citus: the same against a private Citus cluster (scripts/with-citus: a coordinator
# and two workers, Citus's default 32 shards), e.g. to compare with the figures above.
citus=()
case " $* " in *" --citus "*) citus=(scripts/with-citus) ;; esac
exec timeout --kill-after=30 1200 scripts/with-postgres ${citus[@]+"${citus[@]}"} "$PY" bench/flow_bench.py "$@"
