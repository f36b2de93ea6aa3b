#!/usr/bin/env bash
# A write of one statement, alone against in a transaction block of its own, on a private
# PostgreSQL (scripts/with-postgres: 127.0.0.1, a free port, removed at exit). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres .venv/bin/python bench/one_statement_writes.py "$@"
