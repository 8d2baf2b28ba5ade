//go:build e2e

// Package providers runs every provider page's "Try it" sample
// (docs/providers) as written, with bash, curl, jq and openssl, against a
// real `switchboard serve all` process. It has no code of its own.
package providers
