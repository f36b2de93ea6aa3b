#!/usr/bin/env bash
# What an idle server asks of its database: one server process of TREE (default this
# checkout) on its own private PostgreSQL with every statement logged, left idle for
# SECONDS (default 40) after it settles; prints statements and transactions a second and
# the statements by kind (bench/idle_statements.py), and the server's CPU ms a second.
#   bench/idle_statements.sh            # this checkout
#   bench/idle_statements.sh /path/to/before 60
# The server is bench/one_server.sh's (PY=PATH: under another venv's python). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${STATEWRIGHT_TEST_POSTGRES_URL:-}" ]; then
  exec timeout --kill-after=30 600 scripts/with-postgres "$0" "$@"
fi
TREE=$(cd "${1:-.}" && pwd); SECS=${2:-40}
URL=$STATEWRIGHT_TEST_POSTGRES_URL
log=$(dirname "$(psql "$URL" -qAtc 'SHOW data_directory')")/server.log
psql "$URL" -qc "ALTER SYSTEM SET log_statement = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
source bench/one_server.sh
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
sleep 15  # past its start: migrations, definitions, the first rounds
from=$(date +%s.%N); a=$(ticks)
sleep "$SECS"
b=$(ticks)
.venv/bin/python bench/idle_statements.py "$log" "$from" "$SECS"
echo "server CPU: $(( (b - a) * 1000 / $(getconf CLK_TCK) / SECS )) ms a second"
