//go:build e2e

// Package console runs the console's Playwright specs
// (services/gateway/dashboard/e2e) in Debian's Chromium against a real
// `switchboard serve all` process; `make console-screenshots` runs it to
// refresh docs/console. It has no code of its own.
package console
