// Package archtest holds the tests that keep the code's architecture true
// to docs/architecture.md: every table has one owning package, the only one
// whose SQL writes it. It has no code of its own.
package archtest
