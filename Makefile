# Switchboard — run `make help` for the targets.
#
# Tools are pinned in deploy/local/tools.sh and installed into GOBIN on first
# use. Postgres comes from deploy/local/postgres.sh (the shared local server,
# or a private cluster it starts). Generated code is committed; `make verify`
# fails when it is stale.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GOBIN ?= $(shell go env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
# Every module in go.work; `go … work` covers them all, linters need the dirs.
MODULES := $(shell go list -f '{{.Dir}}' -m)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit, for `switchboard version` (go's own VCS stamp is missing in some
# checkouts, e.g. git worktrees, and when GOFLAGS has -buildvcs=false).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/switchboard/switchboard/pkg/buildinfo.Version=$(VERSION) -X github.com/switchboard/switchboard/pkg/buildinfo.Revision=$(REVISION)
# Paths written by `make generate` (checked by `make verify`).
GENERATED := gen ':(glob)services/**/dbsqlc/**' ':(glob)pkg/**/dbsqlc/**'
PG := eval "$$(deploy/local/postgres.sh)"
# The test tiers' server: TEST_DATABASE_URL when set, else the machine's test
# cluster (deploy/local/postgres.sh: no fsync, it holds only throwaway clones).
TESTPG := eval "$$(deploy/local/postgres.sh test)"
# Runs one stage of `make test`, timing it into .local/ci (deploy/local/stage.sh).
STAGE := deploy/local/stage.sh

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: ## Install the pinned tools (buf, protoc plugins, sqlc, golangci-lint, grpcurl, grpc-health-probe)
	@deploy/local/tools.sh

.PHONY: protodeps
protodeps: ## Fetch upstream protos (google/api, buf/validate, openapiv2 options) into third_party/ (from Go modules)
	@deploy/local/protodeps.sh

.PHONY: generate
generate: protodeps ## Regenerate everything: protobuf/gRPC/gateway/OpenAPI (buf) and SQL (sqlc)
	@deploy/local/tools.sh buf protoc sqlc
	rm -rf gen/switchboard gen/openapi
	buf generate
	sqlc generate

.PHONY: verify
verify: generate ## Regenerate and fail on any difference; lint and format-check protos; sqlc diff/vet; go.mod tidy
	@if [[ -n "$$(git status --porcelain -- $(GENERATED))" ]]; then \
		echo "generated code is stale or uncommitted; run 'make generate' and commit:"; \
		git status --porcelain -- $(GENERATED); exit 1; fi
	sqlc diff
	sqlc vet
	buf lint
	buf format -d --exit-code proto
	@for m in $(MODULES); do (cd $$m && go mod tidy -diff) || { echo "go.mod not tidy in $$m"; exit 1; }; done
	@$(MAKE) --no-print-directory breaking

.PHONY: breaking
breaking: protodeps ## buf breaking against main (skipped when there is no main branch yet)
	@if git rev-parse --verify -q main >/dev/null && git cat-file -e main:buf.yaml 2>/dev/null; then \
		tmp=$$(mktemp -d); trap 'git worktree remove --force "$$tmp" >/dev/null 2>&1; rm -rf "$$tmp"' EXIT; \
		git worktree add -q --detach "$$tmp" main; cp -r third_party "$$tmp/"; \
		buf breaking --against "$$tmp"; \
	else echo "breaking: no main branch with protos to compare against"; fi

.PHONY: build
build: ## Build bin/switchboard
	go build -ldflags "$(LDFLAGS)" -o bin/switchboard ./services/cmd/switchboard

.PHONY: vet
vet: ## go vet every module once, with every build tag (integration, e2e, chaos: no file excludes a tag, so their union compiles every file)
	go vet -tags integration,e2e,chaos work

.PHONY: lint
lint: ## golangci-lint every module once, with every build tag (config: .golangci.yaml)
	@deploy/local/tools.sh lint
	@# One pass over the union of the tiers. No file's constraint excludes a tag
	@# (no !integration), so each tag only adds files: `unused` can report no
	@# false positive here that a tier alone would not. What the union cannot see
	@# is an untagged helper used only by tagged tests; that is dead code in the
	@# unit build, not an error, and the compiler still checks each tier.
	golangci-lint run --build-tags integration,e2e,chaos $(addsuffix /...,$(MODULES))

.PHONY: tidy
tidy: ## go mod tidy every module
	@for m in $(MODULES); do (cd $$m && go mod tidy); done

.PHONY: db
db: ## Make sure Postgres is reachable; print its URLs
	@deploy/local/postgres.sh

# --- Test tiers -------------------------------------------------------------
# Each tier runs through deploy/local/gotest.sh: test binaries built once
# into a cache and run under test2json, into $(CI_DIR)/<tier>.json and .out,
# and on the terminal only the failures and one line per tier. Each
# -timeout is near the tier's measured time on the 2-core shared machine,
# with headroom: a hung test fails its package in minutes rather than after
# the old 15.
CI_DIR ?= .local/ci
export CI_DIR
GOTEST := deploy/local/gotest.sh
# Connection bounds (README, "Development"): go test runs TEST_P packages at
# once and TEST_PARALLEL parallel tests in each, and every test of the
# integration and e2e tiers holds Postgres connections (pkg/pgtest caps a
# test's pools). Fixed rather than go's default (the CPU count, for both):
# on a big machine that default multiplies into more connections than a
# shared server's max_connections=100 allows.
TEST_P ?= 2
TEST_PARALLEL ?= 2
# The tests that exec the built binary or drive a browser live under
# services/internal/e2e (build tag e2e; docs/architecture.md, "Test tiers").
# E2E_PKGS is relative to services/.
E2E_PKGS ?= ./internal/e2e/...
# The console's browser test (CONSOLE_SCREENSHOTS=dir saves its screenshots).
CONSOLE_TEST ?= TestConsoleEndToEnd
CONSOLE_PKG ?= ./internal/e2e/console/
# go test's -timeout is per package. Measured on the 2-core machine: the
# slowest integration package took 61 s idle and 240 s (services/node) with
# the load average at 26; the slowest e2e one 171 s loaded
# (services/cmd/switchboard); the chaos suite 81 s. Set about twice the
# loaded time.
UNIT_TIMEOUT ?= 5m
INTEGRATION_TIMEOUT ?= 8m
E2E_TIMEOUT ?= 8m
CHAOS_TIMEOUT ?= 5m
# Seconds of fuzzing in `make test`, split over every target (deploy/local/fuzz.sh):
# 1 s each, about the 20000 executions the old CI run made per target. Measured
# warm: the stage took 34 s at 19, 75 s at 60 (3 s each); the old 20000x run 39 s.
FUZZ_SECONDS ?= 19
# Test binaries link without DWARF (-w): DWARF was ~20% of each link (2.9 s
# -> 2.3 s for services/queue), and gotest.sh links a binary again whenever
# its package or a dependency changed. Stack traces and race reports do not
# use it; a debugger does: run go test yourself for that.
TEST_LDFLAGS ?= -w
# Where test binaries are built and kept between runs (deploy/local/gotest.sh).
GOTEST_BIN_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/switchboard-testbin
export GOTEST_BIN_CACHE
TESTBIN_CACHE := $(GOTEST_BIN_CACHE)/bin

.PHONY: unit
unit: ## The fast tier: every Go test that needs no Postgres, Redis or browser (-race)
	@$(GOTEST) unit . -race -count=1 '-ldflags=$(TEST_LDFLAGS)' -timeout $(UNIT_TIMEOUT) work

.PHONY: redis
redis: ## Make sure Redis answers on 127.0.0.1:6379 (started, or installed as root on Debian)
	@deploy/local/redis.sh

.PHONY: e2e-deps
e2e-deps: ## What the e2e tier needs: Chromium, promtool, the MCP Inspector CLI, playwright-core, Redis, grpcurl, jq, Debian's Python gRPC packages
	@deploy/local/chromium.sh >/dev/null
	@deploy/local/promtool.sh >/dev/null
	@deploy/local/mcp-inspector.sh >/dev/null # services/mcp TestInspectorCLI runs it (npm ci of a pinned lock)
	@deploy/local/playwright.sh >/dev/null # the console's browser test drives it (npm ci of a pinned lock)
	@deploy/local/redis.sh
	@deploy/local/tools.sh grpcurl # the README walk-through's test runs it
	@deploy/local/python-sdk.sh >/dev/null # the Python SDK's suite (services/internal/e2e/sdk): Debian's grpcio, protobuf, pytest
	@deploy/local/sdk-typescript.sh >/dev/null # the TypeScript SDK's suite: npm ci of its lock, once per machine
	@command -v jq >/dev/null || { echo "the README's blocks (services/internal/e2e/readme) need jq: apt-get install -y --no-install-recommends jq"; exit 1; }
	@command -v kubectl >/dev/null || { echo "the README's Kubernetes block (services/internal/e2e/readme) runs kubectl kustomize: install kubectl"; exit 1; }

.PHONY: integration
integration: redis ## The fast tests and the in-process ones (build tag integration) against Postgres and Redis
	@$(TESTPG); $(GOTEST) integration . -race -count=1 '-ldflags=$(TEST_LDFLAGS)' -tags integration -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout $(INTEGRATION_TIMEOUT) work

.PHONY: e2e
e2e: e2e-deps ## The end-to-end tier (build tag e2e, services/internal/e2e): the built binary, the console in Chromium, promtool, the MCP Inspector, grpcurl
	@mkdir -p $(CI_DIR)/bin $(TESTBIN_CACHE)
	@# One binary for every package of the tier (e2etest.BinaryEnv), built in
	@# the test-binary cache (go skips it when nothing changed) and hard-linked
	@# here under a lock, as gotest.sh does with the test binaries.
	@flock $(TESTBIN_CACHE)/.lock sh -c 'go build -o $(TESTBIN_CACHE)/switchboard ./services/cmd/switchboard && \
		{ ln -f $(TESTBIN_CACHE)/switchboard $(CI_DIR)/bin/switchboard 2>/dev/null || cp $(TESTBIN_CACHE)/switchboard $(CI_DIR)/bin/switchboard; }'
	@$(TESTPG); SWITCHBOARD_E2E_BINARY=$(abspath $(CI_DIR))/bin/switchboard $(GOTEST) e2e services -race -count=1 '-ldflags=$(TEST_LDFLAGS)' -tags e2e -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout $(E2E_TIMEOUT) $(E2E_PKGS)

.PHONY: test
test: ## The whole suite (what CI runs): every stage, even after one failed; ends with a table of stages, the slowest packages and tests, and what failed (logs in .local/ci). First run installs the pinned Go tools and, as root on Debian, postgresql, redis-server, chromium (--no-install-recommends), prometheus (promtool)
	@echo "make test: on first use it installs what it needs, then reuses it:"
	@echo "  - Go tools pinned in deploy/local/tools.sh (buf, protoc plugins, sqlc, golangci-lint, grpcurl) into $(GOBIN), from the Go module proxy;"
	@echo "  - as root on Debian, missing system packages with apt-get: postgresql, redis-server,"
	@echo "    chromium (--no-install-recommends) and prometheus (for promtool) when their tests need them;"
	@echo "  - the MCP Inspector CLI from npm (deploy/local/mcp-inspector.sh: npm ci of a committed lock, once per machine, into ~/.cache/switchboard-npm);"
	@echo "  - playwright-core from npm for the console's browser tests (deploy/local/playwright.sh: npm ci of a committed lock, once per machine, into ~/.cache/switchboard-npm; it drives Debian's chromium, no browser download);"
	@echo "  - nothing else (no containers). Stage times, full logs and go test -json per tier: $(CI_DIR)/."
	@rm -rf $(CI_DIR) && mkdir -p $(CI_DIR)
	@# deploy/local/ci.sh: the stages, two lanes at once, every stage even after
	@# one failed; it ends with deploy/local/ci-report.sh (the stage table, the
	@# slowest packages and tests, what failed) and exits non-zero if anything did.
	@deploy/local/ci.sh

.PHONY: fuzz-brief
fuzz-brief: ## Fuzz every go test -fuzz target for FUZZ_SECONDS in all (default 19: 1 s each), as make test does
	@FUZZ_SECONDS=$(FUZZ_SECONDS) deploy/local/fuzz.sh

.PHONY: fuzz
fuzz: ## Fuzz every go test -fuzz target for FUZZTIME each (default 20000x, a count; FUZZTIME=1m for longer)
	@deploy/local/fuzz.sh

.PHONY: run
run: build ## Start Postgres if needed, migrate, and run every service in one process; prints a dev admin token, then the URLs once serving
	@$(PG); \
	export SWITCHBOARD_LOG_FORMAT=$${SWITCHBOARD_LOG_FORMAT:-console}; \
	mkdir -p .local; \
	[[ -s .local/dev-admin-token ]] || bin/switchboard token generate > .local/dev-admin-token; \
	export SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN=$${SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN:-$$(cat .local/dev-admin-token)}; \
	export SWITCHBOARD_ADAPTER_ALLOW=$${SWITCHBOARD_ADAPTER_ALLOW-127.0.0.1:6379}; \
	bin/switchboard migrate up; \
	echo; \
	echo "  DB     $$DATABASE_URL"; \
	echo "  Token  $$SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN   (dev administrator, in .local/dev-admin-token: -H 'Authorization: Bearer …')"; \
	echo "  Allow  $${SWITCHBOARD_ADAPTER_ALLOW:-(nothing)}   (where pull adapters may connect: SWITCHBOARD_ADAPTER_ALLOW; the binary's default is nothing)"; \
	echo "  Starting; the gRPC and HTTP addresses follow once the node is serving."; \
	echo; \
	exec bin/switchboard serve --announce all

# --- Worker SDKs (sdk/) --------------------------------------------------------
# Kept out of generate/verify/the Go tiers' dependencies: Go-only work needs
# neither protoc nor npm. deploy/local/python-sdk.sh installs Debian's
# grpcio, protobuf, protoc and pytest when missing (as root) and prints the
# Python that sees them.
SDK_PY = $$(deploy/local/python-sdk.sh)
SDK_GENERATED := sdk/python/src/switchboard_worker/_proto sdk/typescript/src/gen

.PHONY: sdk-generate
sdk-generate: protodeps ## Regenerate the SDKs' protobuf code (Python: buf with Debian's protoc and grpc_python_plugin; TypeScript: buf with protoc-gen-es)
	@deploy/local/python-sdk.sh >/dev/null
	@sdk/python/gen.sh
	@cd "$$(deploy/local/sdk-typescript.sh)" && npm run -s generate

.PHONY: sdk-verify
sdk-verify: sdk-generate ## Regenerate the SDKs' code and fail on any difference
	@if [[ -n "$$(git status --porcelain -- $(SDK_GENERATED))" ]]; then \
		git status --porcelain -- $(SDK_GENERATED); \
		echo "sdk-verify: the SDKs' generated code is stale: run make sdk-generate and commit it"; exit 1; fi

.PHONY: sdk-test
sdk-test: build ## The SDKs' tests against a real node (bin/switchboard) and the test Postgres
	@py=$(SDK_PY); $(TESTPG); cd sdk/python && \
		SWITCHBOARD_BIN=$(CURDIR)/bin/switchboard PYTHONPATH=src PYTHONDONTWRITEBYTECODE=1 \
		$$py -m pytest -q -p no:cacheprovider tests
	@$(TESTPG); cd "$$(deploy/local/sdk-typescript.sh)" && npm run -s typecheck && \
		SWITCHBOARD_BIN=$(CURDIR)/bin/switchboard npm test

.PHONY: console-screenshots
console-screenshots: ## Run the console's browser specs against a real node and save their screenshots into docs/console (for docs/console.md)
	@deploy/local/chromium.sh >/dev/null
	@deploy/local/playwright.sh >/dev/null
	@$(TESTPG); cd services && CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console go test -count=1 -tags e2e -run '^$(CONSOLE_TEST)$$' $(CONSOLE_PKG)

.PHONY: clean
clean: ## Remove build output
	rm -rf bin

.PHONY: chaos
chaos: ## The chaos suite (build tag chaos): real nodes, SDK workers and a private Postgres under faults; CHAOS_REPORT=file keeps the report
	@$(GOTEST) chaos services -tags chaos -race=false -count=1 -timeout $(CHAOS_TIMEOUT) ./internal/chaos/...
