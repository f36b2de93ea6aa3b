#!/usr/bin/env bash
# Regenerate the committed Java code (messages + gRPC stubs for statewright.v1).
#   clients/java/generate.sh [OUTROOT]
# replaces the whole source root OUTROOT/clients/java/src/generated/java (OUTROOT defaults to the
# repo root; the drift check passes a scratch directory and diffs that root). Nothing
# hand-written lives under that root, so wiping it also drops classes of removed messages.
#
# Pinned generators, both fetched from Maven Central by Maven itself:
#   protoc 4.36.2: the same release as the protobuf-java runtime in pom.xml (gencode must
#     never be newer than the runtime; grpcio-tools' bundled protoc has no Java generator).
#   protoc-gen-grpc-java 1.83.0: the newest linux-x86_64 build Maven Central serves; the
#     1.84.x and 1.85.x executables are not published there. Its output runs on grpc-java
#     1.85.1 (stubs only use stable io.grpc APIs).
# google/rpc/status.proto is an import only: com.google.api.grpc:proto-google-common-protos
# provides those classes, so nothing under google/ is generated.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
outroot=$(mkdir -p "${1:-$root}" && cd "${1:-$root}" && pwd)

PROTOC_VERSION=4.36.2
GRPC_JAVA_VERSION=1.83.0
tools=$here/target/codegen
buf=${BUF:-$root/.venv/bin/buf}

fetch() { # groupId:artifactId:version -> path of the linux-x86_64 executable
  local gav=$1 name
  IFS=: read -r _ name version <<<"$gav"
  local exe=$tools/$name-$version-linux-x86_64.exe
  if [ ! -x "$exe" ]; then
    mvn -B -q org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
      -Dartifact="$gav:exe:linux-x86_64" -DoutputDirectory="$tools" >&2
    chmod +x "$exe"
  fi
  echo "$exe"
}

protoc=$(fetch "com.google.protobuf:protoc:$PROTOC_VERSION")
grpc_plugin=$(fetch "io.grpc:protoc-gen-grpc-java:$GRPC_JAVA_VERSION")

out=$outroot/clients/java/src/generated/java
rm -rf "$out"
mkdir -p "$out"
template=$(cat <<JSON
{"version": "v2", "clean": false, "plugins": [
  {"protoc_builtin": "java", "protoc_path": ["$protoc"], "out": "$out"},
  {"local": "$grpc_plugin", "out": "$out"}
]}
JSON
)
cd "$root"
"$buf" generate proto --template "$template"
