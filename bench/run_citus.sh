#!/usr/bin/env bash
# The Citus benchmark (bench/citus_bench.py): for 1, 2 and 4 workers, a private PostgreSQL
# and a private Citus cluster (scripts/with-postgres, scripts/with-citus), statewrightd on
# each in turn, start-to-complete and human-in-the-loop load, and the CPU each node spends
# a step; then the tables and the cost model. All on 127.0.0.1, all stopped at the end.
#   bench/run_citus.sh [--quick] [--out DIR] [--rounds N]     (default DIR: build/bench-citus)
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
out=build/bench-citus
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
rm -rf "$out"
for workers in ${CITUS_BENCH_WORKERS:-1 2 4}; do
  # A hard ceiling per cluster, so a wedged server or load process cannot hold the machine.
  CITUS_WORKERS=$workers timeout --kill-after=30 1200 scripts/with-postgres scripts/with-citus \
    "$PY" bench/citus_bench.py --out "$out" "${args[@]}"
done
"$PY" bench/citus_bench.py --report "$out"
