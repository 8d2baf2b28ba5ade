//go:build integration

package store

import (
	"os"
	"testing"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// The tests' databases are dropped in the background, all before exit.
func TestMain(m *testing.M) { os.Exit(pgtest.Tests(m).Run()) }
