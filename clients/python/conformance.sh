#!/usr/bin/env bash
# Run the client conformance scenario (clients/conformance/scenario.yaml) through the Python
# client against the live server at $STATEWRIGHT_ADDRESS (host:port; the older
# $STATEWRIGHT_TARGET too), over TLS and with a token when STATEWRIGHT_TLS_* and
# STATEWRIGHT_TOKEN are set. Extra arguments go to the runner (e.g. another scenario path).
# Exits non-zero on any mismatch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${STATEWRIGHT_ADDRESS:=${STATEWRIGHT_TARGET:?set STATEWRIGHT_ADDRESS to the server host:port}}"
export STATEWRIGHT_ADDRESS
python=${PYTHON:-$root/.venv/bin/python}
exec "$python" -m statewright.conformance "$@"
