//go:build e2e

package observability_test

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// promtool installs promtool when it is missing (deploy/local/promtool.sh,
// what the e2e tier's preparation runs) and returns its path. Missing after
// that is a failure, not a skip: the rules would otherwise ship unchecked.
func promtool(t *testing.T, root string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(t.Context(), filepath.Join(root, "deploy", "local", "promtool.sh"))
	cmd.Stdout, cmd.Stderr = &out, &errOut
	require.NoError(t, cmd.Run(), "deploy/local/promtool.sh could not provide promtool: %s", errOut.String())
	path := strings.TrimSpace(out.String())
	require.FileExists(t, path)
	return path
}

// The alert rules load, and their unit tests pass.
func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	root := e2etest.RepoRoot(t)
	bin := promtool(t, root)
	for _, args := range [][]string{{"check", "rules", "alerts.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = filepath.Join(root, "deploy", "observability")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %s:\n%s", strings.Join(args, " "), out)
		require.Contains(t, string(out), "SUCCESS")
	}
}
