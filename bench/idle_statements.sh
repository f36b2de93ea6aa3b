#!/usr/bin/env bash
# What an idle server asks of its database: one server process of TREE (default this
# checkout) on its own private PostgreSQL with every statement logged, left idle for
# SECONDS (default 40) after it settles; prints statements and transactions a second and
# the statements by kind (bench/idle_statements.py), and the server's CPU ms a second.
#   bench/idle_statements.sh            # this checkout
#   bench/idle_statements.sh /path/to/before 60
# Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${STATEWRIGHT_TEST_POSTGRES_URL:-}" ]; then
  exec timeout --kill-after=30 600 scripts/with-postgres "$0" "$@"
fi
TREE=$(cd "${1:-.}" && pwd); SECS=${2:-40}
URL=$STATEWRIGHT_TEST_POSTGRES_URL
out=$(mktemp -d)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$out"' EXIT
log=$(dirname "$(psql "$URL" -qAtc 'SHOW data_directory')")/server.log
psql "$URL" -qc "ALTER SYSTEM SET log_statement = 'all'" -c "SELECT pg_reload_conf()" >/dev/null
PYTHONPATH=$TREE/service .venv/bin/python -m statewrightd.cli serve --listen 127.0.0.1:0 \
  --database "$URL" --definitions "$TREE/examples/definitions" \
  --processes 1 --log-level INFO > "$out/server.log" 2>&1 &
server=$!
for _ in $(seq 240); do grep -q "serving on" "$out/server.log" && break; sleep 0.5; done
grep -q "serving on" "$out/server.log" || { cat "$out/server.log" >&2; exit 1; }
pid=$(pgrep -P $server -f worker_main || echo $server)
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
sleep 15  # past its start: migrations, definitions, the first rounds
from=$(date +%s.%N); a=$(ticks)
sleep "$SECS"
b=$(ticks)
.venv/bin/python bench/idle_statements.py "$log" "$from" "$SECS"
echo "server CPU: $(( (b - a) * 1000 / $(getconf CLK_TCK) / SECS )) ms a second"
