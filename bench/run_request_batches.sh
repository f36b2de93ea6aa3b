#!/usr/bin/env bash
# Saves that carry request ids: one statement per row against the set-based statements,
# on a private PostgreSQL (scripts/with-postgres: 127.0.0.1, a free port, removed at exit).
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres .venv/bin/python bench/request_batches.py "$@"
