//go:build e2e

package dashboard_test

import (
	"testing"

	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// TestMain builds the binary for the cluster test (cluster_test.go); the
// browser tests (browser_test.go) serve the page in-process.
func TestMain(m *testing.M) { e2etest.Main(m) }
