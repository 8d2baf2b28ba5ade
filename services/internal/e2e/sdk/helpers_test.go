//go:build e2e

package sdk_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// installed runs deploy/local/<script>, which installs what an SDK's suite
// needs when it is missing (so the suite is never skipped), and returns the
// path it prints.
func installed(ctx context.Context, t *testing.T, root, script string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy", "local", script)) //nolint:gosec // our own script
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "deploy/local/%s: %s", script, stderr.String())
	return strings.TrimSpace(string(out))
}

// suiteEnv is the environment of an SDK's suite: its harness starts nodes
// from this tier's binary on the tier's Postgres.
func suiteEnv(extra ...string) []string {
	return append(append(os.Environ(), "SWITCHBOARD_BIN="+e2etest.Binary(), "SWITCHBOARD_TEST_PG="+pgtest.AdminURL()), extra...)
}
