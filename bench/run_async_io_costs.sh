#!/usr/bin/env bash
# psycopg's async layer against its blocking one on a group-commit transaction, on a
# private PostgreSQL (scripts/with-postgres: 127.0.0.1, a free port, removed at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres .venv/bin/python bench/async_io_costs.py "$@"
