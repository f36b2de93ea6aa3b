#!/usr/bin/env bash
# Server CPU per start-to-complete of one server process, at one offered rate, and of the
# same process idle: the quick A/B of two source trees (before and after a change), each
# run on its own private PostgreSQL, interleaved by the caller, e.g.
#   for t in /path/before /path/after; do bench/cpu_per_start.sh $t 100 20; done
# TREE is a checkout whose service/ runs (this repository's .venv runs it; PY=PATH another
# venv's python, e.g. of a newer Python with the project installed); RATE starts/s
# (bench/goload, open loop) for SECONDS. Prints one line: idle CPU ms a second, and CPU ms
# per start with the idle share included, read from /proc. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${STATEWRIGHT_TEST_POSTGRES_URL:-}" ]; then
  exec timeout --kill-after=30 600 scripts/with-postgres "$0" "$@"
fi
TREE=$(cd "$1" && pwd); RATE=${2:-100}; SECS=${3:-20}
source bench/one_server.sh
ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
sleep 3
a=$(ticks); sleep 10; b=$(ticks)
idle=$(( (b - a) * 1000 / hz / 10 ))
a=$(ticks)
"$GOLOAD" --target "127.0.0.1:$port" --scenario start --rate "$RATE" --warmup 0 --duration "$SECS" > "$out/load.json"
b=$(ticks)
python3 - "$out/load.json" "$a" "$b" "$hz" "$idle" "$TREE" "$RATE" <<'PY'
import json, sys
report, a, b, hz, idle, tree, rate = sys.argv[1:]
ops = json.load(open(report))["ops"]
ms = (int(b) - int(a)) * 1000 / int(hz) / max(ops, 1)
print(f"{tree} @ {rate}/s: {ops} starts, {ms:.2f} ms server CPU per start, idle {idle} ms CPU/s")
PY
