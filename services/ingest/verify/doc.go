// Package verify authenticates inbound third-party webhooks before the ingest
// service trusts a single byte of them.
//
// Each supported provider scheme (Standard Webhooks/Svix, GitHub, Stripe,
// Slack, Shopify, a configurable generic HMAC, and bearer/basic credentials)
// is checked against the raw request body exactly as received, because every
// provider signs bytes, not a parsed representation: re-serialised JSON would
// never match. Every failure wraps ErrUnverified so the HTTP layer can answer a
// uniform 401; the wrapped reason is meant for server logs and deliberately
// never includes a secret or an expected signature.
package verify
