#!/usr/bin/env bash
# Run the shared conformance scenario (clients/conformance/scenario.yaml) against the live
# server at $STATEWRIGHT_ADDRESS (host:port; $STATEWRIGHT_TARGET when that is unset), with
# STATEWRIGHT_TOKEN and STATEWRIGHT_TLS_CA, _CERT and _KEY when the server is secured; exits
# non-zero at the first mismatch.
set -euo pipefail
cd "$(dirname "$0")"
: "${STATEWRIGHT_ADDRESS:=${STATEWRIGHT_TARGET:-}}"
: "${STATEWRIGHT_ADDRESS:?set STATEWRIGHT_ADDRESS to host:port of a live server}"
export STATEWRIGHT_ADDRESS
./install.sh
node_modules/.bin/tsc -p .
exec node dist/conformance/main.js ../conformance/scenario.yaml
