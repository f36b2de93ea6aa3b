#!/usr/bin/env bash
# A step alone in its group commit: one statement outside a transaction block against a
# transaction block, on a private PostgreSQL (scripts/with-postgres: 127.0.0.1, a free
# port, removed at exit). Not a test.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/with-postgres .venv/bin/python bench/lone_steps.py "$@"
