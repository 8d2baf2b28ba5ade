//go:build e2e

// Package dashboard drives the cluster page of the console
// (services/gateway/dashboard) in headless Chromium
// (services/internal/dashboardtest): against the real gateway in front of a
// fake registry the test steers (browser_test.go), and against a real
// three-node cluster of switchboard processes (cluster_test.go). It has no
// code of its own.
package dashboard
