#!/usr/bin/env bash
# The search benchmark in one command: a private PostgreSQL (scripts/with-postgres) and two
# statewrightd servers, all on 127.0.0.1, all stopped at the end. Arguments go to
# bench/search_bench.py (--instances N, --queries N, --rounds N, --duration S, --engine).
# Not a test: `make test` never runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# --citus: the same against a private Citus cluster (scripts/with-citus: a coordinator
# and two workers, Citus's default 32 shards), e.g. to compare with the figures above.
citus=()
case " $* " in *" --citus "*) citus=(scripts/with-citus) ;; esac
exec timeout --kill-after=30 3600 scripts/with-postgres ${citus[@]+"${citus[@]}"} "$PY" bench/search_bench.py "$@"
