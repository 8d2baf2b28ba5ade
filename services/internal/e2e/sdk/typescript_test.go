//go:build e2e

package sdk_test

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// TestTypeScriptSDK type-checks sdk/typescript and runs its node:test suite
// (its harness starts nodes from this tier's binary, each on a database of
// its own on the tier's server). deploy/local/sdk-typescript.sh installs the
// package's lock when missing, so the suite is never skipped; a skipped,
// cancelled or todo test fails this one.
func TestTypeScriptSDK(t *testing.T) {
	t.Parallel()
	root := e2etest.RepoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	dir := installed(ctx, t, root, "sdk-typescript.sh")
	typecheck := exec.CommandContext(ctx, "npm", "run", "-s", "typecheck")
	typecheck.Dir = dir
	report, err := typecheck.CombinedOutput()
	require.NoError(t, err, "npm run typecheck:\n%s", report)

	cmd := exec.CommandContext(ctx, "npm", "test")
	cmd.Dir = dir
	cmd.Env = suiteEnv()
	report, err = cmd.CombinedOutput()
	require.NoError(t, err, "npm test:\n%s", report)
	counts := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^# (tests|pass|fail|cancelled|skipped|todo) (\d+)$`).FindAllSubmatch(report, -1) {
		counts[string(m[1])], _ = strconv.Atoi(string(m[2]))
	}
	require.Positive(t, counts["pass"], "no passing test in:\n%s", report)
	require.Equal(t, counts["tests"], counts["pass"], "every test passes (none skipped, cancelled or todo):\n%s", report)
	t.Logf("sdk/typescript: %d tests passed", counts["pass"])
}
