//go:build integration

package pgnotify_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/switchboard/switchboard/pkg/pgtest"
)

// The integration tests' databases are dropped in the background, all
// before the leak check (pgtest.Tests); main_test.go is the unit tier's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(pgtest.Tests(m)) }
