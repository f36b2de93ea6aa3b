#!/usr/bin/env bash
# Run the client conformance scenario through the Java client against the live server at
# $STATEWRIGHT_TARGET (host:port). Optional argument: another scenario file.
# Exits non-zero on any mismatch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
: "${STATEWRIGHT_TARGET:?set STATEWRIGHT_TARGET to the server host:port}"
scenario=$(cd "$(dirname "${1:-$root/clients/conformance/scenario.yaml}")" && pwd)/$(basename "${1:-scenario.yaml}")
cd "$here"
mvn -B -q -Dstyle.color=never compile dependency:build-classpath >&2 \
  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
exec java -cp "target/classes:$(cat target/classpath.txt)" \
  dev.statewright.client.conformance.ConformanceRunner "$scenario"
