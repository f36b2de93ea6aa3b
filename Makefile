# The two commands that matter: `make dev` runs the service, `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: dev test docs docs-build bench chaos clients install generate check-generated console check-console console-screenshots trace-screenshot buf-lint buf-breaking lint typecheck unit integration e2e test-citus image image-test clean baseline example-go example-ts example-ts-watch example-java

# scripts/install-venv says what it does as it goes (the first run takes a few minutes).
$(STAMP): pyproject.toml clients/python/pyproject.toml
	@PYTHON=$(PYTHON) VENV=$(VENV) scripts/install-venv
	@touch $(STAMP)

install: $(STAMP)

## Run the service: embedded SQLite file, example definitions loaded.
dev: $(STAMP)
	$(BIN)/statewrightd dev

## Run every check and test, against a private PostgreSQL and a private Citus cluster (a
## coordinator and two workers) this command starts and stops: the Python suites, then
## every client's build, unit tests and conformance run. The prerequisites are checked
## first (scripts/check-prerequisites); each phase prints its name and duration as it ends,
## and the run ends with the list of them all. The first run on a machine builds Citus
## (scripts/install-citus; STATEWRIGHT_CITUS_SOURCE names its source archive); a machine
## that cannot have it runs everything else and says the Citus suites were skipped.
PHASE := scripts/phase
SUBMAKE := $(MAKE) -s --no-print-directory
test:
	@scripts/check-prerequisites
	@export STATEWRIGHT_PHASES=$$(mktemp); \
	trap '$(PHASE) --summary "$$STATEWRIGHT_PHASES"; rm -f "$$STATEWRIGHT_PHASES"' EXIT; \
	$(PHASE) install $(SUBMAKE) install && \
	$(PHASE) "buf lint" $(SUBMAKE) buf-lint && \
	$(PHASE) "buf breaking" $(SUBMAKE) buf-breaking && \
	$(PHASE) "generated code" $(SUBMAKE) check-generated && \
	$(PHASE) "console bundle" $(SUBMAKE) check-console && \
	$(PHASE) "ruff" $(SUBMAKE) lint && \
	$(PHASE) "mypy" $(SUBMAKE) typecheck && \
	$(PHASE) "kustomize" sh -c 'scripts/install-kustomize >/dev/null' && \
	$(PHASE) "chromium" sh -c 'scripts/install-chromium >/dev/null' && \
	$(PHASE) "citus" scripts/install-citus --optional && \
	scripts/with-postgres scripts/with-citus --optional scripts/test-suite

## The documentation site on http://127.0.0.1:8000, rebuilt on every save. `make test` builds
## it strictly (tests/unit/docs): a broken link or a page missing from the nav fails.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

## The client builds and conformance runs alone (Go, TypeScript, Java, Python).
clients: $(STAMP)
	scripts/with-postgres scripts/clients-test

## The clients' examples, against a running server (`make dev` in another terminal);
## STATEWRIGHT_ADDRESS=HOST:PORT names another server (STATEWRIGHT_TARGET, its older name,
## is read when it is unset), WORKFLOW_ID=ID the instance that example-ts-watch follows.
STATEWRIGHT_ADDRESS ?= $(or $(STATEWRIGHT_TARGET),127.0.0.1:50051)
WORKFLOW_ID ?= order-1
example-go:
	cd clients/go && go run ./examples/start_resume -target $(STATEWRIGHT_ADDRESS)

example-ts:
	clients/ts/install.sh && cd clients/ts && node_modules/.bin/tsc -p . && node dist/examples/start_resume.js $(STATEWRIGHT_ADDRESS)

example-ts-watch:
	clients/ts/install.sh && cd clients/ts && node_modules/.bin/tsc -p . && node dist/examples/watch.js $(STATEWRIGHT_ADDRESS) $(WORKFLOW_ID)

example-java:
	cd clients/java && mvn -B -q -Dstyle.color=never compile dependency:build-classpath \
	  -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=runtime && \
	  STATEWRIGHT_ADDRESS=$(STATEWRIGHT_ADDRESS) java -cp "target/classes:$$(cat target/classpath.txt)" \
	  dev.statewright.client.example.MailApproval

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
	cd clients/python && ../../$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit
	cd clients/python && ../../$(BIN)/pytest -q

integration: $(STAMP)
	scripts/with-postgres scripts/with-citus --optional $(BIN)/pytest -q tests/integration

e2e: $(STAMP)
	scripts/with-postgres scripts/with-citus --optional $(BIN)/pytest -q tests/e2e

## Only the tests on Citus (the store's contract and Citus tests, the end-to-end scenarios),
## building Citus first if this machine does not have it: these fail, never skip.
test-citus: $(STAMP)
	scripts/with-citus $(BIN)/pytest -q -m citus tests/integration tests/e2e

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

## The fault suite at full size (never part of make test; its small run is): 100,000+
## operations against two replicas under every kind of fault, then checked; it fails on any
## anomaly, or if it ran fewer operations or faults than it promised. The report is in
## build/chaos/report.txt; CHAOS_SEED=N replays a run's schedule. See RELIABILITY.md.
## Bounded: stopped (and cleaned up) after CHAOS_LIMIT. CHAOS_DB=citus runs it on a Citus
## cluster (a coordinator and two workers), with one more fault: a worker node restarted;
## three database servers on the same cores make it slower, so its bound is longer.
CHAOS_SEED ?= 0
CHAOS_DB ?= postgres
ifeq ($(CHAOS_DB),citus)
CHAOS_LIMIT ?= 110m
else
CHAOS_LIMIT ?= 60m
endif
chaos: $(STAMP)
	cd chaos && go build -o ../.cache/chaos/chaos .
	if [ "$(CHAOS_DB)" = citus ]; then scripts/install-citus; fi
	timeout --signal=TERM --kill-after=2m $(CHAOS_LIMIT) \
	  .cache/chaos/chaos run --size full --seed $(CHAOS_SEED) --db $(CHAOS_DB) --out build/chaos --repo .

clean:
	rm -rf $(VENV) build dist *.egg-info

## The web console's front end (console/), built into the package's static/ directory,
## which is committed: `make dev` serves it with no front-end build (docs/console.md).
console: $(STAMP)
	console/build.sh

check-console: $(STAMP)
	console/build.sh --check

## The console's screenshots in docs/images, taken by its browser tests.
console-screenshots: $(STAMP)
	scripts/install-chromium >/dev/null
	STATEWRIGHT_SCREENSHOTS=docs/images scripts/with-postgres $(BIN)/pytest -q tests/e2e/console/test_browser.py tests/e2e/console/test_browser_operations.py tests/e2e/console/test_browser_batches.py

## The docs' picture of one order-fulfilment trace (docs/images/trace-order-fulfilment.png):
## the real server and a Python worker, their spans drawn as a waterfall, headless Chromium.
trace-screenshot: $(STAMP)
	scripts/install-chromium >/dev/null
	$(BIN)/python bench/trace_screenshot.py

## Record the current API as the baseline the breaking check compares against (at a release).
baseline: $(STAMP)
	$(BIN)/buf build proto -o proto/baseline/image.binpb
