// Package split is the process-level test of the split topology: one
// `switchboard serve <service>` process per service on loopback, sharing
// one database, the gateway finding the others only through the registry
// (docs/routing.md). Its test carries the build tag integration; this file
// holds no code, so the package builds without it.
package split
