#!/usr/bin/env bash
# Server CPU and context switches per start-to-complete, by thread, of one server process
# under an open-loop load (bench/goload) on its own private PostgreSQL: where a step's CPU
# goes (the asyncio thread, the EventLoop, the group-commit writer, gRPC's own threads).
#   bench/cpu_by_thread.sh TREE RATE SECONDS
# TREE is a checkout whose service/ runs (this repository's .venv, or PY=PATH,
# runs it); RATE starts/s, 0 for the idle server (then "a step" is a tenth of a second).
# Thread names come from py-spy when it is installed (.venv/bin/pip install py-spy), else
# only thread ids. Reads /proc/PID/task/*/stat and status before and after. Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${STATEWRIGHT_TEST_POSTGRES_URL:-}" ]; then
  exec timeout --kill-after=30 600 scripts/with-postgres "$0" "$@"
fi
TREE=$(cd "$1" && pwd); RATE=${2:-100}; SECS=${3:-20}
source bench/one_server.sh
sleep 3
if [ -x .venv/bin/py-spy ]; then .venv/bin/py-spy dump --pid "$pid" --nonblocking > "$out/names" 2>&1 || true; fi
touch "$out/names"
snapshot() {
  for t in /proc/$pid/task/*; do
    echo "$(basename "$t") $(awk '{print $14 + $15}' "$t/stat")" \
      "$(awk '/voluntary_ctxt_switches/ {s += $2} END {print s}' "$t/status") $(cat "$t/comm")"
  done
}
snapshot > "$out/before"
if [ "$RATE" = 0 ]; then
  sleep "$SECS"; echo "{\"ops\": $((SECS * 10))}" > "$out/load.json"
else
  "$GOLOAD" --target "127.0.0.1:$port" --scenario start --rate "$RATE" --warmup 0 \
    --duration "$SECS" > "$out/load.json"
fi
snapshot > "$out/after"
python3 - "$out" "$(getconf CLK_TCK)" "$TREE" "$RATE" <<'PY'
import json, re, sys
out, hz, tree, rate = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = {}
for line in open(f"{out}/names"):
    if m := re.match(r'Thread (\d+) \(\w+\): "(.*)"', line):
        names[m.group(1)] = m.group(2)
before = {t: (int(c), int(s)) for t, c, s, *_ in (l.split() for l in open(f"{out}/before"))}
ops = max(json.load(open(f"{out}/load.json"))["ops"], 1)
rows = []
for t, c, s, *comm in (l.split() for l in open(f"{out}/after")):
    c0, s0 = before.get(t, (0, 0))
    name = names.get(t, f"{' '.join(comm)} {t}")  # gRPC's own threads: their OS names
    rows.append(((int(c) - c0) * 1000 / hz / ops, (int(s) - s0) / ops, name))
print(f"{tree} @ {rate}/s: {ops} steps, {sum(r[0] for r in rows):.2f} ms server CPU a step, "
      f"{sum(r[1] for r in rows):.1f} context switches a step")
for cpu, switches, name in sorted(rows, reverse=True):
    if cpu or switches >= 0.5:
        print(f"  {cpu:5.2f} ms  {switches:5.1f} switches  {name}")
PY
