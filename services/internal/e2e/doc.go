//go:build e2e

// Package e2e is the home of the end-to-end tier (build tag e2e): every test
// that builds or runs the switchboard binary, starts processes, or needs
// Chromium, npm/npx/node, python3, grpcurl, jq or promtool lives in a package below
// this folder, one per subject, and shares the harness in e2etest. Tests
// of in-process code against Postgres or Redis stay beside that code under
// the integration tag (docs/architecture.md, "Test tiers";
// services/internal/archtest enforces it). Run the tier with
//
//	cd services && go test -race -count=1 -tags e2e ./internal/e2e/...
//
// after deploy/local/{chromium,promtool,mcp-inspector,playwright,python-sdk,redis}.sh and
// `deploy/local/tools.sh grpcurl`. It has no code of its own.
package e2e
