//go:build e2e

// Package e2etest is the end-to-end tier's one harness: it builds the
// switchboard binary once per test package (Main), starts nodes as real
// processes and reads their JSON logs (Start, StartNode), and waits for
// them to serve. Every file carries the e2e build tag, so only e2e tests
// (services/internal/e2e/...) can import it.
package e2etest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/switchboard/switchboard/pkg/auth"
	"github.com/switchboard/switchboard/pkg/pgtest"
)

// mainPackage is the binary's import path: built by path, not by folder, so
// a test package anywhere in the workspace builds the same command.
const mainPackage = "github.com/switchboard/switchboard/services/cmd/switchboard"

// binary is the switchboard binary Main built for this test package.
var binary string

// AdminToken is stored by every node BaseEnv configures
// (SWITCHBOARD_BOOTSTRAP_ADMIN_TOKEN), so tests can call admin routes.
var AdminToken = func() string {
	tok, _, err := auth.NewToken()
	if err != nil {
		panic(err)
	}
	return tok
}()

// BinaryEnv names a switchboard binary already built from this checkout
// (`make e2e` builds one for all the tier's packages: each package building
// its own linked the same binary eight times). Unset, Main builds one.
const BinaryEnv = "SWITCHBOARD_E2E_BINARY"

// Main is a test package's TestMain: it builds the binary once (unless
// BinaryEnv names one), runs the tests and removes what it built. A failed
// build fails the run (exit 2) instead of letting every test fail alike.
func Main(m *testing.M) {
	if prebuilt := os.Getenv(BinaryEnv); prebuilt != "" {
		if _, err := os.Stat(prebuilt); err != nil { //nolint:gosec // a path the developer (or make e2e) set
			fmt.Fprintf(os.Stderr, "%s: %v\n", BinaryEnv, err)
			os.Exit(2)
		}
		binary = prebuilt
		os.Exit(pgtest.Tests(m).Run())
	}
	dir, err := os.MkdirTemp("", "switchboard-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binary = filepath.Join(dir, "switchboard")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", binary, mainPackage) //nolint:gosec // a temporary path of ours
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build switchboard:", err)
		_ = os.RemoveAll(dir)
		os.Exit(2)
	}
	code := pgtest.Tests(m).Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// Binary is the path of the binary Main built.
func Binary() string {
	if binary == "" {
		panic("e2etest: the test package's TestMain must call e2etest.Main")
	}
	return binary
}

// RepoRoot is the checkout the test runs in (the folder holding go.work).
func RepoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "go.work not found above the test")
		dir = parent
	}
}
