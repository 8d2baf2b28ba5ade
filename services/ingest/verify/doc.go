// Package verify authenticates inbound third-party webhooks before the ingest
// service trusts a single byte of them.
//
// Each supported provider scheme (Standard Webhooks/Svix, GitHub, Stripe,
// Slack, Shopify, Twilio, Zoom, Meta, X, Microsoft Graph, a configurable
// generic HMAC, and bearer/basic credentials) is checked against the raw
// request body exactly as received, because providers sign bytes, not a
// parsed representation: re-serialised JSON would never match. Twilio alone signs the requested URL and, for a
// form post, the decoded parameters; its verifier parses them from those
// same raw bytes. Every failure wraps ErrUnverified so the HTTP layer can
// answer a uniform 401; the wrapped reason is meant for server logs and
// deliberately never includes a secret or an expected signature.
//
// Some providers also check a URL before (and while) delivering to it: Slack's
// url_verification, Zoom's endpoint.url_validation, Meta's hub.challenge, X's
// CRC and Microsoft Graph's validationToken. Their verifiers implement
// Handshaker, which answers those requests (verified where the provider signs
// them) so the ingest edge never stores one.
package verify
