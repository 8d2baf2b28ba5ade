//go:build e2e

package sdk_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// TestPythonSDK runs sdk/python's pytest suite (its harness starts nodes
// from this tier's binary, each on a database of its own on the tier's
// server). deploy/local/python-sdk.sh installs Debian's packages when they
// are missing, so the suite is never skipped; a skipped pytest test fails
// this one, as a skip is not a pass.
func TestPythonSDK(t *testing.T) {
	t.Parallel()
	root := e2etest.RepoRoot(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	python := installed(ctx, t, root, "python-sdk.sh")
	cmd := exec.CommandContext(ctx, python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "tests") //nolint:gosec // the Python python-sdk.sh printed
	cmd.Dir = filepath.Join(root, "sdk", "python")
	cmd.Env = suiteEnv("PYTHONPATH=src", "PYTHONDONTWRITEBYTECODE=1")
	report, err := cmd.CombinedOutput()
	require.NoError(t, err, "pytest:\n%s", report)
	summary := regexp.MustCompile(`(?m)^=*\s*(\d+) passed.*$`).FindSubmatch(report)
	require.NotNil(t, summary, "no pytest summary:\n%s", report)
	require.NotRegexp(t, `skipped|xfail|error`, string(summary[0]), "a skipped or erroring SDK test is not a pass:\n%s", report)
	t.Logf("sdk/python: %s", bytes.Trim(summary[0], "= "))
}
