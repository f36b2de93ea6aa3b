#!/usr/bin/env bash
# Build the Java client and run its JUnit tests (no server needed); prints Surefire's summary.
set -euo pipefail
cd "$(dirname "$0")"
exec mvn -B -Dstyle.color=never --no-transfer-progress verify
