#!/usr/bin/env bash
# Run the client conformance scenario through the Java client against the live server at
# $STATEWRIGHT_ADDRESS (host:port; $STATEWRIGHT_TARGET when that is unset), over TLS when
# STATEWRIGHT_TLS_CA (or _CERT/_KEY) is set, with $STATEWRIGHT_TOKEN when set.
# Optional argument: another scenario file. Exits non-zero on any mismatch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ -n "${STATEWRIGHT_ADDRESS:-${STATEWRIGHT_TARGET:-}}" ] ||
  { echo "set STATEWRIGHT_ADDRESS to the server host:port" >&2; exit 2; }
scenario=$(cd "$(dirname "${1:-$root/clients/conformance/scenario.yaml}")" && pwd)/$(basename "${1:-scenario.yaml}")
cd "$here"
mvn -B -q -Dstyle.color=never compile dependency:build-classpath >&2 \
  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime
exec java -cp "target/classes:$(cat target/classpath.txt)" \
  dev.statewright.client.conformance.ConformanceRunner "$scenario"
