#!/usr/bin/env bash
# Build and unit-test the TypeScript client: `npm ci` from the committed lock file (skipped
# when node_modules already matches it), `tsc` over src/, examples/, conformance/ and test/
# (strict), then node's built-in test runner over the compiled tests.
set -euo pipefail
cd "$(dirname "$0")"
./install.sh
rm -rf dist
node_modules/.bin/tsc -p .
node --test dist/test/*.test.js
# The package must carry the licence and its notice.
packed=$(npm pack --dry-run --json 2>/dev/null)
for name in LICENSE NOTICE; do
  grep -q "\"path\": \"$name\"" <<<"$packed" ||
    { echo "npm pack leaves out $name" >&2; exit 1; }
done
