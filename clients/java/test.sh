#!/usr/bin/env bash
# Build the Java client and run its JUnit tests (no server needed); prints Surefire's summary.
# The jar must carry the licence and its notice (META-INF/LICENSE, META-INF/NOTICE).
set -euo pipefail
cd "$(dirname "$0")"
mvn -B -Dstyle.color=never --no-transfer-progress verify
python3 - target/statewright-client-*.jar <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as jar:
    for name in ("LICENSE", "NOTICE"):
        if jar.read(f"META-INF/{name}") != open(name, "rb").read():
            sys.exit(f"the jar's META-INF/{name} is not clients/java/{name}")
PY
