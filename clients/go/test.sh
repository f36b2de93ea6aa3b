#!/usr/bin/env bash
# Build and unit-test the Go client: modules come from the Go module proxy (cached after
# the first run); gofmt and go vet must be clean; the example programs and the conformance
# runner are compiled; `go test` runs every package's tests.
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=readonly"

unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...
go build -o bin/ ./examples/start_resume ./examples/payments_worker ./cmd/conformance ./cmd/traced_worker
go test -count=1 ./...
