#!/usr/bin/env bash
# Build the console's front end into service/statewrightd/console/static (committed, so that
# `make dev` serves the console with no front-end build), or check that a fresh build equals
# what is committed.
#   console/build.sh          install (npm ci, pinned by package-lock.json), generate the
#                             API's JSON types, type-check, bundle into static/
#   console/build.sh --check  the same into a scratch directory; fail if it differs
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
static="$root/service/statewrightd/console/static"
cd "$here"

stamp=node_modules/.statewright-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi

buf=${BUF:-$root/.venv/bin/buf}
[ -x "$buf" ] || buf=$(command -v buf) || { echo "console/build.sh: buf not found (run 'make install')" >&2; exit 1; }
rm -rf src/gen
(cd "$root" && "$buf" generate --template console/buf.gen.yaml)
node_modules/.bin/tsc -p .

if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  node build.mjs "$out/static"
  if ! diff -r -q "$static" "$out/static"; then
    echo "the committed console bundle is stale: run 'make console' and commit the result" >&2
    exit 1
  fi
  echo "console bundle is up to date"
else
  node build.mjs "$static"
  echo "console bundle written to ${static#"$root"/}"
fi
