#!/usr/bin/env bash
# Run the shared conformance scenario (clients/conformance/scenario.yaml) against the live
# server at $STATEWRIGHT_ADDRESS (host:port; the older $STATEWRIGHT_TARGET is read when it
# is unset), over TLS and with a token when STATEWRIGHT_TLS_CA, STATEWRIGHT_TLS_CERT and
# STATEWRIGHT_TLS_KEY, and STATEWRIGHT_TOKEN, say so; exits non-zero at the first mismatch.
set -euo pipefail
cd "$(dirname "$0")"
: "${STATEWRIGHT_ADDRESS:=${STATEWRIGHT_TARGET:?set STATEWRIGHT_ADDRESS to host:port of a live server}}"
export STATEWRIGHT_ADDRESS
GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly" go build -o bin/ ./cmd/conformance
exec bin/conformance -scenario ../conformance/scenario.yaml "$@"
