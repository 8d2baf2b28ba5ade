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

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

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
vet: ## go vet every module: the unit tier, then both tiers (build tag integration), then the chaos suite
	go vet work
	go vet -tags integration work
	cd services && go vet -tags chaos ./internal/chaos/...

.PHONY: lint
lint: ## golangci-lint every module (config: .golangci.yaml): the unit tier, then both tiers
	@deploy/local/tools.sh lint
	golangci-lint run $(addsuffix /...,$(MODULES))
	golangci-lint run --build-tags integration $(addsuffix /...,$(MODULES))
	cd services && golangci-lint run --build-tags chaos ./internal/chaos/...

.PHONY: tidy
tidy: ## go mod tidy every module
	@for m in $(MODULES); do (cd $$m && go mod tidy); done

.PHONY: db
db: ## Make sure Postgres is reachable; print its URLs
	@deploy/local/postgres.sh

.PHONY: unit
unit: ## The fast tier: every Go test that needs no Postgres, Redis or browser (-race)
	go test -race -count=1 -timeout 10m work

.PHONY: integration
integration: ## Both tiers: the fast tests and those (build tag integration) against Postgres, Redis, headless Chromium, promtool and the MCP Inspector CLI
	@deploy/local/chromium.sh >/dev/null
	@deploy/local/promtool.sh >/dev/null
	@deploy/local/mcp-inspector.sh >/dev/null # services/mcp TestInspectorCLI runs it (npm ci of a pinned lock)
	@deploy/local/playwright.sh >/dev/null # services/cmd/switchboard TestConsoleEndToEnd drives the console with it (npm ci of a pinned lock)
	@deploy/local/redis.sh
	@deploy/local/tools.sh grpcurl # the README walk-through's test (services/node TestReadmeWalkthrough) runs it
	@command -v jq >/dev/null || { echo "the README walk-through's test needs jq: apt-get install -y --no-install-recommends jq"; exit 1; }
	@$(PG); go test -race -count=1 -tags integration -timeout 15m work

.PHONY: test
test: ## The whole suite (what CI runs): verify, vet, lint, every Go test (-race, both tiers), chaos, fuzzing. First run installs the pinned Go tools and, as root on Debian, postgresql, redis-server, chromium (--no-install-recommends), prometheus (promtool): ~26 min measured on 2 cores with empty Go caches, plus the apt installs
	@echo "make test: on first use it installs what it needs, then reuses it:"
	@echo "  - Go tools pinned in deploy/local/tools.sh (buf, protoc plugins, sqlc, golangci-lint, grpcurl) into $(GOBIN), from the Go module proxy;"
	@echo "  - as root on Debian, missing system packages with apt-get: postgresql, redis-server,"
	@echo "    chromium (--no-install-recommends) and prometheus (for promtool) when their tests need them;"
	@echo "  - the MCP Inspector CLI from npm (deploy/local/mcp-inspector.sh: npm ci of a committed lock into .local/);"
	@echo "  - playwright-core from npm for the console's browser tests (deploy/local/playwright.sh: npm ci of a committed lock into .local/; it drives Debian's chromium, no browser download);"
	@echo "  - nothing else (no containers). A first run took 26 minutes on a 2-core machine with empty Go"
	@echo "    module, build and tool caches (the apt installs add a few minutes); later runs take 5-10 minutes."
	@$(PG); deploy/local/tools.sh buf protoc sqlc lint
	$(MAKE) --no-print-directory verify
	$(MAKE) --no-print-directory vet
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory integration
	$(MAKE) --no-print-directory chaos
	$(MAKE) --no-print-directory fuzz

.PHONY: fuzz
fuzz: ## Run every go test -fuzz target briefly (FUZZTIME=1m for longer)
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

.PHONY: console-screenshots
console-screenshots: ## Run the console's browser specs against a real node and save their screenshots into docs/console (for docs/console.md)
	@deploy/local/chromium.sh >/dev/null
	@deploy/local/playwright.sh >/dev/null
	@$(PG); cd services && CONSOLE_SCREENSHOTS=$(CURDIR)/docs/console go test -count=1 -tags integration -run TestConsoleEndToEnd ./cmd/switchboard/

.PHONY: clean
clean: ## Remove build output
	rm -rf bin

.PHONY: chaos
chaos: ## The chaos suite (build tag chaos): real nodes, SDK workers and a private Postgres under faults; CHAOS_REPORT=file keeps the report
	cd services && go test -tags chaos -race=false -count=1 -v -timeout 15m ./internal/chaos/...
