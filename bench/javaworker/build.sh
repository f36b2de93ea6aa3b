#!/usr/bin/env bash
# Build the Java task worker of bench/task_bench.py once: the Java client's jar (mvn
# package, tests skipped), its runtime classpath, and TaskWorker.java compiled against it,
# into .cache/javaworker/ (gitignored). Prints the classpath to run it with
# (`java -cp "$(bench/javaworker/build.sh)" TaskWorker ...`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/.cache/javaworker"
mkdir -p "$out/classes"
mvn() { command mvn -B -q -Dstyle.color=never --no-transfer-progress -f "$root/clients/java/pom.xml" "$@"; }
jar=$(ls "$root"/clients/java/target/statewright-client-*.jar 2>/dev/null | grep -v -e sources -e javadoc | head -1 || true)
if [ -z "$jar" ] || [ -n "$(find "$root/clients/java/src" -newer "$jar" -print -quit)" ]; then
  mvn -DskipTests package >&2
  jar=$(ls "$root"/clients/java/target/statewright-client-*.jar | grep -v -e sources -e javadoc | head -1)
fi
if [ ! -s "$out/deps.txt" ] || [ "$root/clients/java/pom.xml" -nt "$out/deps.txt" ]; then
  mvn dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$out/deps.txt" >&2
fi
cp="$out/classes:$jar:$(cat "$out/deps.txt")"
src="$root/bench/javaworker/TaskWorker.java"
if [ ! -f "$out/classes/TaskWorker.class" ] || [ "$src" -nt "$out/classes/TaskWorker.class" ] \
   || [ "$jar" -nt "$out/classes/TaskWorker.class" ]; then
  javac -d "$out/classes" -cp "$cp" "$src" >&2
fi
echo "$cp"
