#!/usr/bin/env bash
# The peers of the HITL comparison, installed apart from the project: a virtual environment
# in .cache/peers-venv (DBOS Transact, LangGraph with its PostgreSQL checkpointer, httpx for
# the Restate load, Temporal's Python SDK), the Restate server and TypeScript SDK from npm in
# .cache/restate, and Temporal's development server built from its Go module (the lite
# server of go.temporal.io/server, bench/peers/temporal) into .cache/temporal.
# Pinned versions, installed once (a stamp file per part); never part of the project's deps.
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
VENV=.cache/peers-venv
PY_PACKAGES=(dbos==3.4.0 langgraph==1.2.24 langgraph-checkpoint-postgres==3.2.0
  "psycopg[binary]==3.3.9" psycopg-pool==3.3.3 httpx==0.28.1 temporalio==1.35.0)
NPM_PACKAGES=(@restatedev/restate-server@1.7.12 @restatedev/restate-sdk@1.17.2)
stamp="$VENV/.installed-$(echo "${PY_PACKAGES[*]}" | sha256sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet "${PY_PACKAGES[@]}"
  touch "$stamp"
fi
if command -v npm >/dev/null; then
  npm_stamp=".cache/restate/.installed-$(echo "${NPM_PACKAGES[*]}" | sha256sum | cut -c1-12)"
  if [ ! -f "$npm_stamp" ]; then
    mkdir -p .cache/restate
    (cd .cache/restate && { test -f package.json || npm init -y >/dev/null; } \
      && npm install --no-audit --no-fund --silent "${NPM_PACKAGES[@]}")
    touch "$npm_stamp"
  fi
else
  echo "peers: npm not found: the Restate peer will be left out" >&2
fi
if command -v go >/dev/null; then
  # Rebuilt when its module changes; the Go build cache makes that quick after the first.
  go_stamp=".cache/temporal/.built-$(cat bench/peers/temporal/go.mod bench/peers/temporal/main.go \
    | sha256sum | cut -c1-12)"
  if [ ! -f "$go_stamp" ]; then
    mkdir -p .cache/temporal
    (cd bench/peers/temporal && go build -o ../../../.cache/temporal/temporal-dev .)
    touch "$go_stamp"
  fi
else
  echo "peers: go not found: the Temporal peer will be left out" >&2
fi
