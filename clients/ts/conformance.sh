#!/usr/bin/env bash
# Run the shared conformance scenario (clients/conformance/scenario.yaml) against the live
# server at $STATEWRIGHT_TARGET (host:port); exits non-zero at the first mismatch.
set -euo pipefail
cd "$(dirname "$0")"
: "${STATEWRIGHT_TARGET:?set STATEWRIGHT_TARGET to host:port of a live server}"
./install.sh
node_modules/.bin/tsc -p .
exec node dist/conformance/main.js ../conformance/scenario.yaml
