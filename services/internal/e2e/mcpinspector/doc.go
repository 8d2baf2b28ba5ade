//go:build e2e

// Package mcpinspector drives a node's MCP server (services/mcp) with the
// official MCP Inspector CLI (npm, run by node) against a real `switchboard
// serve all` process. It has no code of its own.
package mcpinspector
