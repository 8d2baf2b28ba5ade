//go:build e2e

package console_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/pgtest"
	"github.com/switchboard/switchboard/services/internal/dashboardtest"
	"github.com/switchboard/switchboard/services/internal/e2e/e2etest"
)

// consoleScreenshotsEnv names a directory; when set, the console specs save
// their screenshots there (`make console-screenshots` sets docs/console).
const consoleScreenshotsEnv = "CONSOLE_SCREENSHOTS"

// specTimeout bounds one spec file's run, browser start included.
const specTimeout = 4 * time.Minute

// The console, end to end in Debian's Chromium driven by playwright-core:
// every spec in services/gateway/dashboard/e2e runs against one real node
// (all services, one database) as its administrator, each in a fresh
// browser. A spec fails on a step that fails, on an uncaught exception in
// the page and on a Content-Security-Policy violation (run.mjs).
func TestConsoleEndToEnd(t *testing.T) {
	t.Parallel()
	root := e2etest.RepoRoot(t)
	e2e := filepath.Join(root, "services", "gateway", "dashboard", "e2e")
	specs, err := filepath.Glob(filepath.Join(e2e, "*.e2e.mjs"))
	require.NoError(t, err)
	names := make([]string, 0, len(specs))
	for _, s := range specs {
		names = append(names, filepath.Base(s))
	}
	slices.Sort(names)
	require.Subset(t, names, []string{"nodes.e2e.mjs"}, "the console's specs are missing")

	playwright := installPlaywright(t, root)
	chromium, err := dashboardtest.ChromiumPath()
	require.NoError(t, err, "run deploy/local/chromium.sh to install Chromium")
	shots := os.Getenv(consoleScreenshotsEnv)
	if shots == "" {
		shots = t.TempDir()
	} else {
		shots, err = filepath.Abs(shots)
		require.NoError(t, err)
	}

	db := pgtest.NewDatabase(t)
	n := e2etest.StartNode(t, db, "console-1")
	// One spec after another, not as parallel subtests: each drives a
	// browser, and two cores running several Chromiums at once measure the
	// machine, not the console.
	for _, name := range names {
		runSpec(t, e2e, name, []string{
			"PATH=" + os.Getenv("PATH"),
			"HOME=" + t.TempDir(),
			"PLAYWRIGHT_DIR=" + playwright,
			"CHROMIUM_BIN=" + chromium,
			"CONSOLE_BASE=http://" + n.HTTP + "/",
			"CONSOLE_TOKEN=" + e2etest.AdminToken,
			"SCREENSHOT_DIR=" + shots,
		})
	}
	pngs, err := filepath.Glob(filepath.Join(shots, "*.png"))
	require.NoError(t, err)
	require.NotEmpty(t, pngs, "the specs took no screenshot")
	for _, p := range pngs {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		require.Greater(t, fi.Size(), int64(1000), "%s is not a picture of a page", p)
	}
}

// runSpec runs one spec file with run.mjs and fails the test, with the
// spec's output, unless it passed.
func runSpec(t *testing.T, dir, name string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), specTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "run.mjs", name)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("node run.mjs %s:\n%s", name, out.String())
	require.NoError(t, err, "spec %s failed (its output is above)", name)
	require.Contains(t, out.String(), "PASS "+name)
}

// installPlaywright runs deploy/local/playwright.sh, which installs the
// pinned playwright-core (npm ci of a committed lock) and prints its
// directory.
func installPlaywright(t *testing.T, root string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "deploy", "local", "playwright.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "deploy/local/playwright.sh: %s", stderr.String())
	return strings.TrimSpace(string(out))
}
