# Sourced by the benchmarks that measure one server process of a source tree (bench/
# cpu_per_start.sh, bench/cpu_by_thread.sh), inside scripts/with-postgres: builds the Go
# load generator, starts `serve --processes 1` of TREE on a free port and sets GOLOAD,
# out (a scratch directory), server, port and pid (the process serving); all removed at
# exit. TREE is a checkout whose service/ runs (this repository's .venv runs it, or the
# venv python PY names, as in the run_*.sh scripts: for the A/B of an interpreter).
GOLOAD=.cache/goload/goload
[ -x "$GOLOAD" ] || (cd bench/goload && go build -o ../../$GOLOAD .)
out=$(mktemp -d)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$out"' EXIT
PYTHONPATH=$TREE/service "${PY:-.venv/bin/python}" -m statewrightd.cli serve --listen 127.0.0.1:0 \
  --database "$STATEWRIGHT_TEST_POSTGRES_URL" --definitions "$TREE/examples/definitions" \
  --processes 1 --log-level INFO > "$out/server.log" 2>&1 &
server=$!
for _ in $(seq 240); do grep -q "serving on" "$out/server.log" && break; sleep 0.5; done
port=$(grep -o "serving on [0-9.]*:[0-9]*" "$out/server.log" | head -1 | sed 's/.*://')
[ -n "$port" ] || { cat "$out/server.log" >&2; exit 1; }
pid=$(pgrep -P $server -f worker_main || echo $server)
