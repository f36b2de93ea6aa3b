#!/usr/bin/env bash
# Build the console's front end into service/statewrightd/console/static (committed, so that
# `make dev` serves the console with no front-end build), or check that a fresh build equals
# what is committed.
#   console/build.sh          install (npm ci, pinned by package-lock.json), type-check,
#                             bundle into static/
#   console/build.sh --check  the same into a scratch directory; fail if it differs
#   console/build.sh --deps   only the install (the browser tests take axe-core from it)
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
if [ "${1:-}" = "--deps" ]; then
  exit 0
fi

# The API's JSON types are the TypeScript client's generated ones (clients/ts/src/gen,
# imported as @statewright/client/gen/*: tsconfig.json maps it, and @bufbuild/protobuf,
# which they import, to this directory's own copy); only types are imported, which the
# bundler erases.
node_modules/.bin/tsc -p .

if [ "${1:-}" = "--check" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  node build.mjs "$out/static"
  stale() {
    echo "the committed console bundle is stale: run 'make console' and commit the result" >&2
    exit 1
  }
  # The gzipped copies are compared by what they hold: another zlib may pack the same
  # bytes differently.
  diff -r -q -x '*.gz' "$static" "$out/static" || stale
  diff <(cd "$static" && find . -name '*.gz' | sort) <(cd "$out/static" && find . -name '*.gz' | sort) || stale
  while IFS= read -r packed; do
    cmp -s <(gzip -dc "$static/$packed") <(gzip -dc "$out/static/$packed") || { echo "differs: $packed" >&2; stale; }
  done < <(cd "$out/static" && find . -name '*.gz')
  echo "console bundle is up to date"
else
  node build.mjs "$static"
  echo "console bundle written to ${static#"$root"/}"
fi
