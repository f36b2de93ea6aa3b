# The two commands that matter: `make dev` runs the service, `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test bench clients install generate check-generated buf-lint buf-breaking lint typecheck unit integration e2e image image-test clean baseline

$(STAMP): pyproject.toml clients/python/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e 'clients/python[conformance]' -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

## Run the service: embedded SQLite file, example definitions loaded.
dev: $(STAMP)
	$(BIN)/statewrightd dev

## Run every check and test, against a private PostgreSQL this command starts and stops:
## the Python suites, then every client's build, unit tests and conformance run.
test: $(STAMP)
	$(MAKE) buf-lint buf-breaking check-generated lint typecheck
	scripts/install-kustomize >/dev/null
	scripts/with-postgres scripts/test-suite

## The client builds and conformance runs alone (Go, TypeScript, Java, Python).
clients: $(STAMP)
	scripts/with-postgres scripts/clients-test

## Regenerate committed code from proto/.
generate: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH scripts/generate

check-generated: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH scripts/generate --check

buf-lint: $(STAMP)
	$(BIN)/buf lint
	$(BIN)/buf format --diff --exit-code

buf-breaking: $(STAMP)
	$(BIN)/buf breaking proto --against proto/baseline/image.binpb

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

integration: $(STAMP)
	scripts/with-postgres $(BIN)/pytest -q tests/integration

e2e: $(STAMP)
	scripts/with-postgres $(BIN)/pytest -q tests/e2e

## The server image, built with podman from the Dockerfile with no network (scripts/build-image);
## IMAGE_BASE=local builds on a base made from Debian's packages even where the registry's is.
IMAGE_BASE ?= auto
image: $(STAMP)
	scripts/build-image --base $(IMAGE_BASE)

## The image test alone (part of make test): the image built and run as k8s/ runs it.
image-test: $(STAMP)
	scripts/with-postgres $(BIN)/pytest -q tests/image

## Benchmarks (never part of make test): each brings its own PostgreSQL; a few minutes each.
## bench/run.sh prints the goal table (each goal met or not) and the HITL peers side by side.
bench: $(STAMP)
	bench/run.sh
	bench/run_watch.sh

clean:
	rm -rf $(VENV) build dist *.egg-info

## Record the current API as the baseline the breaking check compares against (at a release).
baseline: $(STAMP)
	$(BIN)/buf build proto -o proto/baseline/image.binpb
