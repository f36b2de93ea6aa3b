#!/usr/bin/env bash
# Install clients/ts/node_modules from the committed package-lock.json with `npm ci`,
# unless the lock file has not changed since the last install (then it does nothing).
set -euo pipefail
cd "$(dirname "$0")"
stamp=node_modules/.statewright-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  npm ci --no-audit --no-fund --loglevel=error
  echo "$want" > "$stamp"
fi
