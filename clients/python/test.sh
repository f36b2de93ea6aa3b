#!/usr/bin/env bash
# The Python client's unit tests (tests/, against fake servers in this process), run from
# here so that `tests` is this client's own. `make typecheck` checks their types.
set -euo pipefail
cd "$(dirname "$0")"
exec ../../.venv/bin/pytest -q
