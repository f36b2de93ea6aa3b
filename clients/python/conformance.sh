#!/usr/bin/env bash
# Run the client conformance scenario (clients/conformance/scenario.yaml) through the Python
# client against the live server at $STATEWRIGHT_TARGET (host:port). Extra arguments go to
# the runner (e.g. another scenario path). Exits non-zero on any mismatch.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
: "${STATEWRIGHT_TARGET:?set STATEWRIGHT_TARGET to the server host:port}"
python=${PYTHON:-$root/.venv/bin/python}
exec "$python" -m statewright.conformance "$@"
